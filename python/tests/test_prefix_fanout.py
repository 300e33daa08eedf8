"""Prefix fan-out: a dataset whose shards are spread over N key prefixes loads
exactly as one without, on local files and Ceph RGW, whether written by
spool.ShardedWriter or by ``spool convert --prefix-fanout`` (in one run, or
in parallel tasks followed by ``spool records manifest --prefix-fanout``)."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import tempfile

import spool

RECORDS = 240
SHARDS = 12
FANOUT = 4


def _record(i: int) -> bytes:
    return spool.encode_example({"label": i, "id": b"r%d" % i})


def _write(prefix: str, fanout: int) -> str:
    with spool.ShardedWriter(prefix, shards=SHARDS, prefix_fanout=fanout, write_index=True) as writer:
        for i in range(RECORDS):
            writer.write(_record(i))
    return writer.manifest.url


def _order(manifest: str, seed: int) -> list[int]:
    """The labels one epoch delivers, in delivery order."""
    with spool.DataLoader(manifest, batch_size=16, seed=seed, features={"label": "int64"}) as loader:
        return [int(label) for batch in loader for label in batch["label"]]


def _shard_folders(prefix: str) -> set[str]:
    """The folders directly below ``prefix/`` that hold shards."""
    return {entry.url for entry in spool.ls(prefix + "/") if entry.is_folder}


def _assert_loads_the_same(plain: str, fanned: str, fanned_prefix: str) -> None:
    for seed in (0, 7):
        order = _order(fanned, seed)
        assert order == _order(plain, seed), f"seed {seed}"
        assert sorted(order) == list(range(RECORDS))
    folders = _shard_folders(fanned_prefix)
    assert len(folders) == FANOUT, folders
    shards = [entry.url for entry in spool.ls(fanned_prefix + "/", recursive=True)
              if entry.url.endswith(".tfrecord")]
    assert len(shards) == SHARDS
    # Every shard is below one of the folders, SHARDS / FANOUT in each.
    for folder in folders:
        assert sum(shard.startswith(folder) for shard in shards) == SHARDS // FANOUT


def test_sharded_writer_fanout_loads_exactly_as_without(root: str) -> None:
    plain = _write(f"{root}/plain/train", 0)
    fanned = _write(f"{root}/fanned/train", FANOUT)
    with spool.open(fanned, "rb") as f:
        names = [shard["name"] for shard in json.loads(f.read())["shards"]]
    assert all(name.startswith("train/") and name.count("/") == 2 for name in names), names
    _assert_loads_the_same(plain, fanned, f"{root}/fanned/train")


def test_convert_prefix_fanout_loads_exactly_as_without(root: str) -> None:
    cli = os.environ.get("SPOOL_CLI")
    assert cli, "SPOOL_CLI must name the built spool command (build/cli/spool)"
    with tempfile.TemporaryDirectory() as scratch:
        table = os.path.join(scratch, "table.jsonl")
        with open(table, "w", encoding="utf-8") as f:
            for i in range(RECORDS):
                f.write(json.dumps({"label": i, "text": f"row {i}"}) + "\n")
        for name, extra in (("plain", []), ("fanned", ["--prefix-fanout", str(FANOUT)])):
            subprocess.run([cli, "convert", table, f"{root}/cli-{name}/train", "--shards", str(SHARDS), *extra],
                           check=True, capture_output=True, text=True)
        # Parallel tasks with fan-out, then the manifest from their shards.
        for task in range(3):
            subprocess.run([cli, "convert", table, f"{root}/cli-tasks/train", "--shards", str(SHARDS),
                            "--prefix-fanout", str(FANOUT), "--task-index", str(task), "--task-count", "3"],
                           check=True, capture_output=True, text=True)
        subprocess.run([cli, "records", "manifest", f"{root}/cli-tasks/train", "--shards", str(SHARDS),
                        "--prefix-fanout", str(FANOUT)], check=True, capture_output=True, text=True)
        refused = subprocess.run([cli, "records", "manifest", f"{root}/cli-tasks/train", "--prefix-fanout", "2"],
                                 capture_output=True, text=True)
        assert refused.returncode != 0 and "--shards" in refused.stderr, refused.stderr
    _assert_loads_the_same(f"{root}/cli-plain/train.manifest.json", f"{root}/cli-fanned/train.manifest.json",
                           f"{root}/cli-fanned/train")
    _assert_loads_the_same(f"{root}/cli-plain/train.manifest.json", f"{root}/cli-tasks/train.manifest.json",
                           f"{root}/cli-tasks/train")


def test_checkpoint_ranks_fan_out_and_restore_without_the_option(root: str, tmp_path) -> None:
    """Three ranks save one step with ``rank_prefix_fanout``: their files
    land under that many key prefixes, and a manager opened without the
    option restores every rank's part from the manifest's names."""
    world, fanout, ckpt = 3, 2, f"{root}/ckpt"
    with contextlib.ExitStack() as job:  # every rank opens at start-up, as in a job
        managers = [job.enter_context(spool.CheckpointManager(ckpt, rank=rank, world_size=world,
                                                              rank_prefix_fanout=fanout, part_timeout_seconds=30))
                    for rank in range(world)]
        for rank in (1, 2, 0):  # rank 0 commits once the others' parts are stored
            managers[rank].save(4, {"weights.bin": b"w%d" % rank * 1000}, {"rank": str(rank)})
    keys = [entry.url for entry in spool.ls(f"{ckpt}/", recursive=True)
            if "/rank-" in entry.url and "/parts/" not in entry.url]  # the files, not the part markers
    labels = {key.split("/rank-")[0].rsplit("/", 1)[-1] for key in keys}
    assert len(labels) == fanout, keys
    assert all(not label.startswith("step-") for label in labels), keys
    with spool.CheckpointManager(ckpt) as manager:
        assert manager.latest() == 4
        for rank in range(world):
            folder = tmp_path / f"rank{rank}"
            restored = manager.restore(folder, rank=rank)
            assert restored.metadata["rank"] == str(rank)
            assert (folder / "weights.bin").read_bytes() == b"w%d" % rank * 1000


def test_dcp_writer_fans_out_and_loads(root: str) -> None:
    """A DCP save with ``rank_prefix_fanout`` loads back with a plain reader."""
    import torch
    import torch.distributed.checkpoint as dcp
    from spool.torch.dcp import StorageReader, StorageWriter

    state = {"w": torch.arange(1000.0), "b": torch.ones(7)}
    dcp.save(state, storage_writer=StorageWriter(f"{root}/dcp", 1, rank_prefix_fanout=2, files_per_rank=2))
    loaded = {"w": torch.zeros(1000), "b": torch.zeros(7)}
    dcp.load(loaded, storage_reader=StorageReader(f"{root}/dcp", 1))
    assert torch.equal(loaded["w"], state["w"]) and torch.equal(loaded["b"], state["b"])
