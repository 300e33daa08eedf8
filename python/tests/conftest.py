"""Fixtures of the spool Python tests.

Tests marked ``s3`` run against the Ceph RGW that CTest's ceph_rgw fixture
starts (its address and keys arrive in the AWS_* environment variables, the
bucket in SPOOL_S3_TEST_BUCKET); the rest need no server.
"""

from __future__ import annotations

import os
import uuid

import pytest


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "s3: needs the Ceph RGW of the ceph_rgw CTest fixture")


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
