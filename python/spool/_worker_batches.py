"""How a DataLoader worker's batch of ``record_type="numpy"`` records
reaches the main process: copied once into a shared-memory segment that the
worker keeps and reuses, once the main process has dropped every record of
the batch it carried.

Why reuse: a fresh segment per batch had its pages faulted in by the worker
(about 2 us per 4 KiB page on a VM, 1.85 ms for a 3.2 MB batch), and freed
by the main process when the batch died. Both were more than the copy.

The hand-over, per segment: its first byte says who holds it. The worker
sets it to 1 when it fills the segment; in the main process a finalizer on
the array the batch's records are views of sets it back to 0 when the last
of them is gone (torch's tensors made from those views keep them alive).
Each side writes the byte only while it holds the segment, so no lock is
needed: the worker reads it, and refills only a segment at 0.

Threading: a worker's pool is used by the thread that iterates the dataset;
the main process's finalizers may run on any thread (torch's pin-memory
thread drops the batches it copies). Fork: a pool belongs to the process
that made it, and a forked child starts with none (it must never fill
segments its parent handed out); only the process that received a batch
gives its segment back, not a child forked with copies of the batch.
"""

from __future__ import annotations

import os
import weakref
from typing import Any, List, Optional, Tuple

import numpy as np
import torch

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


class _SegmentPool:
    """One worker's kept segments."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self._segments: List[Tuple[torch.Tensor, np.ndarray]] = []  # (segment, its holder byte)

    def take(self, payload: int) -> torch.Tensor:
        """A segment with room for ``payload`` bytes after its header, held by this worker."""
        need = _HEADER + payload
        for segment, holder in self._segments:
            if holder[0] == _FREE and segment.numel() >= need:
                holder[0] = _HELD
                return segment
        segment = _new_segment(need)
        holder = segment.numpy()[:1]
        holder[0] = _HELD
        if len(self._segments) < _KEPT:
            self._segments.append((segment, holder))
        else:
            # Replaces a free one that was too small, if any; else not kept.
            for i, (_, kept_holder) in enumerate(self._segments):
                if kept_holder[0] == _FREE:
                    self._segments[i] = (segment, holder)
                    break
        return segment

    def forget(self, segment: torch.Tensor) -> None:
        """Stops reusing ``segment`` (its records crossed without the finalizer)."""
        self._segments = [(s, h) for s, h in self._segments if s is not segment]


_pool: Optional[_SegmentPool] = None


def _this_process_pool() -> _SegmentPool:
    global _pool
    if _pool is None or _pool.pid != os.getpid():
        _pool = _SegmentPool()
    return _pool


class SharedRecords(list):
    """A DataLoader worker's batch of ``record_type="numpy"`` records: a list
    of ``uint8`` tensors, views of a kept shared-memory segment into which
    the records were copied once. It crosses to the main process as that one
    segment (one file descriptor under torch's default sharing strategy) and
    unpickles there as a plain list of tensors over it. A batch whose
    records a worker replaced (a collate_fn, a wrapping dataset) pickles as
    a list, and its segment is no longer reused."""

    __slots__ = ("_segment", "_sizes", "_views")

    def __init__(self, records: List[np.ndarray]) -> None:
        sizes = [record.size for record in records]
        total = sum(sizes)
        segment = _this_process_pool().take(total)
        payload = segment[_HEADER:_HEADER + total]
        if records:
            np.concatenate(records, out=payload.numpy())
        views = torch.split(payload, sizes)
        super().__init__(views)
        self._segment, self._sizes, self._views = segment, sizes, views

    def __copy__(self) -> "SharedRecords":
        # torch's default_convert copies a list batch before converting its
        # items (tensors stay as they are): the copy keeps the segment.
        copied = SharedRecords.__new__(SharedRecords)
        list.__init__(copied, self)
        copied._segment, copied._sizes, copied._views = self._segment, self._sizes, self._views
        return copied

    def __reduce__(self) -> Tuple[Any, Tuple[Any, ...]]:
        if len(self) == len(self._views) and all(mine is view for mine, view in zip(self, self._views)):
            return records_of_segment, (self._segment, self._sizes)
        # The main process will hold views of the segment that no finalizer
        # watches, so it must never be refilled.
        _this_process_pool().forget(self._segment)
        return list, (list(self),)


def _give_back(holder: np.ndarray, receiver: int) -> None:
    # A child forked from the receiver has copies of its batches (and their
    # finalizers) over the same shared pages: only the receiver gives back.
    if os.getpid() == receiver:
        holder[0] = _FREE


def records_of_segment(segment: torch.Tensor, sizes: List[int]) -> List[torch.Tensor]:
    """A :class:`SharedRecords` in the receiving process: tensors over its
    segment, which goes back to the worker when the last of them is gone."""
    whole = segment.numpy()
    # NumPy's views of `whole` keep `whole` itself alive (it does not own
    # its memory, and its base is a tensor, so their bases stop at it).
    # The holder byte is a view of another array, or it would keep `whole`.
    finalizer = weakref.finalize(whole, _give_back, segment.numpy()[:1], os.getpid())
    finalizer.atexit = False
    records = []
    start = _HEADER
    for size in sizes:
        records.append(whole[start:start + size])
        start += size
    return list(map(torch.from_numpy, records))
