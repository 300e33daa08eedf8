"""How a DataLoader worker's batch of ``record_type="numpy"`` records
reaches the main process: copied once into a shared-memory segment that the
worker keeps and fills again once nothing can read the batch it carried.

Why keep segments: a fresh segment per batch had its pages faulted in by
the worker (about 2 us per 4 KiB page on a VM, 1.85 ms for a 3.2 MB batch)
and freed by the main process when the batch died. Both cost more than
the copy.

When a segment may be filled again (all three must hold):
- in the worker, neither the batch nor any of its records is alive (a
  finalizer on the array the records are views of says so), so a dataset
  or collate_fn that keeps a batch, or yields it again, keeps the segment;
- the batch crossed to the main process at most once, through
  multiprocessing's pickler (torch's worker queues), and there every
  record of it is gone: the segment's first byte says so (the worker sets
  it when the batch crosses, and the main process's finalizer clears it).
  A batch that crossed twice makes its segment one never filled again;
- the records cannot reach the main process any other way: in the worker
  they are tensors over NumPy arrays, not over torch's shared storage, so
  torch's pickling copies a record that leaves its batch (a collate_fn
  that puts it in a dict) into a segment of its own, as for any tensor. A
  batch crosses as its segment only while it holds its records exactly as
  made (same tensors, addresses and shapes); otherwise, and for plain
  pickling (``pickle``, ``copy.deepcopy``), it is a list of its records.

A pool keeps at most 4 segments; when all are held, a new one takes the
place of the one filled longest ago, so that a segment held for good (by
a batch the main process held when it forked) does not keep its place.

Each side writes the first byte only while it holds the segment, so no
lock is needed across processes. Within a worker the pool takes a lock
(the records' finalizer and torch's pickling run on other threads).

Fork: a pool belongs to the process that made it, and a forked child
starts with none. In the main process, batches received before a fork are
never given back (the child has copies of them over the same pages).
Only under torch's default ``file_descriptor`` sharing strategy: with
``file_system`` a kept segment would outlive the worker in /dev/shm, so
each batch takes a fresh one, as torch does.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any, List, Optional, Tuple

from multiprocessing.reduction import ForkingPickler

import numpy as np
import torch
import torch.multiprocessing

# Bytes before a batch's records: the holder byte, and 64-byte alignment.
_HEADER = 64
# Segments a worker keeps. A worker has at most torch's prefetch_factor (2
# by default) batches waiting, the training loop holds one more, and one is
# being filled: 4. Batches beyond that (a larger prefetch_factor, a loop
# that keeps batches) still cross, in segments that are not kept.
_KEPT = 4
_FREE, _HELD = 0, 1


def _new_segment(size: int) -> torch.Tensor:
    # Rounded up so that batches of slightly different sizes fit the same
    # segment; made once per kept segment, so share_memory_'s copy of the
    # empty tensor does not matter.
    size = -(-(size + size // 8) // 65536) * 65536
    return torch.empty(size, dtype=torch.uint8).share_memory_()


def _record_views(whole: np.ndarray, sizes: List[int]) -> List[np.ndarray]:
    """The records of a segment, one after another after its header. NumPy
    makes each view's base ``whole`` itself (it does not own its memory and
    its base is a tensor), so the views keep ``whole`` alive."""
    views, start = [], _HEADER
    for size in sizes:
        views.append(whole[start:start + size])
        start += size
    return views


class _Fill:
    """One batch's use of a segment, in the worker. It refers to the
    batch's records only weakly: they are the batch's to keep alive."""

    __slots__ = ("segment", "holder", "records", "sizes", "addresses", "number", "in_worker", "crossings",
                 "__weakref__")

    def __init__(self, segment: torch.Tensor, holder: np.ndarray, number: int) -> None:
        self.segment, self.holder, self.number = segment, holder, number
        self.records: Tuple["weakref.ReferenceType[torch.Tensor]", ...] = ()
        self.sizes: List[int] = []
        self.addresses: List[int] = []  # where each record starts in memory
        self.in_worker = True  # until the last record of the batch is gone here
        self.crossings = 0

    def intact(self, batch: List[Any]) -> bool:
        """Whether ``batch`` still holds exactly this fill's records, as made:
        the same tensors, over the same bytes, of the same shape (a record
        moved to shared memory, resized or set to other memory is not)."""
        if len(batch) != len(self.records):
            return False
        for mine, record, address, size in zip(batch, self.records, self.addresses, self.sizes):
            if (mine is not record() or mine.data_ptr() != address or mine.shape != (size,)
                    or mine.stride() != (1,)):
                return False
        return True


_Entry = Tuple[torch.Tensor, np.ndarray, List[Optional[_Fill]]]  # a segment, its holder byte, its last fill


class _SegmentPool:
    """One worker's kept segments."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.keeps = torch.multiprocessing.get_sharing_strategy() == "file_descriptor"
        self._lock = threading.Lock()
        self._segments: List[_Entry] = []
        self._fills = 0

    def fill(self, records: List[np.ndarray]) -> Tuple[_Fill, np.ndarray, List[torch.Tensor]]:
        """Copies ``records`` into a free segment (or a new one): the fill,
        the array the records are views of, and the records as tensors."""
        sizes = [record.size for record in records]
        need = _HEADER + sum(sizes)
        with self._lock:
            entry = next((e for e in self._segments if e[0].numel() >= need and self._free(e)), None)
            if entry is None:
                segment = _new_segment(need)
                entry = (segment, segment.numpy()[:1], [None])
                entry[1][0] = _FREE
                self._keep(entry)
            segment, holder, last = entry
            self._fills += 1
            fill = last[0] = _Fill(segment, holder, self._fills)
        whole = segment.numpy()
        if records:
            np.concatenate(records, out=whole[_HEADER:need])
        tensors = list(map(torch.from_numpy, _record_views(whole, sizes)))
        fill.records, fill.sizes = tuple(map(weakref.ref, tensors)), sizes
        fill.addresses = [record.data_ptr() for record in tensors]
        # The batch and its records keep `whole` alive; when they are all
        # gone here, only the main process (if the batch crossed) can read it.
        weakref.finalize(whole, _left_the_worker, weakref.ref(fill)).atexit = False
        return fill, whole, tensors

    def forget(self, segment: torch.Tensor) -> None:
        """Never fills ``segment`` again."""
        with self._lock:
            self._segments = [e for e in self._segments if e[0] is not segment]

    @staticmethod
    def _free(entry: _Entry) -> bool:
        _, holder, last = entry
        fill = last[0]
        return holder[0] == _FREE and (fill is None or not fill.in_worker)

    def _keep(self, entry: _Entry) -> None:
        if not self.keeps:
            return
        if len(self._segments) < _KEPT:
            self._segments.append(entry)
            return
        # Replaces a free one that was too small if there is one, else the
        # one filled longest ago: a segment held for good (a batch the main
        # process held when it forked, say) must not take a place forever.
        # Letting a segment go is always safe: whoever holds it keeps it.
        free = [i for i, kept in enumerate(self._segments) if self._free(kept)]
        oldest = free[0] if free else min(range(len(self._segments)), key=lambda i: self._number(self._segments[i]))
        self._segments[oldest] = entry

    @staticmethod
    def _number(entry: _Entry) -> int:
        fill = entry[2][0]
        return fill.number if fill is not None else 0


