"""spool.open, stat, ls, rm and copy on local files and Ceph RGW."""

from __future__ import annotations

import io
import os
import gc
import re
import subprocess
import sys
import threading
import time

import pytest

import spool


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
    assert [(e.url.rsplit("/", 2)[-2:], e.is_folder) for e in top] == [  # in key order, as `spool ls` prints
        (["d", "one"], False), (["sub", ""], True), (["d", "two"], False)]
    assert spool.ls(f"{root}/d/") == top
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


def test_a_writer_tells_the_bytes_written(root: str) -> None:
    # As a file from open(url, "wb"): torch.save and zipfile ask for tell().
    with spool.open(f"{root}/told.bin", "wb", buffer_size=1 << 20) as f:
        assert f.tell() == 0
        f.write(b"abc")
        assert f.tell() == 3  # still in the buffer
        f.write(b"x" * (3 << 20))  # past the buffer: written through
        assert f.tell() == 3 + (3 << 20)
        f.flush()
        assert f.tell() == 3 + (3 << 20)
        assert not f.seekable()
    assert f.info is not None and f.info.size == 3 + (3 << 20)
    with pytest.raises(ValueError):
        f.tell()


def test_copy_into_a_folder_keeps_the_objects_name(root: str, tmp_path) -> None:
    # As `spool cp obj dir` and shutil.copy(file, dir): a folder destination
    # receives the object under its base name.
    with spool.open(f"{root}/run/model.bin", "wb") as f:
        f.write(b"weights")
    existing = tmp_path / "existing"
    existing.mkdir()
    copied = spool.copy(f"{root}/run/model.bin", existing)
    assert (existing / "model.bin").read_bytes() == b"weights"
    assert copied.url.endswith("/existing/model.bin") and copied.size == 7
    spool.copy(f"{root}/run/model.bin", f"{tmp_path}/made/")  # a trailing slash: a folder, made if missing
    assert (tmp_path / "made" / "model.bin").read_bytes() == b"weights"
    stored = spool.copy(existing / "model.bin", f"{root}/uploads/")
    assert stored.url.endswith("/uploads/model.bin")
    assert spool.stat(f"{root}/uploads/model.bin").size == 7
    spool.copy(f"{root}/run/model.bin", f"{root}/uploads/")  # within the store
    assert [e.key.rsplit("/", 1)[-1] for e in spool.ls(f"{root}/uploads/")] == ["model.bin"]


def test_copy_fsyncs_a_download_only_when_asked(tmp_path) -> None:
    # Counted with strace (scripts/setup installs it) in a child process: without fsync=True nothing is
    # fsync'd; with it, the file (under its temporary name) and its folder.
    source = tmp_path / "source.bin"
    source.write_bytes(os.urandom(1 << 20))

    def fsynced(name: str, fsync: bool) -> list:
        log = tmp_path / f"{name}.strace"
        code = f"import spool; spool.copy({str(source)!r}, {str(tmp_path / name)!r}, fsync={fsync})"
        subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", str(log),
                        sys.executable, "-c", code], check=True, cwd=tmp_path)
        assert (tmp_path / name).read_bytes() == source.read_bytes()
        return re.findall(r"f(?:data)?sync\(\d+<([^>]*)>", log.read_text())

    assert fsynced("plain.bin", False) == []
    synced = fsynced("durable.bin", True)
    assert any(os.path.basename(p).startswith(".durable.bin.spool-tmp-") for p in synced), synced
    assert str(tmp_path) in synced


@pytest.mark.s3
def test_ls_of_a_name_that_is_an_object_and_a_folder(s3_prefix: str) -> None:
    # Keys t1 and t1/x: "t1" lists the object and the folder entry, "t1/" the folder.
    for name in ("t1", "t1/x"):
        with spool.open(f"{s3_prefix}/{name}", "wb") as f:
            f.write(name.encode())
    both = spool.ls(f"{s3_prefix}/t1")
    assert [(e.url, e.is_folder) for e in both] == [(f"{s3_prefix}/t1", False), (f"{s3_prefix}/t1/", True)]
    assert both[0].size == 2
    assert [e.url for e in spool.ls(f"{s3_prefix}/t1/")] == [f"{s3_prefix}/t1/x"]
    assert [e.url for e in spool.ls(f"{s3_prefix}/t1", recursive=True)] == [f"{s3_prefix}/t1", f"{s3_prefix}/t1/x"]
    cli = os.environ.get("SPOOL_CLI")
    if cli:  # the command lists the same entries
        listed = subprocess.run([cli, "ls", f"{s3_prefix}/t1"], capture_output=True, text=True, check=True)
        assert listed.stdout.splitlines() == [e.url for e in both]
    for name in ("t1", "t1/x"):
        spool.rm(f"{s3_prefix}/{name}")


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
    for call in (spool.stat, spool.rm, spool.ls, lambda url: spool.open(url, "wb")):
        with pytest.raises(ValueError, match="ftp"):
            call("ftp://host/file")
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        spool.copy(f"{root}/missing.bin", f"{root}/copy.bin")
    with pytest.raises(FileNotFoundError, match="missing.bin"):
        spool.rm(f"{root}/missing.bin")


def _main_thread_ran_during(call) -> int:
    """How far the main thread counted while `call` ran in another thread.

    The switch interval is set far beyond the test's length, so the main
    thread never takes the GIL from the other thread by force: its counter
    can only advance during `call` if `call` released the GIL. The main
    thread gives the GIL up itself now and then (a short sleep), so the other
    thread starts and finishes promptly; nothing is asserted on time."""
    counter = 0
    during = []
    done = threading.Event()

    def run() -> None:
        before = counter
        call()
        during.append(counter - before)
        done.set()

    old = sys.getswitchinterval()
    sys.setswitchinterval(60)
    try:
        thread = threading.Thread(target=run)
        thread.start()
        while not done.is_set():
            counter += 1
            if counter % 20_000 == 0:
                time.sleep(0.001)
        thread.join()
    finally:
        sys.setswitchinterval(old)
    return during[0]


