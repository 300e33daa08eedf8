#!/usr/bin/env bash
# Many clients downloading the same objects through a throttling server:
# spool against the AWS CLI in its "standard" and "adaptive" retry modes.
# Runs tests/cli/throttling_test.py once per client (CLIENTS processes, each
# `cp -r` of OBJECTS objects of 64 KiB, through the fault proxy's throttle
# rule: RATE GETs per second per prefix, the rest 503 SlowDown, in front of
# the local Ceph RGW) and writes bench/results/throttling-<date>.md: clients
# that failed, time, goodput (the server's admitted rate / RATE), GETs sent /
# needed, throttled answers, Jain's fairness index over completion times.
#
#   bench/throttling.sh [build (build)] [clients (16)] [objects (200)] [rate (60)]
#
# Loader workers and checkpoint ranks at 16-64 processes: bench/throttling_loader_ranks.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath "${1:-$root/build}")
clients=${2:-16}
objects=${3:-200}
rate=${4:-60}
# shellcheck source=rgw_env.sh
source "$root/bench/rgw_env.sh" spool-test
export SPOOL_S3_TEST_BUCKET=spool-test
report=$local_dir/figures.jsonl
for client in spool aws-standard aws-adaptive; do
  python3 "$root/tests/cli/throttling_test.py" --spool "$build/cli/spool" --proxy "$root/tests/faults/fault_proxy.py" \
    --clients "$clients" --objects "$objects" --rate "$rate" --client "$client" --report "$report" 2>&1 |
    grep -v -e Warning -e _warn -e testPartExecutor -e tracemalloc || true
done
out=$root/bench/results/throttling-$(date -u +%Y-%m-%d).md
python3 - "$report" "$out" <<'PY'
import json, subprocess, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
r = rows[0]
lines = [
    f"# Throttling: {r['clients']} clients x {r['objects']} objects of 64 KiB, R = {r['rate']:g} GET/s per prefix",
    "",
    "`bench/throttling.sh`: each client a `cp -r` process of the same objects through the fault proxy's",
    "throttle rule (token bucket per prefix, the rest `503 SlowDown`) in front of the local Ceph RGW.",
    "Needed: the object GETs one unthrottled client sends, times the clients. Goodput: the server's",
    "admitted rate over R. Fairness: Jain's index over the clients' completion times.",
    "",
    "| client | clients failed | time (s) | paced job (s) | goodput (x R) | GETs sent / needed | throttled | Jain |",
    "|---|---|---|---|---|---|---|---|",
]
for r in rows:
    lines.append(f"| {r['client']} | {r['failed']} of {r['clients']} | {r['seconds']:.1f} | {r['paced_seconds']:.1f} | "
                 f"{r['goodput']:.2f} | {r['sent']} / {r['needed']} = {r['sent'] / r['needed']:.2f} | "
                 f"{r['throttled']} | {r['jain']:.3f} |")
aws = subprocess.run(["aws", "--version"], capture_output=True, text=True)
lines += ["", f"AWS CLI: `{(aws.stdout or aws.stderr).strip()}`.", ""]
open(sys.argv[2], "w").write("\n".join(lines))
print("\n".join(lines))
PY
echo "wrote $out"
