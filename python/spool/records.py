"""TFRecord files in any store: one file at a time, or a sharded dataset.

The files are byte for byte what TensorFlow's ``TFRecordWriter`` writes and
read with TensorFlow's outcomes (a truncated or corrupt record is a
:class:`spool.DataLossError` naming the file and offset). ``compression`` is
``"none"``, ``"zlib"`` or ``"gzip"`` (TensorFlow's names, any case); left
out, it follows the URL's extension (``.gz``, ``.zlib``).

Each object is used by one thread at a time. Like a writer of
:func:`spool.open`, a writer publishes nothing until ``close()``, and leaving
its ``with`` block by an exception discards what it wrote.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Iterator, Optional, TypeVar, Union

from spool import _spool

PathLike = Union[str, "os.PathLike[str]"]
Bytes = Union[bytes, bytearray, memoryview]
# "default" (TensorFlow's bytes), "fast", or zlib's 0..9.
CompressionLevel = Union[str, int]
_Writer = TypeVar("_Writer", bound="_CommitOnExit")


@dataclass(frozen=True)
class RecordFile:
    """A TFRecord file a :class:`RecordWriter` committed."""

    url: str
    records: int
    payload_bytes: int  # the records' own bytes
    bytes: int          # the stored object's size
    crc32c: int         # CRC32C of the stored bytes


@dataclass(frozen=True)
class Shard:
    name: str     # relative to the manifest's folder
    url: str
    records: int
    bytes: int
    crc32c: int


@dataclass(frozen=True)
class DatasetManifest:
    """What a :class:`ShardedWriter` wrote: its shards and ``<prefix>.manifest.json``."""

    url: str          # the manifest's URL
    compression: str  # "NONE", "ZLIB" or "GZIP"
    shards: list[Shard]
    total_records: int
    total_bytes: int


def _bytes_like(value: Any) -> bool:
    try:
        memoryview(value)
    except TypeError:
        return False
    return True


def _not_bytes(what: str, value: Any) -> TypeError:
    """The TypeError for a record or key that is not bytes-like."""
    hint = " (encode text first, e.g. text.encode())" if isinstance(value, str) else ""
    return TypeError(f"{what} must be bytes, bytearray or memoryview, not {type(value).__name__}{hint}")


class _CommitOnExit:
    """A writer's ``with`` block: leaving it normally commits (``close()``),
    leaving it by an exception discards everything (``abort()``)."""

    _native: Any

    def close(self) -> Any:
        raise NotImplementedError

    def abort(self) -> None:
        """Discards everything written; nothing is published."""
        self._native.abort()

    def __enter__(self: _Writer) -> _Writer:
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        if exc_type is not None:
            self.abort()
        else:
            self.close()


class RecordWriter(_CommitOnExit):
    """Writes one TFRecord file; ``close()`` commits it.

    >>> with spool.RecordWriter("s3://bucket/data/train.tfrecord.gz") as w:
    ...     for example in examples:
    ...         w.write(example.SerializeToString())

    ``compression_level`` (GZIP/ZLIB): ``"default"`` gives TensorFlow's
    bytes exactly; ``"fast"`` is many times faster with slightly larger files
    that every GZIP/ZLIB reader reads; or zlib's ``0``..``9``.
    ``write_index`` also writes the DALI index ``<url>.idx`` (uncompressed
    files only).
    """

    def __init__(self, url: PathLike, compression: Optional[str] = None, *,
                 compression_level: CompressionLevel = "default", write_index: bool = False) -> None:
        self._native = _spool._RecordWriter(os.fspath(url), compression, str(compression_level), write_index)
        self.file: Optional[RecordFile] = None  # set by close()

    def write(self, record: Bytes) -> None:
        """Appends one record (bytes-like: a serialized ``tf.train.Example``, ...)."""
        try:
            self._native.write(record)
        except TypeError:
            raise _not_bytes("a record", record) from None

    @property
    def records(self) -> int:
        """Records written so far."""
        return self.file.records if self.file else self._native.records

    def close(self) -> RecordFile:
        """Commits the file and returns what was written. After an error nothing
        is published. A second close returns the same file."""
        if self.file is None:
            self.file = RecordFile(**self._native.close())
        return self.file



class RecordReader:
    """Iterates the records of one TFRecord file as ``bytes``.

    >>> with spool.RecordReader("gs://bucket/data/train-00000-of-00016.tfrecord") as r:
    ...     for record in r:
    ...         ...

    ``offset`` is where the next record starts in the (uncompressed) record
    stream; ``seek(offset)`` continues at such an offset later.
    """

    def __init__(self, url: PathLike, compression: Optional[str] = None) -> None:
        self._native = _spool._RecordReader(os.fspath(url), compression)

    @property
    def url(self) -> str:
        return self._native.url

    @property
    def compression(self) -> str:
        """"NONE", "ZLIB" or "GZIP"."""
        return self._native.compression

    @property
    def offset(self) -> int:
        return self._native.next_offset

    def seek(self, offset: int) -> None:
        """Continues at the record that starts at ``offset`` (an earlier ``offset``)."""
        self._native.seek(offset)

    def read(self) -> Optional[bytes]:
        """The next record, or None at the end."""
        return self._native.next()

    def read_batch(self, count: int) -> list[bytes]:
        """Up to ``count`` records; fewer only at the end of the file."""
        return self._native.next_batch(count)

    def __iter__(self) -> Iterator[bytes]:
        return self

    def __next__(self) -> bytes:
        record = self._native.next()
        if record is None:
            raise StopIteration
        return record

    def close(self) -> None:
        """Stops the read-ahead; the reader cannot be used afterwards."""
        self._native.close()

    def __enter__(self) -> "RecordReader":
        return self

    def __exit__(self, exc_type, exc, traceback) -> None:
        self.close()


class ShardedWriter(_CommitOnExit):
    """Writes a dataset as TFRecord shards under a prefix, then its manifest,
    as ``spool convert`` does.

    ``shards > 0``: ``<prefix>-00003-of-00016.tfrecord``, records dealt round
    robin (or, with ``by_key``, by a stable hash of the key given to
    :meth:`write`). ``shards == 0``: rolled shards ``<prefix>-00003.tfrecord``,
    a new one every ``max_shard_records`` records or ``max_shard_bytes`` bytes.
    Compressed shards end in ``.gz`` / ``.zlib``; ``compression_level`` as
    for :class:`RecordWriter` (``"fast"`` for large conversions). Shards are
    compressed and uploaded in parallel. ``prefix_fanout=N`` (N > 1) spreads
    the shards over N key prefixes, ``<prefix>/3f/<name>-00017-of-01024.tfrecord``,
    for request rates beyond one S3 prefix; the manifest lists them and readers
    need nothing else (see docs/performance.md).

    ``close()`` commits every shard and then ``<prefix>.manifest.json`` (the
    dataset is complete when its manifest exists) and returns the
    :class:`DatasetManifest`. An error, :meth:`abort` or an exception in the
    ``with`` block writes no manifest and deletes the shards already committed.
    """

    def __init__(self, prefix_url: PathLike, shards: int = 0, *, compression: str = "none",
                 compression_level: CompressionLevel = "default", max_shard_records: int = 0,
                 max_shard_bytes: int = 0, suffix: str = ".tfrecord", write_index: bool = False,
                 by_key: bool = False, prefix_fanout: int = 0) -> None:
        self._native = _spool._ShardedWriter(os.fspath(prefix_url), shards, compression, str(compression_level),
                                             max_shard_records, max_shard_bytes, suffix, write_index, by_key,
                                             prefix_fanout)
        self.manifest: Optional[DatasetManifest] = None  # set by close()

    def write(self, record: Bytes, key: Union[Bytes, str, None] = None) -> None:
        """Adds one record (bytes-like). With ``by_key``, ``key`` picks its shard:
        bytes, or a ``str``, which counts as its UTF-8 bytes."""
        if isinstance(key, str):
            key = key.encode()
        try:
            self._native.write(record, key)
        except TypeError:
            if key is not None and not _bytes_like(key):
                raise _not_bytes("a key", key) from None
            raise _not_bytes("a record", record) from None

    def close(self) -> DatasetManifest:
        if self.manifest is None:
            raw = self._native.close()
            shards = [Shard(**shard) for shard in raw.pop("shards")]
            self.manifest = DatasetManifest(shards=shards, **raw)
        return self.manifest



__all__ = ["DatasetManifest", "RecordFile", "RecordReader", "RecordWriter", "Shard", "ShardedWriter"]
