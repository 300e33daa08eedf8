#!/usr/bin/env bash
# Creates the loader tests' own bucket on the ceph_rgw fixture's server.
#   make_bucket.sh <bucket>
set -euo pipefail
bucket=$1
# PUT /bucket: 200 when created, 409 BucketAlreadyOwnedByYou when it exists.
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -X PUT \
  --aws-sigv4 "aws:amz:us-east-1:s3" --user "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY" \
  -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$AWS_ENDPOINT_URL/$bucket")
[[ $code == 200 || $code == 409 ]] || { echo "creating bucket $bucket answered HTTP $code" >&2; exit 1; }
echo "bucket $bucket ready at $AWS_ENDPOINT_URL"
