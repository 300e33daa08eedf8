"""spool.torch.StreamingDataset through torch's DataLoader: splitting over
ranks and workers, exact resume, and spool.torch.save / load."""

from __future__ import annotations

import copy
import pickle
import warnings

import numpy as np
import pytest
import torch

import spool
import spool.torch

FEATURES = {"label": "int64", "pixels": spool.Feature("float32", (4,))}


def _write_dataset(root: str, records: int, shards: int, manifest: bool = True) -> str:
    if not manifest:
        for shard in range(shards):
            with spool.RecordWriter(f"{root}/plain/part-{shard}.tfrecord") as writer:
                for i in range(shard, records, shards):
                    writer.write(spool.encode_example({"label": i, "pixels": np.full(4, i, np.float32)}))
        return f"{root}/plain/part-*.tfrecord"
    with spool.ShardedWriter(f"{root}/train", shards=shards) as writer:
        for i in range(records):
            writer.write(spool.encode_example({"label": i, "pixels": np.full(4, i, np.float32)}))
    return writer.manifest.url


def _labels(batch) -> list[int]:
    return batch["label"].tolist()


def _epochs(inputs: str, num_workers: int, epochs: int, **options) -> list[list[list[int]]]:
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, **options)
    loader = spool.torch.DataLoader(dataset, num_workers=num_workers)
    return [[_labels(batch) for batch in loader] for _ in range(epochs)]


def test_two_ranks_two_workers_deliver_every_record_once_per_epoch(root: str) -> None:
    inputs = _write_dataset(root, records=203, shards=6)
    per_rank = [_epochs(inputs, 2, 2, batch_size=8, seed=5, rank=rank, world_size=2) for rank in range(2)]
    for epoch in range(2):
        labels = sorted(label for rank in per_rank for batch in rank[epoch] for label in batch)
        assert labels == list(range(203)), f"epoch {epoch}"
    first, second = ([label for batch in per_rank[0][e] for label in batch] for e in range(2))
    assert first != second, "each epoch has an order of its own"


def test_batches_are_dicts_of_tensors(root: str) -> None:
    inputs = _write_dataset(root, records=30, shards=2)
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=8, seed=1)
    batch = next(iter(torch.utils.data.DataLoader(dataset, batch_size=None)))
    assert isinstance(batch["pixels"], torch.Tensor) and batch["pixels"].dtype == torch.float32
    assert batch["pixels"].shape == (8, 4) and batch["label"].dtype == torch.int64
    assert torch.equal(batch["pixels"][:, 0], batch["label"].float())


@pytest.mark.parametrize("num_workers", [0, 2])
def test_numpy_records_come_as_uint8_tensors_without_a_warning(root: str, num_workers: int) -> None:
    inputs = _write_dataset(root, records=40, shards=2)
    dataset = spool.torch.StreamingDataset(inputs, batch_size=8, seed=1, shuffle=False, record_type="numpy")
    plain = spool.torch.StreamingDataset(inputs, batch_size=8, seed=1, shuffle=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # torch's "not writable" warning would fail the test
        batches = list(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=num_workers))
    got = [record for batch in batches for record in batch]
    expected = [record for batch in torch.utils.data.DataLoader(plain, batch_size=None, num_workers=num_workers)
                for record in batch]
    assert all(isinstance(r, torch.Tensor) and r.dtype == torch.uint8 and r.dim() == 1 for r in got)
    assert [bytes(r.numpy()) for r in got] == expected and len(got) == 40
    if num_workers:
        # A worker's batch crosses in one shared-memory segment, each record
        # a view of it (not a segment per record).
        mappings = [{_mapping_of(r.data_ptr()) for r in batch} for batch in batches]
        assert all(len(held) == 1 and "/dev/shm/" in held.pop() for held in mappings)


def _sizes_in_worker(batch: list) -> list:
    """A collate_fn (it runs in the worker): the batch is a list of tensors there too."""
    assert isinstance(batch, list) and all(isinstance(r, torch.Tensor) for r in batch)
    return [len(r) for r in batch]


def _first_replaced_in_worker(batch: list) -> list:
    batch[0] = torch.tensor([7, 7], dtype=torch.uint8)
    return batch


