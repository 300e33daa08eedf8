"""spool.DataLoader, parse_example and encode_example on local files and Ceph RGW."""

from __future__ import annotations

import os

import numpy as np
import pytest

import spool

FEATURES = {"label": "int64", "pixels": spool.Feature("float32", (2, 3)), "id": "bytes"}


def _example(i: int) -> bytes:
    return spool.encode_example({"label": i, "pixels": np.arange(6, dtype=np.float32) + i, "id": b"r%d" % i})


def _write_dataset(root: str, records: int = 203, shards: int = 5) -> str:
    with spool.ShardedWriter(f"{root}/train", shards=shards, compression="gzip") as writer:
        for i in range(records):
            writer.write(_example(i))
    return writer.manifest.url


def _labels(batches) -> list[int]:
    return [int(label) for batch in batches for label in batch["label"]]


def test_batches_are_dicts_of_arrays_by_the_spec(root: str) -> None:
    manifest = _write_dataset(root)
    with spool.DataLoader(manifest, batch_size=16, seed=3, features=FEATURES) as loader:
        batches = list(loader)
    assert sorted(_labels(batches)) == list(range(203))
    first = batches[0]
    assert first["label"].dtype == np.int64 and first["label"].shape == (16,)
    assert first["pixels"].dtype == np.float32 and first["pixels"].shape == (16, 2, 3)
    for label, pixels, record_id in zip(first["label"], first["pixels"], first["id"]):
        assert np.array_equal(pixels.reshape(-1), np.arange(6, dtype=np.float32) + label)
        assert record_id == b"r%d" % label
    assert batches[-1]["label"].shape == (203 % 16,)
    assert loader.epoch == 0


def test_without_a_spec_batches_are_the_records_bytes(root: str) -> None:
    manifest = _write_dataset(root, records=40, shards=2)
    with spool.DataLoader(manifest, batch_size=8, shuffle=False) as loader:
        records = [record for batch in loader for record in batch]
    assert sorted(records) == sorted(_example(i) for i in range(40))
    assert all(isinstance(record, bytes) for record in records)


def test_views_over_pooled_records_outlive_the_loader_and_return_to_the_pool(root: str) -> None:
    manifest = _write_dataset(root, records=40, shards=2)
    expected = sorted(_example(i) for i in range(40))
    for record_type, kind in (("memoryview", memoryview), ("numpy", np.ndarray)):
        loader = spool.DataLoader(manifest, batch_size=8, seed=1, record_type=record_type)
        records = [record for batch in loader for record in batch]
        assert all(isinstance(record, kind) for record in records)
        assert all(not (record.flags.writeable if kind is np.ndarray else not record.readonly) for record in records)
        pool = loader.record_pool()
        assert pool["bytes_live"] > 0  # the records held here pin their blocks
        del records[1:]
        one = records[0]
        loader.close()
        del loader
        assert bytes(one) in expected  # still valid: a view outlives its loader
        del one, records
    with spool.DataLoader(manifest, batch_size=8, seed=1, record_type="memoryview") as loader:
        records = [bytes(record) for batch in loader for record in batch]
        assert sorted(records) == expected
        # Every epoch delivered and no view held: every block is back in the pool.
        pool = loader.record_pool()
        assert pool["bytes_live"] == 0 and pool["bytes_idle"] > 0
    with pytest.raises(ValueError, match="record_type"):
        spool.DataLoader(manifest, record_type="str")


