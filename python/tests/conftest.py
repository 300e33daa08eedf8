"""Fixtures of the spool Python tests.

Tests marked ``s3`` run against the Ceph RGW that CTest's ceph_rgw fixture
starts (its address and keys arrive in the AWS_* environment variables, the
bucket in SPOOL_S3_TEST_BUCKET). Tests that use ``gcs_server`` get the
project's GCS server, started once for the run on a free loopback port; the
rest need no server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
import uuid
from pathlib import Path
from typing import Iterator

import pytest

GCS_SERVER_FIXTURE = Path(__file__).resolve().parents[2] / "tests" / "gcs" / "server" / "fixture.py"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "s3: needs the Ceph RGW of the ceph_rgw CTest fixture")
    config.addinivalue_line("markers", "engines: runs Spark or Ray (ctest python_engines_test)")
    config.addinivalue_line("markers", "throttling: many client processes behind a throttling server "
                            "(ctest python_throttling_test, which prints their figures)")


@pytest.fixture
def s3_prefix() -> str:
    """A fresh s3:// prefix of the test bucket, for one test."""
    bucket = os.environ.get("SPOOL_S3_TEST_BUCKET")
    if not bucket:
        pytest.fail("SPOOL_S3_TEST_BUCKET is not set: run the s3 tests through ctest -R python_s3_test")
    return f"s3://{bucket}/python-tests/{uuid.uuid4().hex}"


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def root(tmp_path, request) -> str:
    """A fresh folder for one test: local, and (marked s3) a prefix on Ceph RGW."""
    if request.param == "s3":
        return request.getfixturevalue("s3_prefix")
    return str(tmp_path / "store")


@pytest.fixture(scope="session")
def gcs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The project's GCS server (started and stopped by its fixture script); yields host:port."""
    folder = tmp_path_factory.mktemp("gcs-server")
    subprocess.run([sys.executable, str(GCS_SERVER_FIXTURE), "start", str(folder)], check=True,
                   capture_output=True, timeout=60)
    try:
        yield f"127.0.0.1:{int((folder / 'port').read_text())}"
    finally:
        subprocess.run([sys.executable, str(GCS_SERVER_FIXTURE), "stop", str(folder)], check=True,
                       capture_output=True, timeout=60)


def create_gcs_bucket(host: str, prefix: str) -> str:
    """Creates a bucket with a fresh name on the GCS server at `host`; returns the name."""
    bucket = f"{prefix}-{uuid.uuid4().hex[:12]}"
    request = urllib.request.Request(f"http://{host}/storage/v1/b?project=spool-test", method="POST",
                                     data=json.dumps({"name": bucket}).encode(),
                                     headers={"Content-Type": "application/json"})
    urllib.request.urlopen(request, timeout=30).close()
    return bucket