def test_numpy_records_in_a_worker_are_a_list_and_replacements_cross(root: str) -> None:
    inputs = _write_dataset(root, records=40, shards=2)
    options = dict(batch_size=8, seed=1, shuffle=False, record_type="numpy")
    expected = [[len(r) for r in batch]
                for batch in torch.utils.data.DataLoader(spool.torch.StreamingDataset(inputs, **options),
                                                         batch_size=None)]
    sizes = list(torch.utils.data.DataLoader(spool.torch.StreamingDataset(inputs, **options), batch_size=None,
                                             num_workers=2, collate_fn=_sizes_in_worker))
    assert sorted(sum(sizes, [])) == sorted(sum(expected, [])) and len(sum(sizes, [])) == 40
    replaced, at_arrival = [], []
    for batch in torch.utils.data.DataLoader(spool.torch.StreamingDataset(inputs, **options), batch_size=None,
                                             num_workers=2, collate_fn=_first_replaced_in_worker):
        replaced.append(batch)
        at_arrival.append([bytes(r.numpy()) for r in batch])
    assert all(batch[0].tolist() == [7, 7] for batch in replaced) and sum(len(b) for b in replaced) == 40
    # The other records are still views of their batch's segment, which the
    # worker must not have filled again.
    assert [[bytes(r.numpy()) for r in batch] for batch in replaced] == at_arrival


def test_epochs_reuse_the_record_pool_of_the_epoch_before(root: str) -> None:
    # Each epoch opens a new C++ loader; from the second on it takes the
    # blocks the one before filled instead of mapping new ones, and delivers
    # what a dataset that reused nothing delivers.
    with spool.ShardedWriter(f"{root}/big", shards=3) as writer:
        for i in range(300):
            writer.write(bytes([i % 251]) * 10_000)
    options = dict(batch_size=8, seed=4, shuffle_buffer=32, record_type="numpy", fetch_chunk=256 << 10,
                   memory_budget=8 << 20)

    def epoch_of(dataset: spool.torch.StreamingDataset, num_workers: int = 0) -> list:
        return [bytes(r.numpy()) for batch in spool.torch.DataLoader(dataset, num_workers=num_workers)
                for r in batch]

    dataset = spool.torch.StreamingDataset(writer.manifest.url, **options)
    got = [epoch_of(dataset)]
    pool = dataset._record_pool
    assert pool.stats()["blocks_made"] >= 8 and pool.stats()["bytes_live"] == 0
    # Nothing of epoch 0 is held: blocks live in that pool now are epoch 1's.
    batches = iter(spool.torch.DataLoader(dataset))
    second = [bytes(r.numpy()) for r in next(batches)]
    assert pool.stats()["bytes_live"] > 0
    got.append(second + [bytes(r.numpy()) for batch in batches for r in batch])
    got.append(epoch_of(dataset))
    assert pool.stats()["bytes_live"] == 0 and pool.stats()["bytes_idle"] > 0
    for epoch in range(3):
        fresh = spool.torch.StreamingDataset(writer.manifest.url, **options)
        fresh.set_epoch(epoch)
        assert got[epoch] == epoch_of(fresh), f"epoch {epoch}"
    assert len(got[0]) == 300 and got[0] != got[1]
    # The pool stays in its process: a pickled copy has none, and forked
    # workers open their own.
    assert pickle.loads(pickle.dumps(dataset))._record_pool is None
    assert copy.deepcopy(dataset)._record_pool is None
    assert sorted(epoch_of(dataset, num_workers=2)) == sorted(got[0])


