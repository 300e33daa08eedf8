"""spool.CheckpointManager on local files and Ceph RGW."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

import spool


@pytest.fixture
def root(root: str) -> str:
    """The checkpoint root: a folder below conftest's fresh folder."""
    return root + "/ckpt"


def test_save_list_restore(root: str, tmp_path) -> None:
    folder = tmp_path / "model"
    (folder / "opt").mkdir(parents=True)
    (folder / "weights.bin").write_bytes(b"w" * 100_000)
    (folder / "opt" / "state").write_bytes(b"optimizer")
    with spool.CheckpointManager(root, keep_last=2) as ckpt:
        assert ckpt.latest() is None
        first = ckpt.save(10, folder, metadata={"loader": "position 7"})
        assert first.step == 10 and first.total_bytes == 100_009
        assert sorted(f.path for f in first.files) == ["opt/state", "weights.bin"]
        local_file = tmp_path / "extra.txt"
        local_file.write_text("extra")
        ckpt.save(20, {"model.pt": b"\x00\x01" * 10, "extra.txt": local_file})
        ckpt.save(30, {"model.pt": b"third"})
        assert [m.step for m in ckpt.list()] == [20, 30]  # keep_last=2
        assert ckpt.latest() == 30

        restored = ckpt.restore(tmp_path / "restored")
        assert restored.step == 30 and (tmp_path / "restored" / "model.pt").read_bytes() == b"third"
        ckpt.restore(tmp_path / "older", step=20)
        assert (tmp_path / "older" / "extra.txt").read_text() == "extra"

        with pytest.raises(FileExistsError):
            ckpt.save(30, {"model.pt": b"again"})
        with pytest.raises(FileNotFoundError):
            ckpt.restore(tmp_path / "none", step=99)


def test_save_async_returns_before_the_upload(root: str) -> None:
    with spool.CheckpointManager(root) as ckpt:
        handle = ckpt.save_async(5, {"big.bin": b"b" * (24 << 20)}, metadata={"epoch": "1"})
        assert handle.started
        manifest = handle.wait()
        assert manifest is not None and manifest.step == 5 and manifest.metadata == {"epoch": "1"}
        assert handle.done()
        ckpt.save_async(6, {"small": b"s"})
    # Leaving the block waited for step 6.
    with spool.CheckpointManager(root) as ckpt:
        assert ckpt.latest() == 6


