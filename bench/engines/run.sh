#!/usr/bin/env bash
# Runs engines_bench.py (spool on Spark and Ray vs Ray's write_tfrecords vs a
# tf.io.TFRecordWriter loop, gzip shards to S3) against the Ceph RGW already
# running on 127.0.0.1 (the ceph_rgw fixture's, or scripts/ceph-rgw-up's),
# with the project's virtual environment and the package of <build dir>;
# appends its JSON lines to bench/results/<time>-engines.jsonl.
#   bench/engines/run.sh <build dir> [--rows N] [--cores N] [--cases a,b]
set -euo pipefail
build=$(realpath "${1:?usage: run.sh <build dir> [flags]}"); shift
root=$(cd "$(dirname "$0")/../.." && pwd)
export AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL:-http://127.0.0.1:47480}
export AWS_ACCESS_KEY_ID=${AWS_ACCESS_KEY_ID:-CEPHTESTACCESSKEY001}
export AWS_SECRET_ACCESS_KEY=${AWS_SECRET_ACCESS_KEY:-cephtestsecretkey0000000000000000000000001}
export AWS_REGION=${AWS_REGION:-us-east-1} AWS_EC2_METADATA_DISABLED=true
# pyarrow's AWS SDK (Ray's write_tfrecords): no chunked checksums, which RGW refuses (HTTP 411)
export AWS_REQUEST_CHECKSUM_CALCULATION=WHEN_REQUIRED AWS_RESPONSE_CHECKSUM_VALIDATION=WHEN_REQUIRED
export SPOOL_BENCH_BUCKET=${SPOOL_BENCH_BUCKET:-spool-engines-bench}
"$root/tests/loader/make_bucket.sh" "$SPOOL_BENCH_BUCKET" >/dev/null
export PYTHONPATH=$build/python${PYTHONPATH:+:$PYTHONPATH}
out=$root/bench/results/$(date -u +%Y-%m-%dT%H%M%SZ)-engines.jsonl
cd /tmp  # never the repository root (its spool/ folder would shadow the package)
"${SPOOL_VENV:-$root/.venv}/bin/python" "$root/bench/engines/engines_bench.py" "$@" | tee "$out"
