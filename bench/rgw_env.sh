# Sourced by the bench runners (bench/*/run.sh) with a bucket name: starts
# the local Ceph RGW if needed (with the disk-backed OSD the benchmarks'
# volume needs), exports its AWS_* settings, makes the bucket, and sets
# $local_dir to a scratch folder removed on exit. Expects $root (the repo).
export CEPH_OSD_BACKEND=${CEPH_OSD_BACKEND:-bluestore} CEPH_OSD_SIZE_GB=${CEPH_OSD_SIZE_GB:-40}
"$root/scripts/ceph-rgw-up" >/dev/null
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:47480}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-CEPHTESTACCESSKEY001}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-cephtestsecretkey0000000000000000000000001}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_EC2_METADATA_DISABLED=true
bucket=${1:?rgw_env.sh: give the bucket name}
"$root/tests/loader/make_bucket.sh" "$bucket" >/dev/null
local_dir=$(mktemp -d)
trap 'rm -rf "$local_dir"' EXIT
