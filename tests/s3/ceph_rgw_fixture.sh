#!/usr/bin/env bash
# The ceph_rgw CTest fixture: "up" starts the local Ceph RGW (or finds it
# running) and creates the test bucket; "down" stops it.
#   ceph_rgw_fixture.sh up|down <repo root> <bucket>
set -euo pipefail
action=$1 root=$2 bucket=$3
case $action in
  up)
    "$root/scripts/ceph-rgw-up" >/dev/null
    # PUT /bucket: 200 when created, 409 BucketAlreadyOwnedByYou when it exists.
    code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X PUT \
      --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$AWS_ENDPOINT_URL/$bucket")
    [[ $code == 200 || $code == 409 ]] || { echo "creating bucket $bucket answered HTTP $code" >&2; exit 1; }
    echo "ceph_rgw: $AWS_ENDPOINT_URL, bucket $bucket"
    ;;
  down)
    "$root/scripts/ceph-rgw-down"
    ;;
  *) echo "usage: $0 up|down <repo root> <bucket>" >&2; exit 2 ;;
esac