def _left_the_worker(fill: "weakref.ReferenceType[_Fill]") -> None:
    alive = fill()
    if alive is not None:
        alive.in_worker = False


_pool: Optional[_SegmentPool] = None


def _this_process_pool() -> _SegmentPool:
    global _pool
    if _pool is None or _pool.pid != os.getpid():
        _pool = _SegmentPool()
    return _pool


class SharedRecords(list):
    """A DataLoader worker's batch of ``record_type="numpy"`` records: a list
    of ``uint8`` tensors over a kept shared-memory segment into which the
    records were copied once. It crosses to the main process as that one
    segment (one file descriptor under torch's default sharing strategy)
    and unpickles there as a plain list of tensors over it. A batch whose
    records a worker replaced (a collate_fn, a wrapping dataset) pickles as
    a list: torch copies each of its records into shared memory."""

    __slots__ = ("_fill", "_whole")

    def __init__(self, records: List[np.ndarray]) -> None:
        fill, whole, tensors = _this_process_pool().fill(records)
        super().__init__(tensors)
        # The batch keeps its segment from being filled again, whatever
        # becomes of its records (moved to shared memory while the batch
        # waits to be sent, say).
        self._fill, self._whole = fill, whole

    def __copy__(self) -> "SharedRecords":
        # torch's default_convert copies a list batch before converting its
        # items (tensors stay as they are): the copy shares the fill.
        copied = SharedRecords.__new__(SharedRecords)
        list.__init__(copied, self)
        copied._fill, copied._whole = self._fill, self._whole
        return copied

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        # Plain pickling (pickle.dumps, copy.deepcopy, torch.save in the
        # worker): a list of its records; only the trip to the main process
        # carries the segment (_reduce_for_the_main_process).
        return list, (list(self),)


def _reduce_for_the_main_process(batch: SharedRecords) -> Tuple[Any, Tuple[Any, ...]]:
    """How multiprocessing's pickler (torch's worker queues) sends a batch."""
    fill = batch._fill
    if not fill.intact(batch):
        return list, (list(batch),)
    fill.crossings += 1
    if fill.crossings > 1:
        # A second main-process copy would give the segment back while the
        # first still reads it.
        _this_process_pool().forget(fill.segment)
    fill.holder[0] = _HELD
    return records_of_segment, (fill.segment, fill.sizes)


ForkingPickler.register(SharedRecords, _reduce_for_the_main_process)


# In the main process: the finalizers of the batches received, so that a
# fork can stop them from giving segments back (the child has copies).
# Reentrant: a collection that runs inside the lock may call a finalizer.
_received_lock = threading.RLock()
_received: "set[weakref.finalize]" = set()


def _give_back(holder: np.ndarray, receiver: int, finalizer: List[Optional[weakref.finalize]]) -> None:
    with _received_lock:
        _received.discard(finalizer[0])  # type: ignore[arg-type]
    if os.getpid() == receiver:
        holder[0] = _FREE


def _keep_received_batches_held() -> None:
    with _received_lock:
        for finalizer in list(_received):  # a collection in the loop may remove some
            finalizer.detach()
        _received.clear()


def _start_the_child_afresh() -> None:
    global _received_lock
    _received_lock = threading.RLock()  # another thread may have held it at the fork


os.register_at_fork(before=_keep_received_batches_held, after_in_child=_start_the_child_afresh)


def records_of_segment(segment: torch.Tensor, sizes: List[int]) -> List[torch.Tensor]:
    """A :class:`SharedRecords` in the receiving process: tensors over its
    segment, which goes back to the worker when the last of them is gone."""
    whole = segment.numpy()
    # The holder byte is a view of another array, or it would keep `whole`.
    slot: List[Optional[weakref.finalize]] = [None]
    finalizer = weakref.finalize(whole, _give_back, segment.numpy()[:1], os.getpid(), slot)
    finalizer.atexit = False
    slot[0] = finalizer
    with _received_lock:
        _received.add(finalizer)
    return list(map(torch.from_numpy, _record_views(whole, sizes)))
