"""spool.torch.StreamingDataset's elastic mode (partitions, global batch
size), torchdata's StatefulDataLoader, and the checks that keep a state on
the dataset and job it belongs to (the inputs' fingerprint; the rank and
world size read from the launcher's environment)."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

import numpy as np
import pytest
import torch
from torchdata.stateful_dataloader import StatefulDataLoader

import spool
import spool.torch

FEATURES = {"label": "int64", "pixels": spool.Feature("float32", (4,))}
PARTITIONS = 12
GLOBAL_BATCH = 24  # 2 records per partition per step


def _write_dataset(prefix: str, records: int, shards: int, offset: int = 0) -> str:
    with spool.ShardedWriter(prefix, shards=shards) as writer:
        for i in range(offset, offset + records):
            writer.write(spool.encode_example({"label": i, "pixels": np.full(4, i, np.float32)}))
    return writer.manifest.url


def _labels(batch: Dict[str, Any]) -> List[int]:
    return batch["label"].tolist()


def _elastic(inputs: str, rank: int, world_size: int, **options: Any) -> spool.torch.StreamingDataset:
    return spool.torch.StreamingDataset(inputs, features=FEATURES, seed=11, partitions=PARTITIONS,
                                        global_batch_size=GLOBAL_BATCH, rank=rank, world_size=world_size,
                                        shuffle_buffer=8, **options)


class _Job:
    """The ranks of a job in one process, each with its spool.torch.DataLoader,
    stepped together: a global batch is every rank's batch in rank order."""

    def __init__(self, inputs: str, world_size: int, num_workers: int = 0,
                 state: Optional[Dict[str, Any]] = None, states: Optional[List[Dict[str, Any]]] = None) -> None:
        self.loaders = []
        for rank in range(world_size):
            loader = spool.torch.DataLoader(_elastic(inputs, rank, world_size), num_workers=num_workers)
            if states is not None:  # each new rank gets some old rank's state
                loader.load_state_dict(states[rank % len(states)])
            elif state is not None:
                loader.load_state_dict(state)
            self.loaders.append(loader)
        self.iterators = [iter(loader) for loader in self.loaders]

    def steps(self, count: Optional[int] = None) -> List[List[int]]:
        out = []
        while count is None or len(out) < count:
            batches = [next(iterator, None) for iterator in self.iterators]
            if batches[0] is None:
                assert all(batch is None for batch in batches), "ranks disagree on the end of the epoch"
                break
            out.append([label for batch in batches for label in _labels(batch)])
        return out

    def next_epoch(self) -> None:
        self.iterators = [iter(loader) for loader in self.loaders]


def test_elastic_global_batches_are_the_same_for_every_world_size_dividing_the_partitions(tmp_path) -> None:
    inputs = _write_dataset(f"{tmp_path}/train", records=150, shards=7)
    reference = _Job(inputs, 1).steps()
    # 150 records over 12 partitions (12 or 13 each), 2 per step: 7 steps,
    # the last one short.
    assert len(reference) == 7 and all(len(step) == GLOBAL_BATCH for step in reference[:6])
    assert sorted(label for step in reference for label in step) == list(range(150))
    for world_size in (2, 3, 4, 6):
        assert _Job(inputs, world_size).steps() == reference, f"world size {world_size}"
    # DataLoader workers split a rank further; spool.torch.DataLoader joins
    # their shares, so each rank's batch is still its share of the step.
    assert _Job(inputs, 2, num_workers=2).steps() == reference