def test_reading_a_whole_object_holds_it_once(root: str) -> None:
    # read() fills one bytes object in place (parallel ranged reads), rather
    # than a buffer copied into bytes: the object held once, not twice.
    import tracemalloc

    data = os.urandom(8 << 20)
    with spool.open(f"{root}/whole.bin", "wb") as f:
        f.write(data)
    with spool.open(f"{root}/whole.bin", "rb") as f:
        tracemalloc.start()
        try:
            got = f.read()
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert got == data
    assert peak < 1.5 * len(data), f"reading {len(data)} bytes peaked at {peak} bytes of Python memory"


def test_reads_release_the_gil(tmp_path) -> None:
    """A reader thread makes progress while another Python thread computes."""
    path = tmp_path / "big.bin"
    path.write_bytes(os.urandom(64 << 20))
    with spool.open(path, "rb", buffer_size=1 << 20) as reader:
        buffer = bytearray(64 << 20)
        assert _main_thread_ran_during(lambda: reader.raw.readinto(buffer)) > 0, \
            "the main thread did not run while the read was in progress"
        assert bytes(buffer[:1024]) == path.read_bytes()[:1024]


@pytest.mark.s3
def test_s3_reads_and_writes_release_the_gil(s3_prefix: str) -> None:
    data = os.urandom(32 << 20)
    with spool.open(f"{s3_prefix}/gil.bin", "wb") as writer:
        assert _main_thread_ran_during(lambda: writer.raw.write(data)) > 0
    with spool.open(f"{s3_prefix}/gil.bin") as reader:
        buffer = bytearray(len(data))
        assert _main_thread_ran_during(lambda: reader.raw.readinto(buffer)) > 0
        assert buffer == data


def test_listing_entries_have_size_and_time(root: str) -> None:
    before = time.time()
    with spool.open(f"{root}/f/x.bin", "wb") as f:
        f.write(b"12345")
    (entry,) = spool.ls(f"{root}/f")
    assert entry.key.endswith("f/x.bin") and entry.url.endswith("/f/x.bin")
    assert entry.size == 5 and not entry.is_folder
    assert entry.mtime is not None and entry.mtime > before - 600  # a server's clock may differ a little
    assert spool.stat(f"{root}/f/x.bin").size == 5
    assert spool.ls(f"{root}/nothing-here") == []


def test_plain_paths_and_file_urls_are_the_same_objects(tmp_path) -> None:
    with spool.open(f"file://{tmp_path}/via-url.txt", "wb") as f:
        f.write(b"url")
    assert (tmp_path / "via-url.txt").read_bytes() == b"url"
    with spool.open(tmp_path / "via-url.txt") as f:  # os.PathLike
        assert f.read() == b"url"


def test_abort_and_dropping_a_writer_publish_nothing(root: str) -> None:
    writer = spool.open(f"{root}/dropped.bin", "wb")
    writer.write(b"x" * 100)
    del writer
    gc.collect()
    writer = spool.open(f"{root}/aborted.bin", "wb")
    writer.write(b"y" * 100)
    writer.abort()
    assert writer.closed
    for name in ("dropped.bin", "aborted.bin"):
        with pytest.raises(FileNotFoundError):
            spool.stat(f"{root}/{name}")


def test_nothing_is_visible_before_close(root: str) -> None:
    with spool.open(f"{root}/pending.bin", "wb") as f:
        f.write(b"z" * (1 << 20))
        f.flush()
        with pytest.raises(FileNotFoundError):
            spool.stat(f"{root}/pending.bin")
    assert spool.stat(f"{root}/pending.bin").size == 1 << 20


def _in_child(work) -> str:
    """Runs `work` in a forked child; returns what it returned (a str), or
    raises what it raised, by its repr."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_end)
            try:
                message = "ok:" + work()
            except BaseException as error:  # noqa: BLE001 (reported to the parent)
                message = f"error:{type(error).__name__}:{error}"
            os.write(write_end, message.encode())
        finally:
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    return message


def test_objects_opened_before_fork(root: str) -> None:
    """A reader opened before fork() reads in the child through the child's own
    connections; a writer opened before it belongs to the parent."""
    data = os.urandom(3 << 20)
    with spool.open(f"{root}/shared.bin", "wb") as f:
        f.write(data)
    reader = spool.open(f"{root}/shared.bin", "rb")
    assert reader.read(10) == data[:10]  # the parent's store is in use
    writer = spool.open(f"{root}/parents.bin", "wb")
    writer.write(b"parent")

    def child() -> str:
        reader.seek(0)
        assert reader.read() == data
        with spool.open(f"{root}/from-child.bin", "wb") as f:  # new objects work as usual
            f.write(b"child")
        try:
            writer.raw.write(b"child")
        except spool.FailedPreconditionError as error:
            return str(error)
        return "the child could write to the parent's writer"

    message = _in_child(child)
    assert message.startswith("ok:") and "before fork()" in message, message
    # The parent's objects still work after the child is gone.
    reader.seek(len(data) - 5)
    assert reader.read() == data[-5:]
    writer.close()
    with spool.open(f"{root}/parents.bin") as f:
        assert f.read() == b"parent"
    with spool.open(f"{root}/from-child.bin") as f:
        assert f.read() == b"child"
    reader.close()
