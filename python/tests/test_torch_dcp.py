"""spool.torch.dcp: torch.distributed.checkpoint saves and loads as steps of
spool's CheckpointManager, on local files, Ceph RGW (marked s3) and the
project's GCS server, with 1, 2 and 4 gloo ranks on CPU (dcp_workers.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
import torch
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.api import CheckpointException

import dcp_workers
import spool
from gcs_fixture import gcs_prefix  # noqa: F401 (a fixture)
from spool.torch.dcp import FORMAT, METADATA_PATH, StorageReader, StorageWriter

# DCP warns on every save and load without a process group (the single-process tests).
pytestmark = pytest.mark.filterwarnings("ignore:torch.distributed is disabled")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3), "gcs"])
def store_root(tmp_path: Path, request: pytest.FixtureRequest) -> str:
    """A fresh checkpoint root: a local folder, a prefix on Ceph RGW, a prefix on the GCS server."""
    if request.param == "s3":
        return request.getfixturevalue("s3_prefix")
    if request.param == "gcs":
        return request.getfixturevalue("gcs_prefix")
    return str(tmp_path / "ckpt")


def run(tmp_path: Path, world: int, scenario, *args) -> list[int]:
    return dcp_workers.run_ranks(world, str(tmp_path / f"init-{uuid.uuid4().hex}"), scenario, *args)


def cli(*args: str) -> subprocess.CompletedProcess:
    path = os.environ.get("SPOOL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SPOOL_CLI must name the built spool command (build/cli/spool)")
    return subprocess.run([path, *args], capture_output=True, text=True, timeout=120)


def test_save_load_on_4_and_2_ranks_and_reshard(store_root: str, tmp_path: Path) -> None:
    """4 ranks save step 1 (dcp.save) and step 2 (dcp.async_save) and load
    each back: a replicated tensor, a DTensor sharded over the ranks, a
    value, a model and its Adam state. 2 ranks then load the 4-rank step 2
    (resharded) and save and load step 3. Each is a committed spool step
    that the manager lists and `spool ckpt list/verify` see."""
    assert run(tmp_path, 4, dcp_workers.steps, store_root,
               (dcp_workers.save_load, 1), (dcp_workers.async_save_load, 2)) == [0] * 4
    assert run(tmp_path, 2, dcp_workers.steps, store_root,
               (dcp_workers.load_only, 2), (dcp_workers.save_load, 3)) == [0] * 2

    with spool.CheckpointManager(store_root) as manager:
        listed = manager.list()
        assert [m.step for m in listed] == [1, 2, 3]
        assert [m.world_size for m in listed] == [5, 5, 3]  # DCP ranks + the metadata's rank 0
        assert [m.metadata["dcp_world_size"] for m in listed] == ["4", "4", "2"]
        assert all(m.metadata["format"] == FORMAT for m in listed)
        assert [f.path for f in listed[2].ranks[0].files] == [".metadata"]
        assert METADATA_PATH in {f.path for f in listed[2].files}
    # One process without a process group loads the 2-rank step whole.
    dcp_workers.load_and_check(store_root, 3, world=1)

    listed_cli = cli("ckpt", "list", store_root, "--json")
    assert listed_cli.returncode == 0, listed_cli.stderr
    steps = [json.loads(line) for line in listed_cli.stdout.splitlines() if line.strip()]
    assert [int(s["step"]) for s in steps] == [1, 2, 3], listed_cli.stdout
    verified = cli("ckpt", "verify", store_root)
    assert verified.returncode == 0, verified.stdout + verified.stderr


@pytest.mark.parametrize("backend", ["local", pytest.param("s3", marks=pytest.mark.s3)])
def test_rank_killed_mid_save_leaves_previous_step_latest(backend: str, tmp_path: Path,
                                                          request: pytest.FixtureRequest) -> None:
    """Rank 1 of 2 is SIGKILLed after uploading its items and writing its part,
    before the commit: the step is never committed nor listed (`spool ckpt
    list` neither), the previous step stays latest and loads, `spool ckpt gc`
    removes the leftovers, and the step saved again commits."""
    root = request.getfixturevalue("s3_prefix") if backend == "s3" else str(tmp_path / "ckpt")
    assert run(tmp_path, 2, dcp_workers.save_load, root, 1) == [0, 0]
    codes = run(tmp_path, 2, dcp_workers.save_killed, root, 2)
    assert codes == [0, -9], codes  # rank 0 saw the save fail; rank 1 was killed

    leftovers = spool.ls(f"{root}/step-000000000002/rank-00002", recursive=True)
    assert leftovers, "rank 1 was killed before uploading: the test did not test a half-written step"
    with spool.CheckpointManager(root) as manager:
        assert manager.latest() == 1
        assert [m.step for m in manager.list()] == [1]
    reader = StorageReader(root)
    target, model, optimizer = dcp_workers.empty_state(world=1)
    dcp.load(target, storage_reader=reader)
    assert reader.loaded_step == 1
    dcp_workers.check_loaded(target, model, optimizer, 1)

    listed = cli("ckpt", "list", root, "--json")
    assert [int(json.loads(line)["step"]) for line in listed.stdout.splitlines() if line.strip()] == [1]
    gc = cli("ckpt", "gc", root, "--older-than", "0s")
    assert gc.returncode == 0, gc.stderr
    assert spool.ls(f"{root}/step-000000000002/rank-00002", recursive=True) == []
    # The restarted job saves the same step again, and it commits.
    assert run(tmp_path, 2, dcp_workers.save_load, root, 2) == [0, 0]
    with spool.CheckpointManager(root) as manager:
        assert [m.step for m in manager.list()] == [1, 2]


def test_single_process_save_and_load(tmp_path: Path) -> None:
    """Without a process group DCP saves and loads in one process: the step
    has one data rank, the manifest carries the writer's metadata, and
    `checkpoint_id` names the step."""
    root = str(tmp_path / "ckpt")
    state = {"w": torch.randn(64, 32), "nested": {"b": torch.arange(5)}, "name": "run-7"}
    dcp.save(state, storage_writer=StorageWriter(root, metadata={"loss": "0.25"}, keep_last=2), checkpoint_id=10)
    target = {"w": torch.zeros(64, 32), "nested": {"b": torch.zeros(5, dtype=torch.int64)}, "name": ""}
    dcp.load(target, storage_reader=StorageReader(root), checkpoint_id="10")
    assert torch.equal(target["w"], state["w"]) and torch.equal(target["nested"]["b"], state["nested"]["b"])
    assert target["name"] == "run-7"
    for step in (11, 12):  # retention: keep_last=2
        dcp.save(state, storage_writer=StorageWriter(root, step, keep_last=2))
    with spool.CheckpointManager(root) as manager:
        listed = manager.list()
    assert [m.step for m in listed] == [11, 12]
    assert listed[0].metadata == {"format": FORMAT, "dcp_world_size": "1"}


# Run in a process of its own: its peak resident memory (VmHWM, reset after
# the state dict is made) is what the save added.
_SAVE_MEMORY = """
import sys, torch, torch.distributed.checkpoint as dcp, warnings
from spool.torch.dcp import StorageWriter
warnings.simplefilter("ignore")
def status(key):
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(key + ":"))
mib, root = int(sys.argv[1]), sys.argv[2]
state = {f"t{i}": torch.rand(mib << 15) for i in range(8)}  # 8 tensors of mib/8 MiB
dcp.save({"warm": torch.rand(4)}, storage_writer=StorageWriter(root + "/warm", 1))
with open("/proc/self/clear_refs", "w") as clear:
    clear.write("5")  # resets VmHWM to the current resident size
