"""The project's GCS server for the PyTorch integration tests: a module-wide
server (tests/gcs/server/fixture.py) and a fresh bucket per test, reached by
spool (and by processes the test spawns, which inherit the environment)
through STORAGE_EMULATOR_HOST without credentials.

Import both names into a test module to use them as fixtures.
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

import pytest

GCS_SERVER_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "gcs" / "server" / "fixture.py"


@pytest.fixture(scope="module")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The server, started and stopped by its fixture script; yields host:port."""
    folder = tmp_path_factory.mktemp("gcs-server")
    subprocess.run([sys.executable, str(GCS_SERVER_FIXTURE), "start", str(folder)], check=True,
                   capture_output=True, timeout=60)
    try:
        yield f"127.0.0.1:{int((folder / 'port').read_text())}"
    finally:
        subprocess.run([sys.executable, str(GCS_SERVER_FIXTURE), "stop", str(folder)], check=True,
                       capture_output=True, timeout=60)


@pytest.fixture
def gcs_prefix(gcs_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A gs:// prefix in a new bucket of the server, for one test."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server)
    bucket = f"spool-torch-{uuid.uuid4().hex[:12]}"
    request = urllib.request.Request(f"http://{gcs_server}/storage/v1/b?project=spool-test", method="POST",
                                     data=json.dumps({"name": bucket}).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    return f"gs://{bucket}/run"
