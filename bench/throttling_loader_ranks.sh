#!/usr/bin/env bash
# Loader workers and checkpoint ranks behind a throttling server, at 16, 32
# and 64 processes: python/tests/test_throttling.py (its two tests, sized by
# the environment) RUNS times per size, each run's figures (the format of
# bench/throttling.sh, tests/faults/throttle_figures.py) collected into
# bench/results/throttling-scale-<UTC timestamp>-loader-ranks.md with the
# machine's load average. Loader: N/W ranks x W DataLoader workers (N worker
# processes); checkpoint: N ranks saving one step. Each loader rank holds
# its own torch (about 0.2 GiB resident): 64 workers as 16 ranks x 4 hold
# half the copies that 32 x 2 do (6.4 GiB in use at the peak of such a run).
#
#   bench/throttling_loader_ranks.sh [build (build)] [runs (2)] [sizes ("16 32 64")] [W (2)]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
runs=${2:-2}
sizes=${3:-16 32 64}
workers=${4:-2}
for n in $sizes; do
  if ((n % workers)); then
    echo "throttling_loader_ranks.sh: size $n is not a multiple of $workers workers per rank; give sizes that are" >&2
    exit 2
  fi
done
# shellcheck source=rgw_env.sh
source "$root/bench/rgw_env.sh" spool-test
export SPOOL_S3_TEST_BUCKET=spool-test PYTHONPATH=$build/python SPOOL_CLI=$build/cli/spool
report=$local_dir/figures.jsonl
python=$root/.venv/bin/python
for n in $sizes; do
  for run in $(seq "$runs"); do
    echo "== N=$n run $run: load average $(cut -d' ' -f1-3 /proc/loadavg)"
    (cd "$local_dir" && SPOOL_THROTTLE_LOADER_RANKS=$((n / workers)) SPOOL_THROTTLE_LOADER_WORKERS=$workers \
      SPOOL_THROTTLE_CKPT_RANKS=$n SPOOL_THROTTLE_REPORT=$report \
      "$python" -m pytest -q -s -p no:cacheprovider -m throttling "$root/python/tests/test_throttling.py") ||
      echo "N=$n run $run failed"
  done
done
out=$root/bench/results/throttling-scale-$(date -u +%Y-%m-%dT%H%MZ)-loader-ranks.md
python3 - "$report" "$out" "$(cat /proc/loadavg)" "$(nproc)" "$workers" <<'PY'
import json, sys
workers = int(sys.argv[5])
rows = [json.loads(line) for line in open(sys.argv[1])]
lines = [
    "# Throttling at scale: DataLoader workers and checkpoint ranks",
    "",
    "`bench/throttling_loader_ranks.sh`: python/tests/test_throttling.py through the fault proxy's throttle",
    f"rule (token bucket, the rest `503 SlowDown`) in front of the local Ceph RGW. Loader: N/{workers} ranks x",
    f"{workers} workers, 48 shards per worker, R = 60 GET/s on the dataset's prefix, needed = the GETs of the",
    "same job unthrottled. Checkpoint: N ranks x 64 files, R = 60 PUT/s for all of the step's PUTs together (one",
    "bucket, as one S3 partition), needed = the PUTs admitted. Goodput: admitted rate / R (whole run: first",
    "to last admitted request; steady: from the first admitted request until the first client ended).",
    "Jain: over the clients' completion times (loader: the ranks).",
    "Targets (issue #36): goodput >= 0.9, sent/needed <= 1.3, Jain >= 0.9.",
    "",
    "| case | N | failed | goodput whole | goodput steady | sent / needed | throttled | Jain | wall (s) |",
    "|---|---|---|---|---|---|---|---|---|",
]
for r in rows:
    ratio = r["sent"] / r["needed"] if r["needed"] else 0.0
    lines.append(f"| {r['label']} | {r['clients']} | {r['failed']} | {r['goodput']:.2f} | {r['steady_goodput']:.2f} | "
                 f"{r['sent']} / {r['needed']} = {ratio:.2f} | {r['throttled']} | {r['jain']:.3f} | {r['seconds']:.1f} |")
lines += ["", f"Load average at the end: {sys.argv[3]} ({sys.argv[4]} cores).", ""]
open(sys.argv[2], "w").write("\n".join(lines))
print("\n".join(lines))
PY
echo "wrote $out"