def test_fetch_chunk_sizes_the_record_pools_blocks(root: str) -> None:
    with spool.ShardedWriter(f"{root}/train", shards=2) as writer:
        for i in range(200):
            writer.write(bytes([i % 251]) * 20_000)
    manifest = writer.manifest.url
    for fetch_chunk in (256 << 10, 4 << 20):
        with spool.DataLoader(manifest, batch_size=8, seed=1, fetch_chunk=fetch_chunk) as loader:
            assert sum(len(batch) for batch in loader) == 200
            pool = loader.record_pool()
        # Blocks are a quarter of the chunk (every record fits in one).
        assert (pool["bytes_idle"] + pool["bytes_live"]) == pool["blocks_made"] * (fetch_chunk // 4)
    for bad in (0, -1):
        with pytest.raises(ValueError, match="fetch_chunk"):
            spool.DataLoader(manifest, fetch_chunk=bad)


def test_views_held_across_a_fork_are_valid_and_dropped_in_the_child(root: str) -> None:
    manifest = _write_dataset(root, records=16, shards=1)
    expected = sorted(_example(i) for i in range(16))
    with spool.DataLoader(manifest, batch_size=8, record_type="numpy") as loader:
        records = [record for batch in loader for record in batch]
    pid = os.fork()
    if pid == 0:  # the child reads and drops the parent's views (a torch worker does)
        ok = sorted(bytes(record) for record in records) == expected
        del records
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert sorted(bytes(record) for record in records) == expected


def test_resume_continues_the_uninterrupted_sequence(root: str) -> None:
    manifest = _write_dataset(root)
    options = dict(batch_size=10, seed=11, features=FEATURES, epochs=2)
    with spool.DataLoader(manifest, **options) as loader:
        uninterrupted = [batch["label"].tolist() for batch in loader]
    for stop in (1, 7, 20, 25):
        with spool.DataLoader(manifest, **options) as loader:
            for _ in range(stop):
                next(loader)
            state = loader.state()
        with spool.DataLoader(manifest, **options) as resumed:
            resumed.resume(state)
            rest = [batch["label"].tolist() for batch in resumed]
        assert rest == uninterrupted[stop:], f"resumed after {stop} batches"
    # The two epochs differ in order and each holds every record once.
    assert sorted(sum(uninterrupted[:21], [])) == list(range(203))


def test_ranks_split_each_epoch(root: str) -> None:
    manifest = _write_dataset(root)
    seen = []
    for rank in range(3):
        with spool.DataLoader(manifest, batch_size=7, features=FEATURES, rank=rank, world_size=3) as loader:
            assert loader.worker["rank"] == rank and loader.worker["source"] == "explicit"
            seen += _labels(loader)
    assert sorted(seen) == list(range(203))


def test_parse_and_encode_example() -> None:
    parsed = spool.parse_example(_example(4), FEATURES)
    assert parsed["label"] == 4 and parsed["id"] == b"r4"
    assert parsed["pixels"].tolist() == [[4, 5, 6], [7, 8, 9]]
    batch = spool.parse_examples([_example(1), _example(2)], {"label": np.int32})
    assert batch["label"].dtype == np.int32 and batch["label"].tolist() == [1, 2]
    defaulted = spool.parse_example(spool.encode_example({"other": 1.5}),
                                    {"label": spool.Feature("int64", (), default=-1),
                                     "other": "float64"})
    assert defaulted["label"] == -1 and defaulted["other"] == 1.5


def test_bad_inputs_and_specs_are_clear_errors(root: str) -> None:
    manifest = _write_dataset(root, records=20, shards=2)
    with pytest.raises(FileNotFoundError, match="missing.manifest.json"):
        spool.DataLoader(f"{root}/missing.manifest.json")
    with pytest.raises(ValueError, match=r"^cache_limit=-1: must be 0 or more$"):
        spool.DataLoader(manifest, cache_dir=f"{root}-cache", cache_limit=-1)
    with pytest.raises(ValueError, match="feature 'pixels' of example 0 in the batch has 6 values; "
                                         r"the spec's shape \(4,\) needs 4"):
        with spool.DataLoader(manifest, features={"pixels": ("float32", (4,))}) as loader:
            next(loader)
    with pytest.raises(ValueError, match="feature 'label' of example 0 in the batch is stored as int64_list; "
                                         "dtype float32 reads float_list"):
        spool.parse_example(_example(0), {"label": "float32"})
    with pytest.raises(ValueError, match="feature 'nope' of example 0 in the batch is missing"):
        spool.parse_example(_example(0), {"nope": "int64"})
    with pytest.raises(ValueError, match="feature 'label' of example 0 in the batch holds 300"):
        spool.parse_example(_example(300), {"label": "uint8"})
    with pytest.raises(ValueError, match="feature dtype 'complex64' is not one of"):
        spool.parse_example(_example(0), {"label": np.complex64})
    with pytest.raises(spool.DataLossError, match="not a tf.train.Example"):
        spool.parse_example(b"\xff\xff\xff", {"label": "int64"})
    with pytest.raises(ValueError, match="bad_shards 'ignore' is not one of fail, skip"):
        spool.DataLoader(manifest, bad_shards="ignore")
    with spool.DataLoader(manifest, batch_size=4, seed=1) as loader:
        state = loader.state()
    with spool.DataLoader(manifest, batch_size=4, seed=2) as other:
        with pytest.raises(ValueError, match="does not belong to this loader"):
            other.resume(state)
