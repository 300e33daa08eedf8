#!/usr/bin/env bash
# Runs the Python package's benchmark (torch_bench.py) against the local Ceph
# RGW (started if needed, disk-backed OSD) and a local temp folder, with
# the project's virtual environment (.venv/: torch, boto3) and the package of <build dir>.
#   bench/python/run.sh <build dir> [torch_bench flags: --records N --rounds N --epochs N --state-mib N --json FILE --only REGEX]
set -euo pipefail
build=$(realpath "${1:?usage: run.sh <build dir> [flags]}"); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-python-bench
export SPOOL_BENCH_LOCAL=$local_dir PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
"${SPOOL_VENV:-$root/.venv}/bin/python" "$root/bench/python/torch_bench.py" --build "$build" --s3 "s3://$bucket/run-$$" \
  --local "$local_dir" "$@"
