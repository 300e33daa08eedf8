#!/usr/bin/env bash
# Installs the Python peers of bench/python/peers_bench.py from PyPI, pinned in
# requirements-peers.txt and requirements-s3fs.txt, with --no-deps into
# <build dir>/python-peers and <build dir>/python-s3fs (again only when a
# requirements file changed), never into the project's venv: nothing there
# changes version and torch stays 2.13.0 CPU. scripts/bench and peers.sh call it.
#   bench/python/install_peers.sh <build dir>
set -euo pipefail
build=$(realpath -m "${1:?usage: install_peers.sh <build dir>}")
here=$(cd "$(dirname "$0")" && pwd)
python=${SPOOL_VENV:-$here/../../.venv}/bin/python
for pair in peers:python-peers s3fs:python-s3fs; do
  requirements=$here/requirements-${pair%%:*}.txt folder=$build/${pair#*:}
  if ! cmp -s "$requirements" "$folder/.requirements"; then
    rm -rf "$folder"
    "$python" -m pip install -q --disable-pip-version-check --no-deps --target "$folder" -r "$requirements"
    cp "$requirements" "$folder/.requirements"
  fi
done