@pytest.mark.parametrize("before, after, steps", [(4, 2, 3), (2, 3, 2), (3, 1, 6), (1, 4, 0)])
def test_elastic_resume_on_another_world_size_delivers_the_rest_exactly_once(root: str, before: int, after: int,
                                                                            steps: int) -> None:
    inputs = _write_dataset(f"{root}/train", records=150, shards=7)
    job = _Job(inputs, 1)
    reference = [job.steps()]
    job.next_epoch()
    reference.append(job.steps())
    assert reference[0] != reference[1], "each epoch has an order of its own"

    first = _Job(inputs, before)
    delivered = first.steps(steps)
    states = [loader.state_dict() for loader in first.loaders]
    assert all(state == {**states[0], "rank": rank, "batch_size": GLOBAL_BATCH // before}
               for rank, state in enumerate(states))
    assert states[0]["batches"] == steps and states[0]["partitions"] == PARTITIONS
    del first

    second = _Job(inputs, after, states=states)
    rest = second.steps()
    labels = sorted(label for step in delivered + rest for label in step)
    assert labels == list(range(150)), f"every record of the epoch once over {before} then {after} ranks"
    assert delivered + rest == reference[0], "the global batches of an uninterrupted run"
    second.next_epoch()
    assert second.steps() == reference[1]


def test_elastic_resume_with_other_dataloader_workers(tmp_path) -> None:
    # A state taken with 2 ranks x 2 workers resumes on 3 ranks x 2 workers
    # and on 1 rank without workers: a state is (epoch, steps).
    inputs = _write_dataset(f"{tmp_path}/train", records=150, shards=7)
    reference = _Job(inputs, 1).steps()
    first = _Job(inputs, 2, num_workers=2)
    delivered = first.steps(4)
    state = first.loaders[1].state_dict()
    del first
    assert _Job(inputs, 3, num_workers=2, state=state).steps() == reference[4:]
    assert _Job(inputs, 1, state=state).steps() == reference[4:]
    assert delivered == reference[:4]


def test_elastic_options_are_checked(tmp_path) -> None:
    inputs = _write_dataset(f"{tmp_path}/train", records=20, shards=2)
    with pytest.raises(ValueError, match="instead of batch_size"):
        spool.torch.StreamingDataset(inputs, batch_size=4, partitions=4, global_batch_size=8)
    with pytest.raises(ValueError, match="positive multiple of partitions"):
        spool.torch.StreamingDataset(inputs, partitions=4, global_batch_size=10)
    with pytest.raises(ValueError, match=r"world size \(5\) must divide partitions \(12\)"):
        _elastic(inputs, 0, 5)
    with pytest.raises(ValueError, match=r"world size x num_workers \(2 x 4\) must divide partitions \(12\)"):
        spool.torch.DataLoader(_elastic(inputs, 0, 2), num_workers=4)
    fixed = spool.torch.StreamingDataset(inputs, features=FEATURES, batch_size=4, seed=11)
    with pytest.raises(ValueError, match="saved in elastic mode with partitions=12 but this dataset is in fixed mode"):
        fixed.load_state_dict(_elastic(inputs, 0, 1).state_dict())


# (a): the rank and world size read from the launcher's environment.

def _from_environment(monkeypatch, rank: int, world_size: int, inputs: str, **options: Any):
    monkeypatch.setenv("RANK", str(rank))
    monkeypatch.setenv("WORLD_SIZE", str(world_size))
    return spool.torch.StreamingDataset(inputs, features=FEATURES, seed=11, **options)


def test_fixed_state_from_the_environment_refuses_another_world_size(tmp_path, monkeypatch) -> None:
    inputs = _write_dataset(f"{tmp_path}/train", records=60, shards=3)
    dataset = _from_environment(monkeypatch, 0, 2, inputs, batch_size=4)
    assert (dataset.rank, dataset.world_size) == (0, 2)
    loader = spool.torch.DataLoader(dataset)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    assert (state["rank"], state["world_size"]) == (0, 2)
    alone = _from_environment(monkeypatch, 0, 1, inputs, batch_size=4)
    with pytest.raises(ValueError, match="world_size=2 but this dataset has world_size=1"):
        alone.load_state_dict(state)
    # A state that does not say its world (as earlier versions wrote it when
    # the environment gave the rank) is refused too, not taken for this one.
    with pytest.raises(ValueError, match="does not say which world_size"):
        alone.load_state_dict({**state, "version": 1, "rank": None, "world_size": None})


def test_elastic_state_from_the_environment_continues_on_another_world_size(tmp_path, monkeypatch) -> None:
    inputs = _write_dataset(f"{tmp_path}/train", records=150, shards=7)
    reference = _Job(inputs, 1).steps()
    options = dict(partitions=PARTITIONS, global_batch_size=GLOBAL_BATCH, shuffle_buffer=8)
    ranks = [spool.torch.DataLoader(_from_environment(monkeypatch, rank, 2, inputs, **options)) for rank in range(2)]
    iterators = [iter(loader) for loader in ranks]
    delivered = [_labels(next(iterators[0])) + _labels(next(iterators[1])) for _ in range(3)]
    state = ranks[0].state_dict()
    alone = spool.torch.DataLoader(_from_environment(monkeypatch, 0, 1, inputs, **options))
    alone.load_state_dict(state)
    rest = [_labels(batch) for batch in alone]
    assert delivered + rest == reference


# (b): a state names the inputs it was taken on.

def test_state_of_another_dataset_is_refused(root: str) -> None:
    first = _write_dataset(f"{root}/a/train", records=60, shards=3)
    other = _write_dataset(f"{root}/b/train", records=60, shards=3, offset=1000)
    for options in (dict(batch_size=4), dict(partitions=4, global_batch_size=8)):
        dataset = spool.torch.StreamingDataset(first, features=FEATURES, seed=11, **options)
        loader = spool.torch.DataLoader(dataset)
        next(iter(loader))
        state = loader.state_dict()
        assert len(state["fingerprint"]) == 16 and state["fingerprint"] == dataset.fingerprint
        elsewhere = spool.torch.StreamingDataset(other, features=FEATURES, seed=11, **options)
        with pytest.raises(ValueError, match="taken on other inputs"):
            elsewhere.load_state_dict(state)


def test_worker_state_of_another_dataset_is_refused(tmp_path) -> None:
    first = _write_dataset(f"{tmp_path}/a/train", records=60, shards=3)
    other = _write_dataset(f"{tmp_path}/b/train", records=60, shards=3, offset=1000)
    loader = StatefulDataLoader(spool.torch.StreamingDataset(first, features=FEATURES, seed=11, batch_size=4),
                                batch_size=None, num_workers=2)
    batches = iter(loader)
    next(batches)
    state = loader.state_dict()
    del batches
    worker_state = state["_snapshot"]["_worker_snapshots"]["worker_0"]["dataset_state"]
    assert worker_state["worker"] == 0 and worker_state["loader"].startswith("spool-loader/1 ")
    with pytest.raises(ValueError, match="one DataLoader worker's"):
        loader.dataset.load_state_dict(worker_state)  # in the main process
    resumed = StatefulDataLoader(spool.torch.StreamingDataset(other, features=FEATURES, seed=11, batch_size=4),
                                 batch_size=None, num_workers=2)
    resumed.load_state_dict(state)
    with pytest.raises(ValueError, match="taken on other inputs"):
        next(iter(resumed))


# torchdata's StatefulDataLoader.

def _stateful(inputs: str, num_workers: int, persistent: bool, **options: Any) -> StatefulDataLoader:
    dataset = spool.torch.StreamingDataset(inputs, features=FEATURES, seed=11, **options)
    return StatefulDataLoader(dataset, batch_size=None, num_workers=num_workers,
                              persistent_workers=persistent and num_workers > 0)


def _run(loader: StatefulDataLoader, epochs: range, take: Optional[int] = None) -> List[List[int]]:
    out = []
    for epoch in epochs:
        loader.dataset.set_epoch(epoch)
        for batch in loader:
            out.append(_labels(batch))
            if take is not None and len(out) == take:
                return out
    return out


@pytest.mark.parametrize("num_workers, persistent", [(0, False), (2, False), (2, True), (4, False), (4, True)])
def test_stateful_dataloader_resumes_exactly(tmp_path, num_workers: int, persistent: bool) -> None:
    # 203 records in 5 uneven shards, batches of 8: the workers' streams end
    # at different batches, so a resume late in the epoch follows torch's
    # turns after some worker dropped out.
    inputs = _write_dataset(f"{tmp_path}/train", records=203, shards=5)
    options = dict(batch_size=8)
    uninterrupted = _run(_stateful(inputs, num_workers, persistent, **options), range(2))
    per_epoch = len(uninterrupted) // 2
    assert sorted(label for batch in uninterrupted[:per_epoch] for label in batch) == list(range(203))
    for stop in (3, 7, per_epoch - 1, per_epoch + 2):
        loader = _stateful(inputs, num_workers, persistent, **options)
        taken = _run(loader, range(2), take=stop)
        state = loader.state_dict()
        del loader
        resumed = _stateful(inputs, num_workers, persistent, **options)
        resumed.load_state_dict(state)
        epoch = stop // per_epoch  # the epoch the state is in, which the training loop keeps itself
        rest = _run(resumed, range(epoch, 2))
        assert taken + rest == uninterrupted, f"resumed after {stop} batches with {num_workers} workers"


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stateful_dataloader_resumes_elastic_mode(tmp_path, num_workers: int) -> None:
    inputs = _write_dataset(f"{tmp_path}/train", records=150, shards=7)
    options = dict(partitions=PARTITIONS, global_batch_size=GLOBAL_BATCH, shuffle_buffer=8, rank=1, world_size=3)
    uninterrupted = _run(_stateful(inputs, num_workers, False, **options), range(1))
    loader = _stateful(inputs, num_workers, False, **options)
    taken = _run(loader, range(1), take=5)
    state = loader.state_dict()
    del loader
    resumed = _stateful(inputs, num_workers, False, **options)
    resumed.load_state_dict(state)
    assert taken + _run(resumed, range(1)) == uninterrupted
