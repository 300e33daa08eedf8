#!/usr/bin/env bash
# Runs bench/python/peers_bench.py (spool beside s3torchconnector, MosaicML
# Streaming, WebDataset, boto3, s3fs and tf.data) against the local Ceph RGW
# (started if needed) with the project's venv and the package of <build dir>.
# The peers come from PyPI, pinned, installed by install_peers.sh into the build
# folder (never into the venv).
#   bench/python/peers.sh <build dir> [peers_bench flags: --cases ... --rounds N --full --json FILE --dry-run]
set -euo pipefail
build=$(realpath "${1:?usage: peers.sh <build dir> [flags]}"); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
python=${SPOOL_VENV:-$root/.venv}/bin/python
for arg in "$@"; do
  if [[ $arg == --dry-run ]]; then
    exec "$python" "$root/bench/python/peers_bench.py" "$@"
  fi
done
"$root/bench/python/install_peers.sh" "$build"
command -v aws >/dev/null || { echo "peers.sh: WebDataset streams with the AWS CLI (apt-get install awscli)" >&2; exit 1; }
# shellcheck source=../rgw_env.sh
source "$root/bench/rgw_env.sh" spool-peers-bench
export PYTHONPATH=$build/python:$build/python-peers${PYTHONPATH:+:$PYTHONPATH}
export S3_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_REGION=${AWS_REGION:-us-east-1} SPOOL_CLI=$build/cli/spool
"$python" "$root/bench/python/peers_bench.py" --s3 "s3://$bucket/peers-$$" --local "$local_dir" \
  --s3fs-site "$build/python-s3fs" "$@"
