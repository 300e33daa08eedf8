#!/usr/bin/env bash
# Runs loader_bench against the local Ceph RGW (started if needed, with the
# disk-backed OSD the benchmark's volume needs) and a local temp folder.
#   bench/loader/run.sh <build dir> [loader_bench flags...]
set -euo pipefail
build=${1:?usage: run.sh <build dir> [flags]}; shift
root=$(cd "$(dirname "$0")/../.." && pwd)
export CEPH_OSD_BACKEND=${CEPH_OSD_BACKEND:-bluestore} CEPH_OSD_SIZE_GB=${CEPH_OSD_SIZE_GB:-40}
"$root/scripts/ceph-rgw-up" >/dev/null
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:47480}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-CEPHTESTACCESSKEY001}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-cephtestsecretkey0000000000000000000000001}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_EC2_METADATA_DISABLED=true
bucket=spool-loader-bench
"$root/tests/loader/make_bucket.sh" "$bucket" >/dev/null
local_dir=$(mktemp -d)
trap 'rm -rf "$local_dir"' EXIT
"$build/bench/loader/loader_bench" --s3 "s3://$bucket/run-$$" --local "$local_dir" "$@"
