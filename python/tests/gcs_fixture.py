"""A fresh bucket per test on the project's GCS server (conftest.py's
``gcs_server``) for the PyTorch integration tests, reached by spool (and by
processes the test spawns, which inherit the environment) through
STORAGE_EMULATOR_HOST without credentials.

Import ``gcs_prefix`` into a test module to use it as a fixture.
"""

from __future__ import annotations

import pytest
from conftest import create_gcs_bucket


@pytest.fixture
def gcs_prefix(gcs_server: str, monkeypatch: pytest.MonkeyPatch) -> str:
    """A gs:// prefix in a new bucket of the server, for one test."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server)
    return f"gs://{create_gcs_bucket(gcs_server, 'spool-torch')}/run"
