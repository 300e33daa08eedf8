#!/usr/bin/env bash
# Runs loader_bench against the local Ceph RGW (started if needed, with the
# disk-backed OSD the benchmark's volume needs) and a local temp folder.
#   bench/loader/run.sh <build dir> [loader_bench flags...]
set -euo pipefail
build=${1:?usage: run.sh <build dir> [flags]}; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-loader-bench
"$build/bench/loader/loader_bench" --s3 "s3://$bucket/run-$$" --local "$local_dir" "$@"
