#!/usr/bin/env bash
# What end-to-end verification costs: `spool cp` of a large file up to Ceph
# RGW and back, each round profiled with perf. For each direction it reports
# the median MiB/s and client CPU seconds, and the part of that CPU spent in
# CRC32C: computing it over every byte sent or received, and checking it
# against what the store keeps. An upload larger than one part also reads
# the file once before sending it, so that its CRC32C can go with the
# object. That read is timed separately (page-cached, with `dd`), because
# perf charges it to the kernel's copy routines together with the upload's
# own reads.
#
# spool has no switch to turn verification off, on purpose: so this measures
# what the checks cost inside a normal run, rather than comparing two runs.
#
#   bench/integrity/run.sh <build dir> [MiB (1024)] [rounds (3)]
set -euo pipefail
build=$(realpath "${1:?usage: run.sh <build dir> [MiB] [rounds]}")
mib=${2:-1024}
rounds=${3:-3}
root=$(cd "$(dirname "$0")/../.." && pwd)
command -v perf >/dev/null || { echo "run.sh: needs perf (Debian's linux-perf)" >&2; exit 2; }
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-verify-bench
spool=$build/cli/spool
file=$local_dir/source.bin
head -c $((mib << 20)) /dev/urandom >"$file"
url=s3://$bucket/verify-$$/source.bin

# One profiled run: prints "seconds user sys crc_percent".
profiled() {
  local data=$local_dir/perf.data times=$local_dir/times
  /usr/bin/time -f "%e %U %S" -o "$times" perf record -q -F 499 -o "$data" -- "$@" >/dev/null 2>&1
  local crc
  crc=$(perf report -i "$data" --stdio --sort symbol 2>/dev/null |
        awk '/crc32|Crc32c|crc32c/ { gsub("%", "", $1); sum += $1 } END { printf "%.2f", sum + 0 }')
  echo "$(cat "$times") $crc"
}

median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

for direction in upload download; do
  : >"$local_dir/$direction"
  for ((r = 0; r < rounds; r++)); do
    if [[ $direction == upload ]]; then
      profiled "$spool" cp "$file" "$url" >>"$local_dir/$direction"
    else
      profiled "$spool" cp "$url" "$local_dir/back.bin" >>"$local_dir/$direction"
      cmp -s "$file" "$local_dir/back.bin" || { echo "run.sh: the download differs" >&2; exit 1; }
      rm -f "$local_dir/back.bin"
    fi
  done
done
: >"$local_dir/prepass"
for ((r = 0; r < rounds; r++)); do
  /usr/bin/time -f "%e" -a -o "$local_dir/prepass" dd if="$file" of=/dev/null bs=16M status=none
done

echo "spool cp of $mib MiB to and from Ceph RGW (same machine, 2 shared cores), $rounds rounds, medians (min-max)"
echo
echo "| direction | MiB/s | client CPU s | CPU in CRC32C | CRC32C CPU s | pre-pass read s | verification share of wall time |"
echo "|---|---|---|---|---|---|---|"
prepass=$(median <"$local_dir/prepass")
for direction in upload download; do
  f=$local_dir/$direction
  secs=$(awk '{print $1}' "$f" | median)
  lo=$(awk '{print $1}' "$f" | sort -n | head -n1)
  hi=$(awk '{print $1}' "$f" | sort -n | tail -n1)
  cpu=$(awk '{print $2 + $3}' "$f" | median)
  share=$(awk '{print $4}' "$f" | median)
  awk -v d="$direction" -v mib="$mib" -v s="$secs" -v lo="$lo" -v hi="$hi" -v cpu="$cpu" -v share="$share" \
      -v pre="$prepass" 'BEGIN {
    crc = cpu * share / 100; p = (d == "upload") ? pre : 0
    printf "| %s | %.0f (%.0f-%.0f) | %.2f | %.1f%% | %.3f | %s | %.1f%% |\n", d, mib / s, mib / hi, mib / lo, cpu,
           share, crc, (d == "upload") ? sprintf("%.3f", p) : "-", 100 * (crc + p) / s }'
done
echo
echo "CRC32C CPU s = client CPU x the share of perf samples in CRC32C symbols (ISA-L's crc32_iscsi_*, spool's"
echo "crc32c::*). The last column assumes none of that work overlaps the transfer: an upper bound."
