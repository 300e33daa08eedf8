#!/usr/bin/env bash
# Runs cache_bench.py against the local Ceph RGW (started if needed), with
# MosaicML Streaming from bench/python/install_peers.sh (pinned, in the build
# folder, never in the venv).
#   bench/loader/cache_run.sh <build dir> [cache_bench.py flags...]
set -euo pipefail
build=$(realpath "${1:?usage: cache_run.sh <build dir> [flags]}"); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
"$root/bench/python/install_peers.sh" "$build"
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-loader-bench
export S3_ENDPOINT_URL=$AWS_ENDPOINT_URL  # MosaicML's S3 client; an IP endpoint makes boto3 use path-style URLs
cd "$local_dir"  # never the repository root: its spool/ folder would shadow the package
PYTHONPATH="$build/python:$build/python-peers" "$root/.venv/bin/python" "$root/bench/loader/cache_bench.py" \
  --url "s3://$bucket/cache-$$" --local "$local_dir" "$@"
