"""spool and the services' own Python clients read each other's objects.

People mix tools: a dataset uploaded with boto3 is trained on with spool, a
checkpoint spool saved is inspected with google-cloud-storage. These tests
check, on real local servers, that each side reads exactly what the other
wrote: the bytes, the size, the checksums and the metadata.

- S3, with boto3: Ceph RGW 16 (marked ``s3``: its address and keys come from
  the AWS_* environment, the bucket from SPOOL_S3_TEST_BUCKET, as for the
  other ``s3`` tests) and moto's S3 server, started here.
- GCS, with google-cloud-storage: the project's own GCS server
  (tests/gcs/server), started here; both clients find it through
  STORAGE_EMULATOR_HOST and the Google client through ``api_endpoint``, as
  users point them at an emulator.

spool reads its endpoints and credentials from the environment when a store
is first opened; every test sets the variables of its own server, so a run
of the whole module talks to each server with the right settings.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional

import pytest

boto3 = pytest.importorskip("boto3")
pytest.importorskip("moto")
google_crc32c = pytest.importorskip("google_crc32c")
gcs_storage = pytest.importorskip("google.cloud.storage")
from boto3.s3.transfer import TransferConfig  # noqa: E402
from botocore.config import Config as BotoConfig  # noqa: E402
from google.auth.credentials import AnonymousCredentials  # noqa: E402

import spool  # noqa: E402


#: spool's S3 part size and GCS resumable threshold (docs/s3.md, docs/gcs.md):
#: an object up to this size goes up in one request, a larger one in parts
#: (S3 multipart) or chunks (a GCS resumable session). Neither is an option
#: of the Python package, so the objects that must take the second path are
#: just above it.
SPOOL_PART_SIZE = 8 << 20
#: A little over one part, and not a multiple of anything: two parts, the
#: second short.
JUST_OVER_ONE_PART = SPOOL_PART_SIZE + 4097

#: Where spool's S3 uploader keeps the object's CRC32C (base64, big-endian):
#: user metadata ``x-amz-meta-spool-crc32c``, which boto3 shows without the
#: prefix.
SPOOL_CRC32C_METADATA = "spool-crc32c"
#: What spool sends as Content-Type when it is given none (S3: the value S3
#: itself assumes; GCS: the JSON API's usual default).
SPOOL_S3_CONTENT_TYPE = "binary/octet-stream"
SPOOL_GCS_CONTENT_TYPE = "application/octet-stream"

#: A key with what URL encoders and signers get wrong: spaces, non-ASCII
#: letters (2 and 3 bytes in UTF-8), '+' (a space in query strings, not in
#: paths), a literal '%25' (spool URLs are not percent-decoded), and
#: sub-delimiters.
AWKWARD_KEY = "names/with space ü ✓ +plus%25&=~(1).txt"


# --- checksums --------------------------------------------------------------


def crc32c_of(data: bytes) -> int:
    """The CRC32C of ``data`` (Castagnoli), computed by Google's own library."""
    return google_crc32c.value(data)


def crc32c_base64(crc: int) -> str:
    """A CRC32C as S3 and GCS write it: base64 of its 4 big-endian bytes."""
    return base64.b64encode(crc.to_bytes(4, "big")).decode()


def md5_base64(data: bytes) -> str:
    """The MD5 as GCS reports it in ``md5Hash``."""
    return base64.b64encode(hashlib.md5(data).digest()).decode()


# --- what each test writes --------------------------------------------------