def test_two_ranks_each_save_and_restore_their_part(root: str, tmp_path) -> None:
    errors = []

    def save(rank: int) -> None:
        try:
            with spool.CheckpointManager(root, rank=rank, world_size=2, attempt="test",
                                         part_timeout_seconds=60) as ckpt:
                ckpt.save(100, {"shard.bin": bytes([rank]) * 1000}, metadata={"loader": f"rank {rank}"})
        except Exception as error:  # noqa: BLE001 (reported below)
            errors.append(error)

    threads = [threading.Thread(target=save, args=(rank,)) for rank in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors
    with spool.CheckpointManager(root, rank=1, world_size=2) as ckpt:
        manifest = ckpt.restore(tmp_path / "rank1")
        assert manifest.world_size == 2
        assert manifest.metadata == {"loader": "rank 1"}
        assert (tmp_path / "rank1" / "shard.bin").read_bytes() == b"\x01" * 1000
        assert [part.metadata["loader"] for part in manifest.ranks] == ["rank 0", "rank 1"]
        ckpt.restore(tmp_path / "rank0", rank=0)
        assert (tmp_path / "rank0" / "shard.bin").read_bytes() == b"\x00" * 1000


def test_bad_input_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(ValueError):
        spool.CheckpointManager("s3:///no-bucket")
    with spool.CheckpointManager(tmp_path / "ckpt") as ckpt:
        with pytest.raises(ValueError, match="nothing to save"):
            ckpt.save(1, {})
        with pytest.raises(ValueError):
            ckpt.save(1, {"../escape": b"x"})
        with pytest.raises(TypeError):
            ckpt.save(1, {"x": 42})  # type: ignore[dict-item]
        with pytest.raises(FileNotFoundError):
            ckpt.restore(tmp_path / "out")


def test_a_missing_folder_is_file_not_found(tmp_path) -> None:
    with spool.CheckpointManager(tmp_path / "ckpt") as ckpt:
        with pytest.raises(FileNotFoundError, match="does not exist"):
            ckpt.save(1, tmp_path / "nope")
        (tmp_path / "a-file").write_bytes(b"x")
        with pytest.raises(ValueError, match="is not a folder"):
            ckpt.save(1, tmp_path / "a-file")


def test_links_out_of_the_folder_are_saved_only_when_asked(tmp_path) -> None:
    folder = tmp_path / "source"
    folder.mkdir()
    (folder / "model.pt").write_bytes(b"weights")
    (folder / "latest.pt").symlink_to(folder / "model.pt")  # inside the folder: saved as the file
    (tmp_path / "secret").write_bytes(b"not for the bucket")
    (folder / "outside.pt").symlink_to(tmp_path / "secret")
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "vocab.txt").write_bytes(b"words")
    with spool.CheckpointManager(tmp_path / "ckpt") as ckpt:
        with pytest.raises(ValueError, match="outside.pt is a symbolic link to .*, outside the folder"):
            ckpt.save(1, folder)
        (folder / "outside.pt").unlink()
        (folder / "shared").symlink_to(tmp_path / "shared")
        with pytest.raises(ValueError, match="shared is a symbolic link to the folder"):
            ckpt.save_async(1, folder)
        assert ckpt.list() == []
        manifest = ckpt.save(1, folder, follow_symlinks=True)
        assert sorted(f.path for f in manifest.files) == ["latest.pt", "model.pt", "shared/vocab.txt"]
        (folder / "shared").unlink()
        assert sorted(f.path for f in ckpt.save(2, folder).files) == ["latest.pt", "model.pt"]
        ckpt.restore(tmp_path / "out", step=2)
        assert (tmp_path / "out" / "latest.pt").read_bytes() == b"weights"


def test_should_save_and_retention_defaults(tmp_path) -> None:
    with spool.CheckpointManager(tmp_path / "ckpt", save_every_steps=10) as ckpt:
        assert not ckpt.should_save(0)  # nothing trained yet
        due = [step for step in range(1, 31) if ckpt.should_save(step) and ckpt.save(step, {"s": b"%d" % step})]
        assert due == [10, 20, 30]
        assert not ckpt.should_save(30)  # never the step just saved
        assert [m.step for m in ckpt.list()] == [10, 20, 30]  # keep_last=None keeps every step
        assert all(m.total_bytes == 2 and m.files[0].path == "s" for m in ckpt.list())


DOCS = Path(__file__).resolve().parents[2] / "docs" / "python.md"


def _documented_example(section: str) -> str:
    """The first Python block of a section of docs/python.md."""
    body = DOCS.read_text().split(f"\n## {section}\n", 1)[1]
    return body.split("```python\n", 1)[1].split("\n```", 1)[0]


def test_the_documented_loop_runs_again_after_a_restart(root: str, tmp_path) -> None:
    # docs/python.md, "## Checkpoints": its example, verbatim but for the
    # paths, run as a job is: stopped, restarted, and run once more after it
    # finished. It must resume after the restored step and never save a
    # committed step again.
    code = _documented_example("Checkpoints")
    optimizer = tmp_path / "opt.pt"
    optimizer.write_bytes(b"optimizer")
    for documented, here in (("s3://my-bucket/run-7/ckpt", root), ("/scratch/ckpt", str(tmp_path / "restored")),
                             ("/scratch/opt.pt", str(optimizer))):
        assert documented in code
        code = code.replace(documented, here)

    class Loader:
        """Stands for spool.DataLoader: state() and resume()."""

        def __init__(self) -> None:
            self.position = 0

        def state(self) -> str:
            return f"position={self.position}"

        def resume(self, state: str) -> None:
            self.position = int(state.split("=")[1])

    def run(steps: int) -> list[int]:
        loader, trained = Loader(), []

        def train_step() -> None:
            loader.position += 1
            trained.append(loader.position)

        exec(code, {"rank": 0, "world_size": 1, "steps": steps, "train_step": train_step, "model_bytes": b"model",
                    "loader": loader})
        return trained

    assert run(700) == list(range(1, 701))  # saves step 500, then stops short of the end
    assert run(1000) == list(range(501, 1001))  # resumes after step 500, saves 1000
    assert run(1000) == []  # finished: nothing to run, nothing saved twice
    with spool.CheckpointManager(root) as ckpt:
        assert [m.step for m in ckpt.list()] == [500, 1000]
        assert ckpt.list()[-1].metadata == {"loader": "position=1000"}


