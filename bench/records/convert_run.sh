#!/usr/bin/env bash
# `spool convert` end to end: a CSV table and an image folder converted to
# TFRecord shards uncompressed, GZIP at the default level (TensorFlow's
# bytes) and GZIP at the fast level (ISA-L), to local files and, with --s3,
# to the local Ceph RGW. Prints a Markdown table of medians over the rounds:
# wall seconds, input MB/s, client CPU seconds (user+sys), and the size of
# what was written.
#
#   bench/records/convert_run.sh <build dir> [rounds (3)] [--s3]
set -euo pipefail
build=$(realpath "${1:?usage: convert_run.sh <build dir> [rounds] [--s3]}")
rounds=${2:-3}
with_s3=0
[[ ${3:-} == --s3 ]] && with_s3=1
root=$(cd "$(dirname "$0")/../.." && pwd)
spool=$build/cli/spool
if ((with_s3)); then
  # shellcheck source=../rgw_env.sh
  source "$root/bench/rgw_env.sh" spool-convert-bench
  export AWS_ENDPOINT_URL_S3=$AWS_ENDPOINT_URL
else
  local_dir=$(mktemp -d)
  trap 'rm -rf "$local_dir"' EXIT
fi

# Inputs: a table of ids, labels, floats and text (compresses about 4:1 as
# Examples), and 2,000 "images" of 48 KiB of random bytes (already
# compressed data, as JPEGs are).
python3 - "$local_dir" <<'PY'
import os, random, sys
root = sys.argv[1]
rng = random.Random(1)
words = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()
with open(os.path.join(root, "table.csv"), "w") as f:
    f.write("id,label,score,text\n")
    for i in range(600_000):
        f.write(f"{i},{rng.randrange(10)},{rng.random():.6f},{' '.join(rng.choice(words) for _ in range(rng.randrange(5, 40)))}\n")
for c in range(10):
    folder = os.path.join(root, "images", f"class{c}")
    os.makedirs(folder)
    for i in range(200):
        with open(os.path.join(folder, f"{i}.jpg"), "wb") as f:
            f.write(rng.randbytes(48 << 10))
PY

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
input_bytes() { du -sb "$1" | cut -f1; }

echo "spool convert, $rounds rounds, medians (min-max wall); CPU = user+sys of the spool process"
echo
echo "| input | destination | compression | wall s | input MB/s | CPU s | written MB |"
echo "|---|---|---|---:|---:|---:|---:|"
destinations=(local)
((with_s3)) && destinations+=(s3)
for input in table.csv images/; do
  source_path=$local_dir/$input
  bytes=$(input_bytes "$source_path")
  for destination in "${destinations[@]}"; do
    for mode in none default fast; do
      flags=(--compression gzip --compression-level "$mode")
      [[ $mode == none ]] && flags=(--compression none)
      walls=() cpus=()
      for ((r = 0; r < rounds; r++)); do
        if [[ $destination == local ]]; then
          out=$local_dir/out-$mode-$r
          target=$out/train
        else
          out=s3://$bucket/convert-$$-$mode-$r
          target=$out/train
        fi
        /usr/bin/time -f "%e %U %S" -o "$local_dir/times" "$spool" --quiet convert "$source_path" "$target" \
          --shards 8 "${flags[@]}"
        read -r wall user sys <"$local_dir/times"
        walls+=("$wall")
        cpus+=("$(echo "$user + $sys" | bc)")
        if [[ $destination == local ]]; then
          written=$(input_bytes "$out")
          rm -rf "$out"
        else
          written=$("$spool" ls -l "$out/" | awk '{ s += $1 } END { print s + 0 }')
          "$spool" --quiet rm -r "$out/" >/dev/null
        fi
      done
      wall=$(printf '%s\n' "${walls[@]}" | median)
      lo=$(printf '%s\n' "${walls[@]}" | sort -n | head -1)
      hi=$(printf '%s\n' "${walls[@]}" | sort -n | tail -1)
      cpu=$(printf '%s\n' "${cpus[@]}" | median)
      label=$mode
      [[ $mode != none ]] && label="gzip $mode"
      printf '| %s | %s | %s | %s (%s-%s) | %.0f | %s | %.1f |\n' "$input" "$destination" "$label" "$wall" "$lo" "$hi" \
        "$(echo "$bytes / $wall / 1000000" | bc -l)" "$cpu" "$(echo "$written / 1000000" | bc -l)"
    done
  done
done
