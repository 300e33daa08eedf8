#!/usr/bin/env bash
# Two builds of spool side by side: `spool cp` of one large file up to the
# local Ceph RGW and back, builds alternating round by round (A B, B A, ...)
# so both see the same server state. Prints, per build and direction, the
# median MiB/s with min-max, client CPU seconds (user+sys) and page faults
# (GNU time's minor faults), for a before/after of a change.
#
#   bench/transfer_ab.sh <build A> <build B> [MiB (1024)] [rounds (3)]
set -euo pipefail
build_a=$(realpath "${1:?usage: transfer_ab.sh <build A> <build B> [MiB] [rounds]}")
build_b=$(realpath "${2:?usage: transfer_ab.sh <build A> <build B> [MiB] [rounds]}")
mib=${3:-1024}
rounds=${4:-3}
root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=rgw_env.sh
source "$root/bench/rgw_env.sh" spool-ab-bench
file=$local_dir/source.bin
head -c $((mib << 20)) /dev/urandom >"$file"
url=s3://$bucket/ab-$$/source.bin

# run <label> <spool> <direction>: appends "seconds cpu faults" to $local_dir/<label>-<direction>.
run() {
  local out=$local_dir/$1-$3 times=$local_dir/times
  if [[ $3 == upload ]]; then
    /usr/bin/time -f "%e %U %S %R" -o "$times" "$2" --quiet cp "$file" "$url"
  else
    /usr/bin/time -f "%e %U %S %R" -o "$times" "$2" --quiet cp "$url" "$local_dir/back.bin"
    cmp -s "$file" "$local_dir/back.bin" || { echo "transfer_ab.sh: the download differs" >&2; exit 1; }
    rm -f "$local_dir/back.bin"
  fi
  awk '{ print $1, $2 + $3, $4 }' "$times" >>"$out"
}

for direction in upload download; do
  for ((r = 0; r < rounds; r++)); do
    if ((r % 2 == 0)); then order=(A B); else order=(B A); fi
    for label in "${order[@]}"; do
      if [[ $label == A ]]; then run A "$build_a/cli/spool" "$direction"; else run B "$build_b/cli/spool" "$direction"; fi
    done
  done
done

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
echo "spool cp of $mib MiB to and from Ceph RGW (same machine, 2 shared cores), builds alternating, $rounds rounds,"
echo "medians (min-max). A = $build_a, B = $build_b"
echo
echo "| direction | build | MiB/s | client CPU s | page faults |"
echo "|---|---|---|---|---|"
for direction in upload download; do
  for label in A B; do
    f=$local_dir/$label-$direction
    secs=$(awk '{ print $1 }' "$f" | median)
    lo=$(awk '{ print $1 }' "$f" | sort -n | head -n1)
    hi=$(awk '{ print $1 }' "$f" | sort -n | tail -n1)
    cpu=$(awk '{ print $2 }' "$f" | median)
    faults=$(awk '{ print $3 }' "$f" | median)
    awk -v d="$direction" -v l="$label" -v mib="$mib" -v s="$secs" -v lo="$lo" -v hi="$hi" -v cpu="$cpu" -v f="$faults" \
      'BEGIN { printf "| %s | %s | %.0f (%.0f-%.0f) | %.2f | %d |\n", d, l, mib / s, mib / hi, mib / lo, cpu, f }'
  done
done