def test_handles_and_wait(root: str, tmp_path) -> None:
    source = tmp_path / "model"
    source.mkdir()
    (source / "weights.bin").write_bytes(b"w" * (3 << 20))
    with spool.CheckpointManager(root) as ckpt:
        first = ckpt.save_async(1, source, metadata={"n": "1"})
        second = ckpt.save_async(2, source)  # waits for the first, then starts
        assert first.done()
        assert ckpt.wait().step == 2 and second.done()
        assert ckpt.latest() == 2
        manifest = ckpt.restore(tmp_path / "restored", step=1)
        assert manifest.metadata == {"n": "1"} and manifest.total_bytes == 3 << 20
        assert (tmp_path / "restored" / "weights.bin").read_bytes() == b"w" * (3 << 20)


def test_leaving_by_an_exception_closes_the_manager(tmp_path) -> None:
    with pytest.raises(RuntimeError):
        with spool.CheckpointManager(tmp_path / "ckpt") as ckpt:
            ckpt.save(1, {"a": b"committed"})
            ckpt.save_async(2, {"a": b"b" * (8 << 20)})
            raise RuntimeError("the step failed")
    with pytest.raises(spool.FailedPreconditionError, match="closed"):
        ckpt.latest()
    # Step 1 stands; step 2 is committed only if it finished before the cancel.
    with spool.CheckpointManager(tmp_path / "ckpt") as again:
        assert again.latest() in (1, 2)
        assert [m.step for m in again.list()][0] == 1


def test_a_manager_opened_before_fork_is_the_parents(tmp_path) -> None:
    ckpt = spool.CheckpointManager(tmp_path / "ckpt")
    ckpt.save(1, {"a": b"parent"})
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:
        message = "no error"
        try:
            ckpt.latest()
        except spool.FailedPreconditionError as error:
            message = str(error)
        except BaseException as error:  # noqa: BLE001 (reported to the parent)
            message = repr(error)
        try:
            # A manager opened in the child works.
            with spool.CheckpointManager(tmp_path / "ckpt") as own:
                message += f"|latest {own.latest()}"
            del ckpt  # dropped in the child: left to the parent, not torn down
        finally:
            os.write(write_end, message.encode())
            os._exit(0)
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode()
    os.waitpid(pid, 0)
    assert "before fork()" in message and message.endswith("|latest 1"), message
    ckpt.save(2, {"a": b"still the parent's"})
    assert ckpt.latest() == 2
    ckpt.close()


def test_restore_never_replaces_a_folder_of_other_files(root: str, tmp_path) -> None:
    """`restore(".")` from a project folder must not delete the project (only
    an empty folder or an earlier restore of the same root is replaced)."""
    project = tmp_path / "project"
    (project / "data").mkdir(parents=True)
    (project / "train.py").write_text("print('train')\n")
    (project / "data" / "rows.csv").write_text("1,2\n")
    with spool.CheckpointManager(root) as ckpt:
        ckpt.save(1, {"model.pt": b"weights"})
        with pytest.raises(spool.FailedPreconditionError, match="replace=True|--replace"):
            ckpt.restore(project)
        assert (project / "train.py").read_text() == "print('train')\n"
        assert sorted(p.name for p in project.iterdir()) == ["data", "train.py"]

        restored = tmp_path / "restored"
        ckpt.restore(restored)
        (restored / "written-later.bin").write_bytes(b"x")
        ckpt.restore(restored)  # an earlier restore of this root: replaced
        assert sorted(p.name for p in restored.iterdir()) == [".spool-restore", "model.pt"]

        ckpt.restore(project, replace=True)
        assert sorted(p.name for p in project.iterdir()) == [".spool-restore", "model.pt"]
