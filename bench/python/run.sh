#!/usr/bin/env bash
# Runs the Python package's benchmark (torch_bench.py) against the local Ceph
# RGW (started if needed, disk-backed OSD) and a local temp folder, with
# Debian's Python (torch, boto3) and the package of <build dir>.
#   bench/python/run.sh <build dir> [torch_bench flags: --records N --rounds N --state-mib N --json FILE]
set -euo pipefail
build=$(realpath "${1:?usage: run.sh <build dir> [flags]}"); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
export CEPH_OSD_BACKEND=${CEPH_OSD_BACKEND:-bluestore} CEPH_OSD_SIZE_GB=${CEPH_OSD_SIZE_GB:-40}
"$root/scripts/ceph-rgw-up" >/dev/null
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:47480}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-CEPHTESTACCESSKEY001}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-cephtestsecretkey0000000000000000000000001}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_EC2_METADATA_DISABLED=true
bucket=spool-python-bench
"$root/tests/loader/make_bucket.sh" "$bucket" >/dev/null
local_dir=$(mktemp -d)
trap 'rm -rf "$local_dir"' EXIT
export SPOOL_BENCH_LOCAL=$local_dir PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
/usr/bin/python3 "$root/bench/python/torch_bench.py" --build "$build" --s3 "s3://$bucket/run-$$" \
  --local "$local_dir" "$@"
