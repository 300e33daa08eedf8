"""What spool.spark and spool.ray share: rows to ``tf.train.Example``, one
shard per task attempt, and the commit from the driver.

The rule: every task attempt writes its shard under its own name,
``<prefix>-<job>-00003-a<attempt>.tfrecord`` (``<job>``: fresh for each
write); the engine hands the driver one result per partition, from one
successful attempt; the driver writes the manifest listing exactly those
(one PUT: the dataset appears whole or not at all) and deletes every other
file of the job under the prefix (failed, killed and speculative attempts).
A failed job deletes all of them and writes no manifest.
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass
from typing import Any, Iterable, Optional, Sequence

from spool import _spool
from spool.objects import ls, rm, stat
from spool.records import DatasetManifest, RecordWriter, Shard

# A column's values as features: kind ("int64", "float", "bytes") and
# whether a row holds a list of them.
_KIND_NAMES = {"int64": "int64_list", "float": "float_list", "bytes": "bytes_list"}
_SUFFIXES = {"NONE": ".tfrecord", "ZLIB": ".tfrecord.zlib", "GZIP": ".tfrecord.gz"}


@dataclass(frozen=True)
class Column:
    name: str
    kind: str      # "int64", "float" or "bytes"
    is_list: bool


@dataclass(frozen=True)
class WrittenShard:
    """One task attempt's committed shard, as a task returns it to the driver."""

    partition: int
    url: str
    records: int
    bytes: int
    crc32c: int
    index_url: Optional[str]


def unsupported(column: str, type_name: str) -> TypeError:
    return TypeError(f"column {column!r} has type {type_name}, which has no tf.train.Example feature: "
                     "integers and booleans (int64_list), floats and doubles (float_list), strings and "
                     "binary (bytes_list), or arrays of those; cast or drop it first")


def compression_name(compression: Optional[str]) -> str:
    name = (compression or "none").upper()
    if name not in _SUFFIXES:
        raise ValueError(f"compression must be 'none', 'zlib' or 'gzip', not {compression!r}")
    return name


def new_job() -> str:
    return uuid.uuid4().hex[:12]


def check_not_committed(prefix_url: str) -> None:
    """A write never replaces a committed dataset (its shards would be mixed with the new ones)."""
    manifest = prefix_url + ".manifest.json"
    try:
        stat(manifest)
    except FileNotFoundError:
        return
    raise FileExistsError(f"{manifest} exists: delete that dataset first, or write to another prefix")


def _values(name: str, value: Any, kind: str) -> list:
    if kind == "bytes":
        return [v.encode() if isinstance(v, str) else bytes(v) for v in value]
    if kind == "int64":
        return [int(v) for v in value]
    return [float(v) for v in value]


def encode_row(columns: Sequence[Column], row: Sequence[Any]) -> bytes:
    """A row (values in the order of ``columns``) as a serialized tf.train.Example;
    None is an absent feature."""
    entries = []
    for column, value in zip(columns, row):
        if value is None:
            continue
        if column.is_list:
            if any(v is None for v in value):
                raise ValueError(f"column {column.name!r}: an array holds a null, which a tf.train.Example "
                                 "list cannot hold; drop or fill the nulls first")
            entries.append((column.name, column.kind, _values(column.name, value, column.kind)))
        else:
            entries.append((column.name, column.kind, _values(column.name, (value,), column.kind)))
    return _spool._encode_example(entries)


def write_shard(prefix_url: str, job: str, partition: int, attempt: str, columns: Sequence[Column],
                rows: Iterable[Sequence[Any]], compression: str, compression_level: str,
                index: bool) -> WrittenShard:
    """Writes one attempt's shard; on an error nothing of it is left."""
    url = f"{prefix_url}-{job}-{partition:05d}-a{attempt}{_SUFFIXES[compression]}"
    write_index = index and compression == "NONE"
    with RecordWriter(url, compression, compression_level=compression_level, write_index=write_index) as writer:
        for row in rows:
            writer.write(encode_row(columns, row))
    written = writer.close()
    return WrittenShard(partition, written.url, written.records, written.bytes, written.crc32c,
                        url + ".idx" if write_index else None)


def _job_files(prefix_url: str, job: str) -> list[str]:
    folder, base = posixpath.split(prefix_url)
    start = f"{base}-{job}-"
    try:
        entries = ls(folder + "/")
    except FileNotFoundError:
        return []
    return [f"{folder}/{posixpath.basename(e.url.rstrip('/'))}" for e in entries
            if not e.is_folder and posixpath.basename(e.url).startswith(start)]


def discard(prefix_url: str, job: str, keep: Iterable[str] = ()) -> list[str]:
    """Deletes the job's files under the prefix except ``keep``; returns what it deleted."""
    kept = {posixpath.basename(url) for url in keep}
    deleted = []
    for url in _job_files(prefix_url, job):
        if posixpath.basename(url) in kept:
            continue
        try:
            rm(url)
        except FileNotFoundError:
            pass
        deleted.append(url)
    return deleted


def commit(prefix_url: str, job: str, compression: str, columns: Sequence[Column],
           shards: Sequence[WrittenShard]) -> DatasetManifest:
    """Writes the manifest of ``shards`` (one per partition), then deletes the
    job's other files. When the manifest cannot be written, every file of the
    job is deleted and the error raised."""
    by_partition: dict[int, WrittenShard] = {}
    for shard in shards:
        by_partition.setdefault(shard.partition, shard)  # an engine reporting two attempts: keep one
    chosen = [by_partition[p] for p in sorted(by_partition)]
    schema = [(c.name, _KIND_NAMES[c.kind]) for c in columns]
    try:
        raw = _spool._write_manifest(prefix_url, compression,
                                     [(s.url, s.records, s.bytes, s.crc32c, s.index_url) for s in chosen], schema)
    except BaseException:
        discard(prefix_url, job)
        raise
    keep = [s.url for s in chosen] + [s.index_url for s in chosen if s.index_url]
    discard(prefix_url, job, keep)
    shard_list = [Shard(**shard) for shard in raw.pop("shards")]
    return DatasetManifest(shards=shard_list, **raw)
