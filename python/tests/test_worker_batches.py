"""A DataLoader worker's batches of numpy records cross to the main process
in shared-memory segments that the worker reuses once the main process has
dropped a batch; a batch still held is never written over."""

from __future__ import annotations

import copy
import os
import pickle

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


def _cross(records: list) -> tuple:
    """A worker's batch as the main process receives it (in this process),
    and its segment's holder byte."""
    batch = _worker_batches.SharedRecords(records)
    rebuild, args = _worker_batches._reduce_for_the_main_process(batch)
    return rebuild(*args), batch._fill.holder


def test_a_segment_goes_back_when_its_last_record_is_gone() -> None:
    records = [np.full(100, 1, np.uint8), np.full(50, 2, np.uint8)]
    pool = _worker_batches._this_process_pool()
    crossed, holder = _cross(records)
    assert [r.tolist() for r in crossed] == [r.tolist() for r in records]
    assert holder[0] == 1
    first = crossed[0].numpy()  # a NumPy view of a record keeps it too
    del crossed
    assert holder[0] == 1
    del first
    assert holder[0] == 0
    # Only now, with no record left on either side, may the segment be filled again.
    again, _, _ = pool.fill(records)
    assert again.holder is holder


def test_a_batch_the_worker_still_holds_is_not_filled_again() -> None:
    # A wrapping dataset that keeps a batch after the main process dropped
    # its copy (to yield it again, say).
    kept = _worker_batches.SharedRecords([np.full(10, 3, np.uint8)])
    rebuild, args = _worker_batches._reduce_for_the_main_process(kept)
    received = rebuild(*args)
    del received
    assert kept._fill.holder[0] == 0
    other = _worker_batches.SharedRecords([np.full(10, 4, np.uint8)])
    assert other._fill.segment is not kept._fill.segment
    assert kept[0].tolist() == [3] * 10


def test_a_batch_that_crosses_twice_is_never_filled_again() -> None:
    batch = _worker_batches.SharedRecords([np.full(10, 5, np.uint8)])
    segment = batch._fill.segment
    crossings = [_worker_batches._reduce_for_the_main_process(batch) for _ in range(2)]
    first, second = (rebuild(*args) for rebuild, args in crossings)
    del batch, first
    fills = [_worker_batches.SharedRecords([np.full(10, 6, np.uint8)]) for _ in range(_worker_batches._KEPT + 1)]
    assert all(f._fill.segment is not segment for f in fills)
    assert second[0].tolist() == [5] * 10


def test_a_record_that_leaves_its_batch_crosses_as_a_copy(root: str) -> None:
    # A collate_fn that puts records elsewhere than the batch's list: torch
    # pickles those itself, and must not carry views of the segment.
    inputs = _write(root)
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    got = []
    for item in torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=1, collate_fn=_with_first_apart):
        got.append(item)
    expected = [bytes(item["first"].numpy()) for item in got]
    assert [bytes(item["records"][0].numpy()) for item in got] == expected
    assert all(len(set(bytes(r.numpy()))) == 1 for item in got for r in item["records"])


def _with_first_apart(batch: list) -> dict:
    return {"records": batch, "first": batch[0]}


def test_the_file_system_strategy_keeps_no_segment(root: str) -> None:
    inputs = _write(root)
    torch.multiprocessing.set_sharing_strategy("file_system")
    try:
        dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
        before = set(os.listdir("/dev/shm"))
        batches = sum(1 for _ in spool.torch.DataLoader(dataset, num_workers=2))
        left = {name for name in set(os.listdir("/dev/shm")) - before if name.startswith("torch_")}
    finally:
        torch.multiprocessing.set_sharing_strategy("file_descriptor")
    assert batches == 30 and not left


def test_a_forked_child_starts_with_a_pool_of_its_own() -> None:
    parent = _worker_batches._this_process_pool()
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


def test_batches_received_before_a_fork_are_never_given_back() -> None:
    # The child has copies of them over the same pages, which it may read
    # after the parent dropped its own (a batch handed to a forked process).
    before, held_before = _cross([np.full(8, 7, np.uint8)])
    child = os.fork()
    if child == 0:
        del before  # the child's copy: must not give the segment back either
        os._exit(0)
    os.waitpid(child, 0)
    del before
    assert held_before[0] == 1
    after, held_after = _cross([np.full(8, 8, np.uint8)])
    del after
    assert held_after[0] == 0


def test_a_batch_made_into_something_else_in_the_worker_frees_its_segment() -> None:
    # A collate_fn that pads or stacks the records: the batch never crosses,
    # and its segment is free again once the records are gone.
    batch = _worker_batches.SharedRecords([np.full(10, 9, np.uint8)])
    segment = batch._fill.segment
    padded = torch.stack(list(batch))
    del batch
    again = _worker_batches.SharedRecords([np.full(10, 1, np.uint8)])
    assert again._fill.segment is segment and padded.tolist() == [[9] * 10]


def _moved_to_shared_memory(batch: list) -> list:
    for record in batch:
        record.share_memory_()  # torch copies each record and points it at the copy
    return batch


def _first_resized(batch: list) -> list:
    batch[0].resize_(16)
    return batch


@pytest.mark.parametrize("collate", [_moved_to_shared_memory, _first_resized])
def test_records_changed_in_the_worker_cross_as_they_are(root: str, collate) -> None:
    # The batch no longer holds its records as made: it crosses as a list
    # (torch sends each record), and its segment is not filled again while
    # the batch waits to be sent.
    inputs = _write(root)
    dataset = spool.torch.StreamingDataset(inputs, **OPTIONS)
    got = list(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=1, collate_fn=collate))
    assert len(got) == 30
    if collate is _moved_to_shared_memory:
        assert sorted(bytes(r.numpy()) for batch in got for r in batch) == _expected(inputs)
    else:
        assert all(batch[0].shape == (16,) for batch in got)
        assert all(len(set(bytes(r.numpy()))) == 1 for batch in got for r in batch[1:])


def test_plain_pickling_in_the_worker_copies_the_records() -> None:
    batch = _worker_batches.SharedRecords([np.full(10, 2, np.uint8), np.full(3, 4, np.uint8)])
    for copied in (pickle.loads(pickle.dumps(batch)), copy.deepcopy(batch)):
        assert type(copied) is list and [r.tolist() for r in copied] == [[2] * 10, [4] * 3]
        assert copied[0].data_ptr() != batch[0].data_ptr()
    assert len(pickle.dumps(batch)) < 4096  # not the whole padded segment
    assert batch._fill.holder[0] == 0 and batch._fill.crossings == 0


def test_a_full_pool_lets_the_segment_filled_longest_ago_go() -> None:
    pool = _worker_batches._SegmentPool()
    received = []
    for i in range(_worker_batches._KEPT):  # every kept segment held by the main process
        batch = _worker_batches.SharedRecords.__new__(_worker_batches.SharedRecords)
        fill, whole, tensors = pool.fill([np.full(8, i, np.uint8)])
        list.__init__(batch, tensors)
        batch._fill, batch._whole = fill, whole
        rebuild, args = _worker_batches._reduce_for_the_main_process(batch)
        received.append((rebuild(*args), fill.segment))
        del batch, fill, whole, tensors
    newest, _, _ = pool.fill([np.full(8, 9, np.uint8)])
    kept = {id(segment) for segment, _, _ in pool._segments}
    assert id(received[0][1]) not in kept and id(newest.segment) in kept
    assert all(id(segment) in kept for _, segment in received[1:])
    assert received[0][0][0].tolist() == [0] * 8  # let go, not written over
