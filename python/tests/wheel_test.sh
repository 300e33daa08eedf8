#!/usr/bin/env bash
# The package as a user installs it: `pip wheel` of the repository (pyproject.toml,
# scikit-build-core, with build isolation, so its build requirements come from
# the index as a user's would), then the wheel into a fresh virtual environment
# with torch 2.13.0 installed first. From a folder outside the repository:
# `import spool, spool.torch` works, the spool command is the wheel's, and a
# record file round-trips through the installed package.
#
#   wheel_test.sh <repository> <python> <scratch folder>
# <python> makes the fresh venv (the machine's python3, as a user would).
set -euo pipefail
repo=$1 python=$2 scratch=$3
rm -rf "$scratch"
mkdir -p "$scratch/dist"

# A build folder of its own: this is a second build of the library, with the
# wheel's options (no tests, benchmarks or samples).
"$python" -m pip wheel --quiet --no-deps --wheel-dir "$scratch/dist" \
  --config-settings=build-dir="$scratch/build" "$repo"
wheel=$(ls "$scratch"/dist/spool-*.whl)
echo "wheel_test: built $(basename "$wheel")"

# What the wheel holds: the extension, the modules, the type marker and the command.
contents=$("$python" -m zipfile -l "$wheel" | awk 'NR > 1 { print $1 }')
for want in 'spool/_spool\..*\.so' 'spool/__init__\.py' 'spool/torch\.py' 'spool/py\.typed' \
            'spool-[0-9.]*\.data/scripts/spool'; do
  grep -qx "$want" <<<"$contents" || { echo "wheel_test: the wheel has no $want; it holds:"; echo "$contents"; exit 1; }
done
# Nothing of the C++ install (headers, static libraries, CMake exports) goes in.
if grep -E '\.(h|a|cmake)$' <<<"$contents"; then echo "wheel_test: the wheel holds C++ install files"; exit 1; fi

"$python" -m venv "$scratch/venv"
venv=$scratch/venv
"$venv/bin/python" -m pip install --quiet torch==2.13.0
"$venv/bin/python" -m pip install --quiet "$wheel"

cd "$scratch"  # not the repository root, where spool/ is the C++ sources
"$venv/bin/python" - "$venv" <<'PY'
import os, shutil, subprocess, sys, tempfile

import spool
import spool.torch

venv = sys.argv[1]
assert spool.__file__.startswith(venv), f"spool imported from {spool.__file__}, not from {venv}"
command = shutil.which("spool", path=os.path.join(venv, "bin"))
assert command, "the wheel installed no spool command"
version = subprocess.run([command, "--version"], capture_output=True, text=True, check=True).stdout
assert spool.__version__ in version, (spool.__version__, version)
with tempfile.TemporaryDirectory() as folder:
    path = os.path.join(folder, "a.tfrecord")
    with spool.RecordWriter(path) as writer:
        for i in range(3):
            writer.write(b"record %d" % i)
    assert list(spool.RecordReader(path)) == [b"record 0", b"record 1", b"record 2"]
    count = subprocess.run([command, "records", "count", path], capture_output=True, text=True, check=True).stdout
    assert "3" in count, count
print(f"wheel_test: spool {spool.__version__} from {os.path.dirname(spool.__file__)}, command {command}")
PY