before = status("VmRSS")
dcp.save(state, storage_writer=StorageWriter(root + "/ckpt", 1))
print((status("VmHWM") - before) / (mib << 20))
"""


def test_save_holds_one_copy_of_the_state_dict(tmp_path: Path) -> None:
    """A save's items are serialised once, into the buffers the upload reads
    (no copies for the native side): the save adds about the state dict's
    size to the process's peak memory (copies made it 3x)."""
    mib = 128
    done = subprocess.run([sys.executable, "-c", _SAVE_MEMORY, str(mib), str(tmp_path)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    added = float(done.stdout.split()[-1])
    assert added < 2.0, f"a save of {mib} MiB added {added:.2f}x its size to peak memory"


def test_reader_fetches_only_the_items_loaded(tmp_path: Path) -> None:
    """Loading one small tensor of a checkpoint reads that item's bytes only,
    not the files it shares with a large one."""
    root = str(tmp_path / "ckpt")
    state = {"small": torch.arange(10.0), "large": torch.randn(512, 512)}
    dcp.save(state, storage_writer=StorageWriter(root, 1, files_per_rank=1))
    reader = StorageReader(root)
    target = {"small": torch.zeros(10)}
    dcp.load(target, storage_reader=reader)
    assert torch.equal(target["small"], state["small"])
    with spool.CheckpointManager(root) as manager:
        (data,) = [f for f in manager.read_manifest(1).files if f.path.endswith(".distcp")]
    assert 0 < reader.bytes_read < 4096 < data.size


def test_committed_step_is_refused(tmp_path: Path) -> None:
    root = str(tmp_path / "ckpt")
    dcp.save({"a": torch.ones(3)}, storage_writer=StorageWriter(root, 5))
    with pytest.raises(CheckpointException, match="step 5 .* committed already"):
        dcp.save({"a": torch.zeros(3)}, storage_writer=StorageWriter(root, 5))
    with pytest.raises(CheckpointException, match="no step to save"):
        dcp.save({"a": torch.zeros(3)}, storage_writer=StorageWriter(root))
    with pytest.raises(ValueError, match="expected a step number"):
        dcp.save({"a": torch.zeros(3)}, storage_writer=StorageWriter(root), checkpoint_id="s3://x/y")


class _RacingWriter(StorageWriter):
    """A writer whose ranks uploaded their items while another writer of the
    same step was saving too; the other one commits first (`winner` runs
    between this save's uploads and its commit)."""

    def __init__(self, *args, winner, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.winner = winner

    def finish(self, metadata, results) -> None:
        self.winner()
        super().finish(metadata, results)


def test_losing_writer_removes_only_its_own_files(tmp_path: Path) -> None:
    """Two writers of one step: the one that loses the create-only commit
    gets FileExistsError and removes the files it uploaded, and only those;
    the committed step keeps exactly the winner's bytes and verifies."""
    root = str(tmp_path / "ckpt")
    step_folder = tmp_path / "ckpt" / "step-000000000007"
    uploaded = {}

    def winner() -> None:
        uploaded["loser"] = sorted(p.relative_to(step_folder) for p in step_folder.rglob("*.distcp"))
        dcp.save({"a": torch.ones(1000)}, storage_writer=StorageWriter(root, 7))

    with pytest.raises(CheckpointException, match="AlreadyExists"):
        dcp.save({"a": torch.full((1000,), 2.0)}, storage_writer=_RacingWriter(root, 7, winner=winner))
    assert uploaded["loser"], "the losing writer uploaded nothing: the race was not tested"
    with spool.CheckpointManager(root) as manager:
        committed = sorted(Path(f.stored_path) for f in manager.read_manifest(7).files if f.path.endswith(".distcp"))
    assert not set(uploaded["loser"]) & set(committed)
    assert sorted(p.relative_to(step_folder) for p in step_folder.rglob("*.distcp")) == committed
    target = {"a": torch.zeros(1000)}
    dcp.load(target, storage_reader=StorageReader(root, 7))
    assert torch.equal(target["a"], torch.ones(1000))
    assert cli("ckpt", "verify", root).returncode == 0


def test_damaged_item_is_data_loss(tmp_path: Path) -> None:
    """A byte flipped in a stored item is refused with the item named, before DCP sees it."""
    root = str(tmp_path / "ckpt")
    dcp.save({"a": torch.arange(100.0)}, storage_writer=StorageWriter(root, 1, files_per_rank=1))
    (data,) = (tmp_path / "ckpt").rglob("*.distcp")
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(CheckpointException, match="item a .* CRC32C"):
        dcp.load({"a": torch.zeros(100)}, storage_reader=StorageReader(root))


def test_staging_dir_and_reading_a_plain_checkpoint(tmp_path: Path) -> None:
    """Items serialised into a staging folder (removed afterwards) load the
    same; a step saved by CheckpointManager.save is not taken for a DCP one."""
    root = str(tmp_path / "ckpt")
    staging = tmp_path / "staging"
    state = {"w": torch.randn(256, 16), "v": torch.randn(7)}
    dcp.save(state, storage_writer=StorageWriter(root, 1, staging_dir=staging, files_per_rank=2))
    assert list(staging.iterdir()) == []
    target = {"w": torch.zeros(256, 16), "v": torch.zeros(7)}
    dcp.load(target, storage_reader=StorageReader(root, 1))
    assert torch.equal(target["w"], state["w"]) and torch.equal(target["v"], state["v"])
    with spool.CheckpointManager(root) as manager:
        manager.save(2, {"model.pt": b"bytes"})
    with pytest.raises(CheckpointException, match="not a torch.distributed.checkpoint"):
        dcp.load(target, storage_reader=StorageReader(root))