def test_read_only_records_become_tensors_without_torchs_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    # torch warns once per process about read-only arrays: the first
    # conversion spends that warning, and later ones need no filter.
    monkeypatch.setattr(spool.torch, "_read_only_filter_needed", None)
    records = [np.frombuffer(bytes([i]) * 5, np.uint8) for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(2):
            tensors = spool.torch._records_as_tensors(records)
            assert [t.tolist() for t in tensors] == [[i] * 5 for i in range(3)]
            assert spool.torch._read_only_filter_needed is False
        assert torch.from_numpy(records[0]).tolist() == [0] * 5  # spent: no warning raised


def test_memoryview_records_are_refused_with_what_to_use(root: str) -> None:
    inputs = _write_dataset(root, records=8, shards=1)
    with pytest.raises(ValueError, match="record_type='numpy'"):
        spool.torch.StreamingDataset(inputs, batch_size=8, record_type="memoryview")


@pytest.mark.parametrize("num_workers", [0, 2, 3])
def test_resume_continues_the_uninterrupted_sequence(root: str, num_workers: int) -> None:
    # 201 records over 2 or 3 workers in batches of 10: the workers' streams
    # end at different batches, so resuming near the end of the epoch must
    # follow torch's order after a worker has dropped out.
    inputs = _write_dataset(root, records=201, shards=4)
    options = dict(batch_size=10, seed=9)
    uninterrupted = _epochs(inputs, num_workers, 2, **options)
    flat = [batch for epoch in uninterrupted for batch in epoch]
    assert sorted(sum(uninterrupted[0], [])) == list(range(201))
    for stop in (0, 3, len(uninterrupted[0]) - 2, len(uninterrupted[0]) - 1, len(uninterrupted[0])):
        dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, **options)
        loader = spool.torch.DataLoader(dataset, num_workers=num_workers)
        batches = iter(loader)
        taken = [_labels(next(batches)) for _ in range(stop)]
        state = loader.state_dict()
        assert state["batches"] == stop and state["epoch"] == 0

        resumed_dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, **options)
        resumed = spool.torch.DataLoader(resumed_dataset, num_workers=num_workers)
        resumed.load_state_dict(state)
        rest = [_labels(batch) for _ in range(2) for batch in resumed]
        assert taken + rest == flat, f"resumed after {stop} batches with {num_workers} workers"


def test_resume_without_record_counts(root: str) -> None:
    # Plain shards (no manifest, no index): with several workers the dataset
    # counts records at open so every worker's stream length is known.
    inputs = _write_dataset(root, records=95, shards=3, manifest=False)
    uninterrupted = _epochs(inputs, 2, 1, batch_size=10, seed=2)[0]
    assert sorted(sum(uninterrupted, [])) == list(range(95))
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=10, seed=2)
    loader = spool.torch.DataLoader(dataset, num_workers=2)
    loader.load_state_dict({**loader.state_dict(), "batches": 7})
    assert [_labels(batch) for batch in loader] == uninterrupted[7:]


def test_state_of_another_shape_is_refused(root: str) -> None:
    inputs = _write_dataset(root, records=40, shards=2)
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=4, seed=1)
    state = spool.torch.DataLoader(dataset, num_workers=2).state_dict()
    other = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=8, seed=1)
    with pytest.raises(ValueError, match="batch_size=4 but this dataset has batch_size=8"):
        other.load_state_dict(state)
    fewer = spool.torch.DataLoader(spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=4, seed=1),
                                   num_workers=1)
    fewer.load_state_dict(state)
    with pytest.raises(ValueError, match="taken with 2 DataLoader workers"):
        next(iter(fewer))
    with pytest.raises(ValueError, match="give batch_size to the StreamingDataset"):
        spool.torch.DataLoader(dataset, batch_size=4)


def test_persistent_workers_get_each_epochs_order(root: str) -> None:
    # torch's own DataLoader with persistent_workers keeps the workers' copies
    # of the dataset from epoch 0; set_epoch in the main process must still
    # reach them, or epoch 1 silently repeats epoch 0's order.
    inputs = _write_dataset(root, records=96, shards=4)
    expected = _epochs(inputs, 2, 2, batch_size=8, seed=3)  # fresh workers each epoch
    assert expected[0] != expected[1]
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=8, seed=3)
    loader = torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=2, persistent_workers=True)
    got = []
    for epoch in range(2):
        dataset.set_epoch(epoch)
        got.append([_labels(batch) for batch in loader])
    assert got == expected
    workers = loader._iterator._workers  # the same processes served both epochs
    assert len(workers) == 2 and all(worker.is_alive() for worker in workers)


def test_persistent_workers_resume_through_spools_dataloader(root: str) -> None:
    inputs = _write_dataset(root, records=96, shards=4)
    expected = _epochs(inputs, 2, 3, batch_size=8, seed=4)
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=8, seed=4)
    loader = spool.torch.DataLoader(dataset, num_workers=2, persistent_workers=True)
    assert [_labels(batch) for batch in loader] == expected[0]
    batches = iter(loader)
    assert [_labels(next(batches)) for _ in range(5)] == expected[1][:5]
    state = loader.state_dict()
    del batches
    # A state loaded while the workers are alive reaches them too.
    loader.load_state_dict({**state, "batches": 2})
    assert [_labels(batch) for batch in loader] == expected[1][2:]
    assert [_labels(batch) for batch in loader] == expected[2]