@dataclass(frozen=True)
class SpoolUpload:
    """An object spool writes, and how: streamed through ``spool.open(url, "wb")``
    or uploaded from a local file with ``spool.copy`` (as ``spool cp``)."""

    key: str
    size: int
    from_file: bool = False

    @property
    def in_parts(self) -> bool:
        """Whether spool sends it in parts (S3) or chunks (GCS)."""
        return self.size > SPOOL_PART_SIZE

    @property
    def parts(self) -> int:
        """How many S3 parts spool cuts it into (1: a single PUT)."""
        return max(1, -(-self.size // SPOOL_PART_SIZE))


#: spool's whole-file transfers (``spool.copy``, ``spool cp``) read files in
#: pieces of TransferOptions::part_size, 16 MiB, and compute a file's CRC32C
#: before the upload only when it is larger than that piece.
SPOOL_TRANSFER_PIECE = 16 << 20


def spool_uploads(s3: bool) -> List[Any]:
    """The objects spool writes in the tests, for S3 or for GCS."""
    return [
        pytest.param(SpoolUpload("small.bin", 1000), id="single-request"),
        pytest.param(SpoolUpload("empty.bin", 0), id="empty"),
        pytest.param(SpoolUpload("streamed-in-parts.bin", JUST_OVER_ONE_PART), id="streamed-in-parts"),
        # A file between the S3 part size (8 MiB) and the transfer piece
        # (16 MiB): a multipart upload, which once went up with no CRC32C.
        pytest.param(SpoolUpload("file-in-parts.bin", JUST_OVER_ONE_PART, from_file=True), id="file-in-parts"),
        pytest.param(SpoolUpload("large-file.bin", SPOOL_TRANSFER_PIECE + 4097, from_file=True),
                     id="file-over-one-piece"),
        pytest.param(SpoolUpload(AWKWARD_KEY, 777), id="awkward-key"),
    ]


def spool_write(url: str, data: bytes, from_file: bool, scratch: Path) -> spool.ObjectInfo:
    """Writes ``data`` to ``url`` with spool and returns what spool says it committed."""
    if from_file:
        local = scratch / "upload.bin"
        local.write_bytes(data)
        return spool.copy(local, url)
    with spool.open(url, "wb") as f:
        # In pieces, as a training script writes, so the part buffering is exercised.
        for start in range(0, len(data), 1 << 20):
            f.write(data[start:start + (1 << 20)])
    assert f.info is not None
    return f.info


def spool_read_all(url: str) -> bytes:
    """The whole object through ``spool.open`` (one whole-object read: verified)."""
    with spool.open(url, "rb") as f:
        return f.read()


def check_spool_refuses(url: str, scratch: Path) -> None:
    """A whole read of ``url`` and a copy of it to a file both fail with
    DataLoss naming the CRC32C, and the copy leaves no file."""
    with pytest.raises(spool.DataLossError, match="CRC32C"):
        spool_read_all(url)
    target = scratch / "not-written.bin"
    with pytest.raises(spool.DataLossError):
        spool.copy(url, target)
    assert not target.exists()


def check_spool_reads(url: str, data: bytes, expected_crc32c: Optional[int], scratch: Path) -> None:
    """spool reads ``url`` as ``data``: whole, in a range, by stat and by a copy to disk."""
    assert spool_read_all(url) == data
    info = spool.stat(url)
    assert info.size == len(data)
    assert info.crc32c == expected_crc32c
    if data:
        # A ranged read in the middle (a reader seeking to a record).
        with spool.open(url, "rb") as f:
            f.seek(len(data) // 2)
            assert f.read(100) == data[len(data) // 2:len(data) // 2 + 100]
    downloaded = scratch / "download.bin"
    spool.copy(url, downloaded)
    assert downloaded.read_bytes() == data


# --- S3: Ceph RGW and moto --------------------------------------------------


@dataclass
class S3Server:
    """One S3 endpoint, its keys and a bucket the tests may write to."""

    name: str
    endpoint: str
    access_key: str
    secret_key: str
    region: str
    bucket: str

    def spool_environment(self) -> Dict[str, str]:
        """The variables that point spool (as any AWS tool) at this server."""
        return {
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_ACCESS_KEY_ID": self.access_key,
            "AWS_SECRET_ACCESS_KEY": self.secret_key,
            "AWS_REGION": self.region,
            "AWS_EC2_METADATA_DISABLED": "true",
            "AWS_CONFIG_FILE": "/dev/null",
            "AWS_SHARED_CREDENTIALS_FILE": "/dev/null",
        }

    def boto3_client(self) -> Any:
        """boto3's S3 client for this server, with boto3's default checksum behaviour."""
        return boto3.session.Session().client(
            "s3", endpoint_url=self.endpoint, aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key, region_name=self.region,
            config=BotoConfig(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))


@dataclass
class S3Peer:
    """A fresh prefix on one S3 server, with a boto3 client for it."""

    server: S3Server
    client: Any
    prefix: str

    @property
    def bucket(self) -> str:
        return self.server.bucket

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}"

    def url(self, name: str) -> str:
        return f"s3://{self.bucket}/{self.key(name)}"


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_answering(url: str, process: subprocess.Popen, log: Path, seconds: float = 30) -> None:
    """Waits until ``url`` gives any HTTP answer; fails if the process exits first."""
    deadline = time.monotonic() + seconds
    while True:
        if process.poll() is not None:
            pytest.fail(f"the server exited with {process.returncode}: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=2).read()
            return
        except urllib.error.HTTPError:
            return  # an error status is an answer
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail(f"nothing answered at {url} within {seconds} s: {log.read_text()[-2000:]}")
            time.sleep(0.1)


def stop_process(process: subprocess.Popen) -> None:
    """Stops one process this module started, and only that one."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@pytest.fixture(scope="session")
def moto_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Server]:
    """moto's S3 server on a free 127.0.0.1 port, for the whole run, with one bucket."""
    log = tmp_path_factory.mktemp("moto") / "moto.log"
    port = free_port()
    with log.open("w") as output:
        process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                                   stdout=output, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    try:
        endpoint = f"http://127.0.0.1:{port}"
        wait_until_answering(f"{endpoint}/moto-api/", process, log)
        server = S3Server("moto", endpoint, "moto-access-key", "moto-secret-key", "us-east-1",
                          f"spool-peers-{uuid.uuid4().hex[:12]}")
        server.boto3_client().create_bucket(Bucket=server.bucket)
        yield server
    finally:
        stop_process(process)


@pytest.fixture(scope="session")
def rgw_server() -> S3Server:
    """The Ceph RGW of the ``s3`` tests, as its environment describes it."""
    names = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "SPOOL_S3_TEST_BUCKET")
    missing = [name for name in names if not os.environ.get(name)]
    if missing:
        pytest.fail(f"{', '.join(missing)} not set: run the s3 tests through ctest -R python_s3_test "
                    "or with the variables tests/s3/ceph_rgw_fixture.sh writes")
    return S3Server("rgw", os.environ["AWS_ENDPOINT_URL"], os.environ["AWS_ACCESS_KEY_ID"],
                    os.environ["AWS_SECRET_ACCESS_KEY"], os.environ.get("AWS_REGION", "us-east-1"),
                    os.environ["SPOOL_S3_TEST_BUCKET"])


def use_s3_server(server: S3Server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Points spool at ``server`` for one test; variables that would override it are removed."""
    for name in ("AWS_ENDPOINT_URL_S3", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
                 "AWS_CA_BUNDLE", "AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN",
                 "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI"):
        monkeypatch.delenv(name, raising=False)
    for name, value in server.spool_environment().items():
        monkeypatch.setenv(name, value)


def delete_prefix(client: Any, bucket: str, prefix: str) -> None:
    """Removes every object and unfinished multipart upload under ``prefix`` (and only there)."""
    assert prefix.startswith("python-tests/peers/") and len(prefix) > len("python-tests/peers/")
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix + "/"):
        for entry in page.get("Contents", []):
            client.delete_object(Bucket=bucket, Key=entry["Key"])
    uploads = client.list_multipart_uploads(Bucket=bucket, Prefix=prefix + "/").get("Uploads", [])
    for upload in uploads:
        client.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])


@pytest.fixture(params=[pytest.param("rgw", marks=pytest.mark.s3), "moto"])
def s3_peer(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Peer]:
    """A fresh prefix on Ceph RGW (marked s3) and on moto, with spool pointed at the server."""
    server: S3Server = request.getfixturevalue(f"{request.param}_server")
    use_s3_server(server, monkeypatch)
    peer = S3Peer(server, server.boto3_client(), f"python-tests/peers/{uuid.uuid4().hex}")
    yield peer
    # The RGW is shared with whoever else runs its tests: remove only this prefix.
    delete_prefix(peer.client, peer.bucket, peer.prefix)


@pytest.fixture
def moto_peer(moto_server: S3Server, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Peer]:
    """A fresh prefix on moto only, for what only moto does (flexible checksums)."""
    use_s3_server(moto_server, monkeypatch)
    peer = S3Peer(moto_server, moto_server.boto3_client(), f"python-tests/peers/{uuid.uuid4().hex}")
    yield peer
    delete_prefix(peer.client, peer.bucket, peer.prefix)


def checksum_headers(response: Dict[str, Any]) -> Dict[str, str]:
    """The ``x-amz-checksum-*`` headers of a boto3 response, as the server sent them."""
    headers = response["ResponseMetadata"]["HTTPHeaders"]
    return {name: value for name, value in headers.items() if name.startswith("x-amz-checksum-")}


@pytest.mark.parametrize("upload", spool_uploads(s3=True))
def test_boto3_reads_what_spool_wrote(s3_peer: S3Peer, upload: SpoolUpload, tmp_path: Path) -> None:
    """Every kind of object spool writes to S3 is the same object to boto3:
    bytes, size, ETag (an MD5 for one PUT, a multipart ETag with spool's part
    count above the part size), content type, and spool's CRC32C in user
    metadata where spool knows it when the upload starts."""
    data = os.urandom(upload.size)
    crc = crc32c_of(data)
    committed = spool_write(s3_peer.url(upload.key), data, upload.from_file, tmp_path)
    assert committed.size == len(data) and committed.key == s3_peer.key(upload.key)

    key = s3_peer.key(upload.key)
    got = s3_peer.client.get_object(Bucket=s3_peer.bucket, Key=key, ChecksumMode="ENABLED")
    assert got["Body"].read() == data
    assert got["ContentLength"] == len(data)
    assert got["ContentType"] == SPOOL_S3_CONTENT_TYPE
    head = s3_peer.client.head_object(Bucket=s3_peer.bucket, Key=key, ChecksumMode="ENABLED")
    assert head["ContentLength"] == len(data)
    assert head["ETag"] == got["ETag"]
    if upload.in_parts:
        assert got["ETag"].endswith(f'-{upload.parts}"'), got["ETag"]
    else:
        assert got["ETag"] == f'"{hashlib.md5(data).hexdigest()}"'

    # A stream's CRC32C is known only at its end, too late for the metadata of
    # a multipart upload (docs/integrity.md); everything else carries it.
    streamed_in_parts = upload.in_parts and not upload.from_file
    expected_metadata = {} if streamed_in_parts else {SPOOL_CRC32C_METADATA: crc32c_base64(crc)}
    assert got["Metadata"] == expected_metadata
    assert head["Metadata"] == expected_metadata

    # A server that keeps a flexible checksum of its own must keep the right one.
    for response in (got, head):
        stored = checksum_headers(response).get("x-amz-checksum-crc32c")
        assert stored in (None, crc32c_base64(crc)), (s3_peer.server.name, stored)

    # boto3 lists the key exactly as spool named it (encoding of the awkward key).
    listed = s3_peer.client.list_objects_v2(Bucket=s3_peer.bucket, Prefix=s3_peer.prefix + "/")
    assert [(e["Key"], e["Size"]) for e in listed["Contents"]] == [(key, len(data))]

    # And spool's own view agrees.
    check_spool_reads(s3_peer.url(upload.key), data, None if streamed_in_parts else crc, tmp_path)


@dataclass(frozen=True)
class Boto3Upload:
    """An object boto3 writes: with ``put_object``, or ``upload_fileobj`` in parts."""

    key: str
    size: int
    multipart: bool = False


#: boto3's multipart settings for the test: S3's 5 MiB minimum part, so that
#: an 11 MiB object goes up in 3 parts without moving much data.
BOTO3_TRANSFER = TransferConfig(multipart_threshold=5 << 20, multipart_chunksize=5 << 20)

BOTO3_UPLOADS = [
    pytest.param(Boto3Upload("put.txt", 1234), id="put_object"),
    pytest.param(Boto3Upload("empty.bin", 0), id="empty"),
    pytest.param(Boto3Upload("multipart.bin", (11 << 20) + 123, multipart=True), id="upload_fileobj-multipart"),
    pytest.param(Boto3Upload(AWKWARD_KEY, 321), id="awkward-key"),
]


@pytest.mark.parametrize("upload", BOTO3_UPLOADS)
def test_spool_reads_what_boto3_wrote(s3_peer: S3Peer, upload: Boto3Upload, tmp_path: Path) -> None:
    """Objects boto3 wrote (with its default checksums: CRC32 where the server
    takes flexible checksums) read back through spool byte for byte, with the
    right size in stat and in a listing. boto3 stores no CRC32C, so spool has
    none to check them against (docs/integrity.md, "Not checked yet")."""
    data = os.urandom(upload.size)
    key = s3_peer.key(upload.key)
    if upload.multipart:
        s3_peer.client.upload_fileobj(io.BytesIO(data), s3_peer.bucket, key, Config=BOTO3_TRANSFER)
        head = s3_peer.client.head_object(Bucket=s3_peer.bucket, Key=key)
        assert head["ETag"].endswith('-3"'), head["ETag"]  # it really went up in parts
    else:
        s3_peer.client.put_object(Bucket=s3_peer.bucket, Key=key, Body=data, ContentType="text/plain",
                                  Metadata={"origin": "boto3"})

    check_spool_reads(s3_peer.url(upload.key), data, None, tmp_path)
    listed = spool.ls(f"s3://{s3_peer.bucket}/{s3_peer.prefix}/", recursive=True)
    assert [(entry.key, entry.size) for entry in listed] == [(key, len(data))]


def test_spool_checks_its_crc32c_on_objects_others_wrote(s3_peer: S3Peer, tmp_path: Path) -> None:
    """An object another tool uploaded with spool's metadata key is verified
    like spool's own: the right CRC32C is used, and a wrong one makes a whole
    read and a download fail with DataLoss instead of returning the bytes."""
    data = os.urandom(4096)
    s3_peer.client.put_object(Bucket=s3_peer.bucket, Key=s3_peer.key("right.bin"), Body=data,
                              Metadata={SPOOL_CRC32C_METADATA: crc32c_base64(crc32c_of(data))})
    check_spool_reads(s3_peer.url("right.bin"), data, crc32c_of(data), tmp_path)

    wrong = crc32c_of(data + b"!")
    s3_peer.client.put_object(Bucket=s3_peer.bucket, Key=s3_peer.key("wrong.bin"), Body=data,
                              Metadata={SPOOL_CRC32C_METADATA: crc32c_base64(wrong)})
    url = s3_peer.url("wrong.bin")
    assert spool.stat(url).crc32c == wrong
    check_spool_refuses(url, tmp_path)


# --- moto's flexible checksums ----------------------------------------------


def test_moto_keeps_the_crc32c_spool_sends(moto_peer: S3Peer, tmp_path: Path) -> None:
    """spool sends ``x-amz-checksum-crc32c`` with every single PUT and names
    its algorithm in ``x-amz-sdk-checksum-algorithm``, as the AWS SDKs do;
    moto keeps a flexible checksum only then. So the server holds spool's
    CRC32C as its own (``spool stat`` says it came from the store), besides
    the copy in user metadata that every server keeps."""
    data = os.urandom(1000)
    crc = crc32c_base64(crc32c_of(data))
    spool_write(moto_peer.url("one-put.bin"), data, False, tmp_path)
    head = moto_peer.client.head_object(Bucket=moto_peer.bucket, Key=moto_peer.key("one-put.bin"),
                                        ChecksumMode="ENABLED")
    assert head["ChecksumCRC32C"] == crc
    assert head["Metadata"] == {SPOOL_CRC32C_METADATA: crc}
    info = spool.stat(moto_peer.url("one-put.bin"))
    assert info.crc32c == crc32c_of(data)


def test_spool_verifies_against_the_crc32c_moto_keeps(moto_peer: S3Peer, tmp_path: Path) -> None:
    """Where the server keeps a CRC32C, spool uses it: stat reports it and a
    whole read is checked against it. moto stores the CRC32C the client
    declares without checking it against the body, which lets this test
    store a wrong one: spool must refuse that object rather than return it."""
    data = os.urandom(50_000)
    crc = crc32c_of(data)
    moto_peer.client.put_object(Bucket=moto_peer.bucket, Key=moto_peer.key("declared.bin"), Body=data,
                                ChecksumAlgorithm="CRC32C", ChecksumCRC32C=crc32c_base64(crc))
    check_spool_reads(moto_peer.url("declared.bin"), data, crc, tmp_path)

    wrong = crc32c_of(b"other bytes")
    moto_peer.client.put_object(Bucket=moto_peer.bucket, Key=moto_peer.key("misdeclared.bin"), Body=data,
                                ChecksumAlgorithm="CRC32C", ChecksumCRC32C=crc32c_base64(wrong))
    head = moto_peer.client.head_object(Bucket=moto_peer.bucket, Key=moto_peer.key("misdeclared.bin"),
                                        ChecksumMode="ENABLED")
    assert head["ChecksumCRC32C"] == crc32c_base64(wrong)  # moto did not check it
    url = moto_peer.url("misdeclared.bin")
    assert spool.stat(url).crc32c == wrong
    check_spool_refuses(url, tmp_path)


@pytest.mark.parametrize("checksum_type", [None, "COMPOSITE"], ids=["default-type", "declared-composite"])
def test_spool_reads_a_multipart_object_with_a_composite_crc32c(
        moto_peer: S3Peer, checksum_type: Optional[str], tmp_path: Path) -> None:
    """A multipart upload with CRC32C part checksums (what boto3 with the CRT,
    or the AWS CLI, make with ``ChecksumAlgorithm=CRC32C``) gets a COMPOSITE
    checksum: a checksum of the parts' checksums, not of the bytes, so spool
    must not check the bytes against it. moto's GetObject marks it (a
    ``-<parts>`` suffix, ``x-amz-checksum-type: COMPOSITE``); its HeadObject,
    which spool's open and stat use, sends the bare value, with the type
    header only when the client declared the type at
    CreateMultipartUpload."""
    data = os.urandom((10 << 20) + 4097)
    pieces = [data[:5 << 20], data[5 << 20:10 << 20], data[10 << 20:]]
    key = moto_peer.key("composite.bin")
    declared = {"ChecksumType": checksum_type} if checksum_type else {}
    upload = moto_peer.client.create_multipart_upload(Bucket=moto_peer.bucket, Key=key,
                                                      ChecksumAlgorithm="CRC32C", **declared)
    parts = []
    for number, piece in enumerate(pieces, start=1):
        checksum = crc32c_base64(crc32c_of(piece))
        sent = moto_peer.client.upload_part(Bucket=moto_peer.bucket, Key=key, UploadId=upload["UploadId"],
                                            PartNumber=number, Body=piece, ChecksumCRC32C=checksum)
        parts.append({"PartNumber": number, "ETag": sent["ETag"], "ChecksumCRC32C": checksum})
    moto_peer.client.complete_multipart_upload(Bucket=moto_peer.bucket, Key=key, UploadId=upload["UploadId"],
                                               MultipartUpload={"Parts": parts})
    head = moto_peer.client.head_object(Bucket=moto_peer.bucket, Key=key, ChecksumMode="ENABLED")
    # The premise: a multipart object whose HeadObject carries a CRC32C that is not the bytes'.
    assert head["ETag"].endswith('-3"')
    assert head["ChecksumCRC32C"] != crc32c_base64(crc32c_of(data))

    check_spool_reads(moto_peer.url("composite.bin"), data, None, tmp_path)


# --- GCS: the project's server and google-cloud-storage ---------------------


@dataclass
class GcsPeer:
    """A bucket on the GCS server, a fresh prefix in it, and a Google client."""

    client: Any
    bucket: Any
    prefix: str

    def name(self, key: str) -> str:
        return f"{self.prefix}/{key}"

    def url(self, key: str) -> str:
        return f"gs://{self.bucket.name}/{self.name(key)}"


def google_client(host: str) -> Any:
    """google-cloud-storage's client for an emulator, as its users set it up."""
    return gcs_storage.Client(project="spool-test", credentials=AnonymousCredentials(),
                              client_options={"api_endpoint": f"http://{host}"})


@pytest.fixture(scope="session")
def gcs_bucket_name(gcs_server: str) -> str:
    """One bucket for the run, created by the Google client."""
    bucket = google_client(gcs_server).create_bucket(f"spool-peers-{uuid.uuid4().hex[:12]}")
    return bucket.name


@pytest.fixture
def gcs_peer(gcs_server: str, gcs_bucket_name: str, monkeypatch: pytest.MonkeyPatch) -> GcsPeer:
    """spool pointed at the GCS server with STORAGE_EMULATOR_HOST (no credentials)."""
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORAGE_EMULATOR_HOST", gcs_server)
    client = google_client(gcs_server)
    return GcsPeer(client, client.bucket(gcs_bucket_name), f"peers/{uuid.uuid4().hex}")


@pytest.mark.parametrize("upload", spool_uploads(s3=False))
def test_google_client_reads_what_spool_wrote(gcs_peer: GcsPeer, upload: SpoolUpload, tmp_path: Path) -> None:
    """Objects spool wrote to GCS (one multipart request up to 8 MiB, a
    resumable session above) are the same object to google-cloud-storage:
    bytes (downloaded with the client's own CRC32C check), size, the CRC32C
    and MD5 the service computed, spool's content type, no user metadata
    (spool sets none); and spool's stat reports the service's CRC32C and
    generation."""
    data = os.urandom(upload.size)
    crc = crc32c_of(data)
    url = gcs_peer.url(upload.key)
    committed = spool_write(url, data, upload.from_file, tmp_path)
    assert committed.size == len(data)

    blob = gcs_peer.bucket.get_blob(gcs_peer.name(upload.key))
    assert blob is not None
    assert blob.size == len(data)
    assert blob.crc32c == crc32c_base64(crc)
    assert blob.md5_hash == md5_base64(data)
    assert blob.content_type == SPOOL_GCS_CONTENT_TYPE
    assert not blob.metadata
    assert blob.download_as_bytes(checksum="crc32c") == data

    names = [(b.name, b.size) for b in gcs_peer.client.list_blobs(gcs_peer.bucket, prefix=gcs_peer.prefix + "/")]
    assert names == [(gcs_peer.name(upload.key), len(data))]

    info = spool.stat(url)
    assert info.version == str(blob.generation)
    check_spool_reads(url, data, crc, tmp_path)


@dataclass(frozen=True)
class GoogleUpload:
    """An object google-cloud-storage writes; ``chunk_size`` makes it a resumable upload."""

    key: str
    size: int
    chunk_size: Optional[int] = None


GOOGLE_UPLOADS = [
    pytest.param(GoogleUpload("notes.txt", 2000), id="upload_from_string"),
    pytest.param(GoogleUpload("empty.bin", 0), id="empty"),
    # 256 KiB is the smallest chunk the API allows: 5 chunks, the last short.
    pytest.param(GoogleUpload("resumable.bin", (1 << 20) + 5, chunk_size=256 << 10), id="resumable-chunks"),
    pytest.param(GoogleUpload(AWKWARD_KEY, 999), id="awkward-key"),
]


@pytest.mark.parametrize("upload", GOOGLE_UPLOADS)
def test_spool_reads_what_google_client_wrote(gcs_peer: GcsPeer, upload: GoogleUpload, tmp_path: Path) -> None:
    """Objects google-cloud-storage uploaded (with its content type, user
    metadata and, in chunks, a resumable session) read back through spool byte
    for byte, verified against the CRC32C the service keeps; the Google
    client's content type and metadata are still there afterwards."""
    data = os.urandom(upload.size)
    blob = gcs_peer.bucket.blob(gcs_peer.name(upload.key), chunk_size=upload.chunk_size)
    blob.metadata = {"origin": "google-cloud-storage", "step": "42"}
    blob.upload_from_string(data, content_type="text/plain", checksum="crc32c")
    stored = gcs_peer.bucket.get_blob(gcs_peer.name(upload.key))
    assert stored.crc32c == crc32c_base64(crc32c_of(data))

    url = gcs_peer.url(upload.key)
    check_spool_reads(url, data, crc32c_of(data), tmp_path)
    assert spool.stat(url).version == str(stored.generation)
    listed = spool.ls(f"gs://{gcs_peer.bucket.name}/{gcs_peer.prefix}/", recursive=True)
    assert [(entry.key, entry.size, entry.crc32c) for entry in listed] == [
        (gcs_peer.name(upload.key), len(data), crc32c_of(data))]

    again = gcs_peer.bucket.get_blob(gcs_peer.name(upload.key))
    assert (again.content_type, again.metadata, again.generation) == (
        "text/plain", {"origin": "google-cloud-storage", "step": "42"}, stored.generation)
