"""A ``torch.save`` archive in a bucket, read the way ``torch.load`` reads it.

``torch.load`` of a file object reads a zip archive: its directory at the
end, the pickle, then each tensor's bytes (one record per storage, in the
pickle's order) with one ``readinto`` straight into the memory torch has
just allocated for that tensor. Served by this reader:

- a record of at least ``direct_bytes`` is read straight into torch's memory
  in one plan of parallel ranged reads: no buffer between the bucket and the
  tensor, so its pages are zeroed and filled once (a fetch into a buffer
  first, then a parse copying out of it, zeroes twice as many fresh pages,
  which on the 2-core bench machine cost more than the copy itself);
- everything else torch reads (the directory, the pickle, each record's
  30-byte local header, small tensors) comes from windows: the archive's
  tail, fetched first, then from each small read on up to the next large
  record's data (at most ``window_bytes``), so a state dict of many small
  tensors costs a few requests, not one per tensor;
- the next window is fetched by one background thread while torch reads a
  large record or the window before it, so the store stays busy between
  records.

A read is served piece by piece from the windows that hold it, and a piece
none holds is fetched when asked for: what torch gets never depends on the
windows' guesses, only how many requests it takes. The object version is
the one :func:`spool.open` pinned.
"""

from __future__ import annotations

import bisect
import io
import mmap
import zipfile
from concurrent.futures import Future, ThreadPoolExecutor
from typing import List, Optional

from spool.objects import _RawObjectReader

# A zip local header is 30 bytes: torch (miniz) reads them, then the record's
# data after the name and extra field, which it does not read.
_LOCAL_HEADER_BYTES = 30
_PARTS_PER_READ = 8
_MIN_PART_BYTES = 1 << 20


class _Window:
    """Bytes [start, end) of the archive, fetched now or in the background."""

    def __init__(self, start: int, end: int, fetched: "Future[memoryview]") -> None:
        self.start, self.end, self._fetched = start, end, fetched

    def holds(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end

    def data(self) -> memoryview:
        return self._fetched.result()  # waits for a fetch in flight; raises its error


class TorchArchiveReader(io.RawIOBase):
    """A seekable binary file over a reader from ``spool.open(url, "rb").raw``.

    ``direct_bytes``: reads this large go straight into the caller's buffer
    (8 MiB: one part of a parallel read). ``window_bytes``: the most a
    window holds. ``tail_bytes``: the end of the archive fetched first, which
    holds the directory of about 2,000 records per 256 KiB.

    Threads: one caller at a time, as any file object; the background fetch
    is this reader's own, and close() cancels or waits for it, so use the
    reader as a context manager. Memory: the tail and at most two windows.
    """

    def __init__(self, raw: _RawObjectReader, *, direct_bytes: int = 8 << 20, window_bytes: int = 128 << 20,
                 tail_bytes: int = 256 << 10) -> None:
        super().__init__()
        self._raw = raw
        self.name = raw.name
        self.size: int = raw.size
        self._position = 0
        self._direct_bytes = direct_bytes
        self._window_bytes = window_bytes
        self._prefetcher: Optional[ThreadPoolExecutor] = None
        self._windows: List[_Window] = []  # the tail first, then those at or after the position
        self._large_header_ends: List[int] = []  # where each large record's header ends, sorted
        if self.size:
            self._windows.append(self._window_now(max(0, self.size - tail_bytes), self.size))
            self._large_header_ends = self._find_large_records()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset} in {self.name}")
        self._position = base + offset
        return self._position

    def close(self) -> None:
        if self._prefetcher is not None:
            self._prefetcher.shutdown(wait=True, cancel_futures=True)
            self._prefetcher = None
        self._windows = []
        super().close()

    def readinto(self, buffer) -> int:  # type: ignore[override]
        if self.closed:
            raise ValueError(f"read of closed file {self.name}")
        with memoryview(buffer) as whole, whole.cast("B") as target:
            n = max(0, min(len(target), self.size - self._position))
            if self._windows and self._position < self._windows[0].start:
                # Past the directory, torch reads forwards: drop the windows behind.
                self._windows[1:] = [w for w in self._windows[1:] if w.end > self._position]
            done = 0
            while done < n:  # a read may span two windows: each piece from its own
                got = self._read_piece(self._position + done, target[done:n])
                if got == 0:
                    break  # the object is shorter than it was when opened
                done += got
            self._position += done
            return done

    def _read_piece(self, start: int, target: memoryview) -> int:
        """Fills the start of ``target`` from ``start``; returns how much."""
        window = next((w for w in self._windows if w.holds(start, start + 1)), None)
        if window is None and len(target) >= self._direct_bytes:
            self._prefetch(start + len(target))  # what follows this record, fetched while it is read
            return self._raw_read(start, target)
        if window is None:
            window = self._window_now(start, max(start + len(target), self._window_end(start)))
            self._windows.append(window)
        if not self._is_large_header_end(window.end):
            self._prefetch(window.end)  # small records go on past it
        data = window.data()
        offset = start - window.start
        got = max(0, min(len(target), len(data) - offset))
        target[:got] = memoryview(data)[offset:offset + got]
        return got

    def _window_end(self, start: int) -> int:
        """Where a window from ``start`` stops: before the next large record's data."""
        end = min(self.size, start + self._window_bytes)
        next_large = bisect.bisect_right(self._large_header_ends, start)
        if next_large < len(self._large_header_ends):
            end = min(end, self._large_header_ends[next_large])
        return end

    def _is_large_header_end(self, offset: int) -> bool:
        at = bisect.bisect_left(self._large_header_ends, offset)
        return at < len(self._large_header_ends) and self._large_header_ends[at] == offset

    def _prefetch(self, start: int) -> None:
        if start >= self.size or any(w.holds(start, start + 1) for w in self._windows):
            return
        if self._prefetcher is None:
            self._prefetcher = ThreadPoolExecutor(max_workers=1, thread_name_prefix="spool-torch-load")
        end = self._window_end(start)
        self._windows.append(_Window(start, end, self._prefetcher.submit(self._fetch, start, end)))

    def _window_now(self, start: int, end: int) -> _Window:
        fetched: Future[memoryview] = Future()
        fetched.set_result(self._fetch(start, end))
        return _Window(start, end, fetched)

    def _find_large_records(self) -> List[int]:
        """Where each large record's local header ends (its data follows),
        from the archive's directory; none when it is not a zip (then every
        read is a window from where it starts, which is still correct)."""
        try:
            with zipfile.ZipFile(self) as archive:
                records = archive.infolist()
        except zipfile.BadZipFile:
            return []
        finally:
            self._position = 0
        return sorted(record.header_offset + _LOCAL_HEADER_BYTES
                      for record in records if record.compress_size >= self._direct_bytes)

    def _fetch(self, start: int, end: int) -> memoryview:
        # Anonymous memory, not a bytearray: no zero-fill to pay for before
        # the fetch writes every byte, and unmapped as soon as it is dropped.
        pages = mmap.mmap(-1, max(1, end - start))
        with memoryview(pages) as view:
            got = self._raw_read(start, view[:end - start])
        return memoryview(pages)[:got]

    def _raw_read(self, start: int, target: memoryview) -> int:
        # Parts of an eighth of the read (at least 1 MiB): a 16 MiB tensor in
        # 8 parts in flight, not 2 of the store's 8 MiB.
        part_size = max(_MIN_PART_BYTES, -(-len(target) // _PARTS_PER_READ))
        return self._raw.read_at(start, target, part_size)