def test_state_dict_is_what_the_docs_say(root: str) -> None:
    inputs = _write_dataset(root, records=40, shards=2)
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=4, seed=1)
    loader = spool.torch.DataLoader(dataset, num_workers=2)
    next(iter(loader))
    assert loader.state_dict() == {"version": 2, "epoch": 0, "batches": 1, "num_workers": 2, "seed": 1,
                                   "batch_size": 4, "rank": 0, "world_size": 1, "partitions": 0,
                                   "global_batch_size": None, "fingerprint": dataset.fingerprint}
    assert len(dataset.fingerprint) == 16
    assert (dataset.rank, dataset.world_size) == (0, 1)
    ranked = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=4, seed=1, rank=1, world_size=2)
    assert ranked.state_dict()["rank"] == 1 and ranked.state_dict()["world_size"] == 2
    with pytest.raises(ValueError, match="world_size=2 but this dataset has world_size=1"):
        dataset.load_state_dict(ranked.state_dict())


def test_consumed_per_worker_follows_torchs_turns() -> None:
    # (batches each worker delivered, whose turn is next)
    assert spool.torch.consumed_per_worker(5, [3, 3]) == ([3, 2], 1)
    assert spool.torch.consumed_per_worker(4, [3, 3]) == ([2, 2], 0)
    assert spool.torch.consumed_per_worker(5, [1, 4]) == ([1, 4], 0)
    assert spool.torch.consumed_per_worker(4, [2, 1, 3]) == ([2, 1, 1], 2)
    assert spool.torch.consumed_per_worker(5, [2, 1, 3]) == ([2, 1, 2], 2)
    assert spool.torch.consumed_per_worker(6, [2, 1, 3]) == ([2, 1, 3], 0)
    assert spool.torch.consumed_per_worker(3, [None, None]) == ([2, 1], 1)
    with pytest.raises(ValueError, match="more than the epoch has"):
        spool.torch.consumed_per_worker(7, [2, 1, 3])


def test_save_and_load_stream_a_state_dict(root: str) -> None:
    model = torch.nn.Linear(32, 4)
    spool.torch.save(model.state_dict(), f"{root}/model.pt")
    loaded = spool.torch.load(f"{root}/model.pt", map_location="cpu")
    assert all(torch.equal(loaded[name], value) for name, value in model.state_dict().items())
    with pytest.raises(FileNotFoundError):
        spool.torch.load(f"{root}/missing.pt")


def _mapping_of(address: int) -> str:
    """The /proc/self/maps line of the mapping that holds ``address`` ("" if none)."""
    with open("/proc/self/maps") as maps:
        for line in maps:
            start, end = (int(bound, 16) for bound in line.split()[0].split("-"))
            if start <= address < end:
                return line
    return ""


def test_load_with_mmap_maps_the_fetched_object(root: str) -> None:
    state = {"weight": torch.arange(1 << 20, dtype=torch.float32), "bias": torch.ones(7)}
    spool.torch.save(state, f"{root}/mapped.pt")

    copied = spool.torch.load(f"{root}/mapped.pt")
    assert "spool-torch-load" not in _mapping_of(copied["weight"].data_ptr())

    mapped = spool.torch.load(f"{root}/mapped.pt", mmap=True, map_location="cpu")
    assert all(torch.equal(mapped[name], value) for name, value in state.items())
    # The tensors are views of the fetched bytes, not copies of them.
    assert "/memfd:spool-torch-load" in _mapping_of(mapped["weight"].data_ptr())
    mapped["weight"][0] = -1  # copied on write, like a tensor mapped from a file
    assert mapped["weight"][0] == -1 and torch.equal(mapped["weight"][1:], state["weight"][1:])
    # torch's own default for mmap is followed too.
    from torch.utils.serialization import config
    config.load.mmap = True
    try:
        by_default = spool.torch.load(f"{root}/mapped.pt")
    finally:
        config.load.mmap = False
    assert "/memfd:spool-torch-load" in _mapping_of(by_default["bias"].data_ptr())
    assert torch.equal(by_default["bias"], state["bias"])
    # The shared memory lives as long as its tensors, and no longer.
    del mapped, by_default
    with open("/proc/self/maps") as maps:
        assert "spool-torch-load" not in maps.read()
    with pytest.raises(FileNotFoundError):
        spool.torch.load(f"{root}/missing.pt", mmap=True)
