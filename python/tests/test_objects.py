"""spool.open, stat, ls, rm and copy on local files and Ceph RGW."""

from __future__ import annotations

import io
import os
import sys
import threading

import pytest

import spool


def _roots(tmp_path, request) -> str:
    if request.param == "s3":
        return request.getfixturevalue("s3_prefix")
    return str(tmp_path / "store")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3)])
def root(tmp_path, request) -> str:
    """A fresh folder URL on each store."""
    return _roots(tmp_path, request)


def test_write_then_read_round_trip(root: str) -> None:
    data = os.urandom(3 << 20) + b"tail\nline two\nend"
    with spool.open(f"{root}/a/blob.bin", "wb") as f:
        assert f.write(data[:100]) == 100
        f.write(memoryview(data)[100:])
    assert f.info is not None and f.info.size == len(data)
    with spool.open(f"{root}/a/blob.bin", "rb") as f:
        assert f.read(10) == data[:10]
        assert f.seek(-17, io.SEEK_END) == len(data) - 17
        assert list(f) == [b"tail\n", b"line two\n", b"end"]
        f.seek(0)
        assert f.read() == data
    info = spool.stat(f"{root}/a/blob.bin")
    assert info.size == len(data) and not info.is_folder


def test_large_object_in_parts(root: str) -> None:
    data = os.urandom(20 << 20)  # several S3 parts
    with spool.open(f"{root}/large.bin", "wb") as f:
        for i in range(0, len(data), 1 << 20):
            f.write(data[i:i + (1 << 20)])
    with spool.open(f"{root}/large.bin") as f:
        assert f.read() == data


def test_an_exception_in_the_with_block_publishes_nothing(root: str) -> None:
    with pytest.raises(RuntimeError):
        with spool.open(f"{root}/aborted.bin", "wb") as f:
            f.write(b"x" * (9 << 20))
            raise RuntimeError("the trainer crashed")
    with pytest.raises(FileNotFoundError):
        spool.stat(f"{root}/aborted.bin")


def test_ls_rm_and_copy(root: str, tmp_path) -> None:
    for name in ("d/one", "d/two", "d/sub/three"):
        with spool.open(f"{root}/{name}", "wb") as f:
            f.write(name.encode())
    top = spool.ls(f"{root}/d")
    assert [(e.url.rsplit("/", 2)[-2:], e.is_folder) for e in top] == [
        (["sub", ""], True), (["d", "one"], False), (["d", "two"], False)]
    assert sorted(e.url.rsplit("/", 1)[-1] for e in spool.ls(f"{root}/d", recursive=True)) == ["one", "three", "two"]

    copied = spool.copy(f"{root}/d/one", f"{root}/d/copy")
    assert copied.size == 5 and copied.url.endswith("/d/copy")
    local = tmp_path / "downloaded"
    spool.copy(f"{root}/d/sub/three", local)
    assert local.read_bytes() == b"d/sub/three"
    spool.copy(local, f"{root}/d/uploaded")
    with spool.open(f"{root}/d/uploaded") as f:
        assert f.read() == b"d/sub/three"

    spool.rm(f"{root}/d/one")
    with pytest.raises(FileNotFoundError):
        spool.stat(f"{root}/d/one")
    with pytest.raises(FileNotFoundError):
        spool.rm(f"{root}/d/one")


def test_errors_are_the_exceptions_people_catch(root: str) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        spool.open(f"{root}/missing.bin")
    assert "missing.bin" in str(missing.value)
    assert isinstance(missing.value, spool.Error) and missing.value.code == "NotFound"
    with pytest.raises(ValueError):
        spool.stat("s3:///no-bucket")
    with pytest.raises(ValueError):
        spool.open("ftp://host/file")
    with pytest.raises(ValueError):
        spool.open(f"{root}/x", "r+")


def test_reads_release_the_gil(tmp_path) -> None:
    """While one thread reads, another Python thread runs: with a switch interval
    far longer than the read, the main thread's counter can only advance during
    the read if the read released the GIL."""
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(64 << 20))
    reader = spool.open(path, "rb", buffer_size=1 << 20)
    counter = 0
    advanced = []
    done = threading.Event()

    def read() -> None:
        buffer = bytearray(64 << 20)
        before = counter
        reader.raw.readinto(buffer)
        advanced.append(counter - before)
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(30)
    try:
        thread = threading.Thread(target=read)
        thread.start()
        while not done.is_set():
            counter += 1
        thread.join()
    finally:
        sys.setswitchinterval(old)
        reader.close()
    assert advanced and advanced[0] > 0, "the main thread did not run while the read was in progress"
