#!/usr/bin/env bash
# Runs cache_bench.py against the local Ceph RGW (started if needed).
#   bench/loader/cache_run.sh <build dir> [cache_bench.py flags...]
set -euo pipefail
build=${1:?usage: cache_run.sh <build dir> [flags]}; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-loader-bench
cd "$local_dir"  # never the repository root: its spool/ folder would shadow the package
PYTHONPATH="$build/python" "$root/.venv/bin/python" "$root/bench/loader/cache_bench.py" --url "s3://$bucket/cache-$$" "$@"
