"""A DataLoader worker's batches of numpy records cross to the main process
in shared-memory segments that the worker reuses once the main process has
dropped a batch; a batch still held is never written over."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import spool
import spool.torch
from spool import _worker_batches

OPTIONS = dict(batch_size=4, seed=3, shuffle=False, record_type="numpy")


def _write(root: str, records: int = 120) -> str:
    # Records of different sizes, each byte its record's number: a record
    # overwritten by another batch's would show.
    with spool.ShardedWriter(f"{root}/varied", shards=2) as writer:
        for i in range(records):
            writer.write(bytes([i % 251]) * (1000 + 37 * (i % 11)))
    return writer.manifest.url


def _expected(inputs: str) -> list[bytes]:
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    return sorted(bytes(r.numpy()) for batch in spool.torch.DataLoader(dataset) for r in batch)


def _segment_inode(record: torch.Tensor) -> str:
    """The inode of the shared-memory mapping that holds ``record``."""
    address = record.data_ptr()
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            start, end = (int(bound, 16) for bound in fields[0].split("-"))
            if start <= address < end:
                return fields[4]
    raise AssertionError(f"no mapping holds {address:#x}")


@pytest.mark.parametrize("persistent", [False, True])
def test_a_worker_reuses_the_segments_of_batches_dropped(root: str, persistent: bool) -> None:
    inputs = _write(root)
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    loader = spool.torch.DataLoader(dataset, num_workers=2, persistent_workers=persistent)
    got, inodes = [], set()
    for _ in range(2):
        for batch in loader:
            inodes.add(_segment_inode(batch[0]))
            got.extend(bytes(r.numpy()) for r in batch)
            del batch
    assert sorted(got[:120]) == sorted(got[120:]) == _expected(inputs)
    # 60 batches went by; each of the 2 workers of an epoch kept at most
    # _KEPT segments (a fresh one per batch would have made 60).
    epochs_of_workers = 1 if persistent else 2
    assert len(inodes) <= 2 * epochs_of_workers * _worker_batches._KEPT


def test_batches_held_are_not_written_over(root: str) -> None:
    # The training loop keeps every batch (more than a worker keeps
    # segments): each must still hold its records at the end.
    inputs = _write(root)
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    held = list(spool.torch.DataLoader(dataset, num_workers=2))
    assert sorted(bytes(r.numpy()) for batch in held for r in batch) == _expected(inputs)
    # Every record is one byte repeated (its number), so none was overwritten.
    assert all(len(set(bytes(r.numpy()))) == 1 for batch in held for r in batch)


def test_a_record_kept_alone_keeps_its_segment_from_reuse(root: str) -> None:
    inputs = _write(root)
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    kept, copies = [], []
    for batch in spool.torch.DataLoader(dataset, num_workers=1):
        kept.append(batch[-1])  # one record of each batch, the rest dropped
        copies.append(bytes(batch[-1].numpy()))
    assert [bytes(r.numpy()) for r in kept] == copies


def test_a_segment_goes_back_when_its_last_record_is_gone() -> None:
    pool = _worker_batches._SegmentPool()
    records = [np.full(100, 1, np.uint8), np.full(50, 2, np.uint8)]
    segment = pool.take(150)
    holder = segment.numpy()[:1]
    segment[_worker_batches._HEADER:_worker_batches._HEADER + 150].numpy()[:] = np.concatenate(records)
    crossed = _worker_batches.records_of_segment(segment, [100, 50])
    assert [r.tolist() for r in crossed] == [r.tolist() for r in records]
    assert pool.take(150) is not segment, "held by the batch"
    first = crossed[0].numpy()  # a NumPy view of a record keeps it too
    del crossed
    assert holder[0] == 1
    del first
    assert holder[0] == 0
    assert pool.take(120) is segment


def test_a_forked_child_starts_with_a_pool_of_its_own() -> None:
    parent = _worker_batches._this_process_pool()
    parent.take(10)
    read, write = os.pipe()
    child = os.fork()
    if child == 0:
        os.close(read)
        fresh = _worker_batches._this_process_pool() is not parent
        os.write(write, b"1" if fresh else b"0")
        os._exit(0)
    os.close(write)
    answer = os.read(read, 1)
    os.close(read)
    os.waitpid(child, 0)
    assert answer == b"1"


def test_a_forked_child_dropping_a_batch_does_not_give_its_segment_back() -> None:
    pool = _worker_batches._SegmentPool()
    segment = pool.take(8)
    holder = segment.numpy()[:1]
    crossed = _worker_batches.records_of_segment(segment, [8])
    child = os.fork()
    if child == 0:
        del crossed  # the child's copy of the batch; the parent still holds it
        os._exit(0)
    os.waitpid(child, 0)
    assert holder[0] == 1
    del crossed
    assert holder[0] == 0
