"""What spool.spark and spool.ray share: Arrow batches to ``tf.train.Example``, one
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
from typing import Any, Iterable, Iterator, Optional, Sequence

from spool import _spool
from spool.objects import ls, rm, stat
from spool.records import DatasetManifest, RecordReader, RecordWriter, Shard

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


def check_unique(names: Sequence[str], columns: Sequence[str]) -> None:
    """ValueError before anything is written when a feature to write is named
    twice, in ``names`` (the features) or among ``columns`` (the table's, where
    a join can leave two of one name): an Example holds one feature per name."""
    for name in names:
        if names.count(name) > 1 or columns.count(name) > 1:
            raise ValueError(f"column {name!r} appears twice; an Example holds one feature per name: rename one "
                             "of them, or pick the columns to write with features=")


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


# Arrow types as arrow_examples.h names them; the others are cast to one of these first.
_ARROW_TYPES = {"int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
                "uint16": "uint16", "uint32": "uint32", "uint64": "uint64", "bool": "bool", "float": "float",
                "double": "double", "binary": "binary", "large_binary": "large_binary", "string": "binary",
                "large_string": "large_binary", "list": "list", "large_list": "large_list"}


def _arrow_array(array: Any) -> tuple:
    """(type, offset, length, validity, offsets, data) of one Arrow array, as
    the binding reads it: its own buffers, no copy."""
    import pyarrow as pa

    data_type = array.type
    if pa.types.is_float16(data_type):
        array, data_type = array.cast(pa.float32()), pa.float32()
    elif pa.types.is_string_view(data_type) or pa.types.is_binary_view(data_type):
        array = array.cast(pa.large_binary())
        data_type = array.type
    name = _ARROW_TYPES.get(_type_name(data_type))
    if name is None:
        raise TypeError(f"no tf.train.Example feature for the Arrow type {data_type}")
    buffers = array.buffers()
    if name in ("list", "large_list", "binary", "large_binary"):
        return (name, array.offset, len(array), buffers[0], buffers[1], None if name.endswith("list") else buffers[2])
    return (name, array.offset, len(array), buffers[0], None, buffers[1])


def _type_name(data_type: Any) -> str:
    import pyarrow as pa

    if pa.types.is_list(data_type):
        return "list"
    if pa.types.is_large_list(data_type):
        return "large_list"
    return str(data_type)


def arrow_columns(batch: Any, columns: Sequence[Column]) -> list[tuple]:
    """The binding's description of ``columns`` of an Arrow RecordBatch."""
    described = []
    for column in columns:
        array = batch.column(column.name)
        values = _arrow_array(array)
        items = _arrow_array(array.values) if values[0] in ("list", "large_list") else None
        described.append((column.name, values, items))
    return described


def encode_batch(columns: Sequence[Column], batch: Any) -> list[bytes]:
    """Each row of an Arrow RecordBatch as a serialized tf.train.Example (what
    :func:`write_shard` writes); a null is an absent feature."""
    return _spool._encode_arrow_examples(arrow_columns(batch, columns))


def write_shard(prefix_url: str, job: str, partition: int, attempt: str, columns: Sequence[Column],
                batches: Iterable[Any], compression: str, compression_level: str,
                index: bool) -> WrittenShard:
    """Writes one attempt's shard, a record per row of the Arrow RecordBatches
    ``batches`` (encoded in C++, no Python per row); on an error nothing of it is left."""
    url = f"{prefix_url}-{job}-{partition:05d}-a{attempt}{_SUFFIXES[compression]}"
    write_index = index and compression == "NONE"
    with RecordWriter(url, compression, compression_level=compression_level, write_index=write_index) as writer:
        for batch in batches:
            writer._native.write_arrow_examples(arrow_columns(batch, columns))
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


@dataclass(frozen=True)
class Dataset:
    """What a reader needs of a committed dataset: its shards' URLs, their
    compression and the features of the manifest's schema (name, kind)."""

    shards: list[str]
    records: list[int]
    compression: str
    features: list[tuple[str, str]]


def read_dataset(url: str) -> Dataset:
    """The dataset at ``url``: its prefix or its ``.manifest.json``, read and
    checked as the loader reads it (shard names stay inside its folder)."""
    manifest_url = url if url.endswith(".manifest.json") else url.rstrip("/") + ".manifest.json"
    manifest = _spool._read_dataset_manifest(manifest_url)
    shards = manifest["shards"]
    return Dataset([shard["url"] for shard in shards], [shard["records"] for shard in shards],
                   manifest["compression"], [tuple(feature) for feature in manifest["features"]])


def example_values(shard_url: str, compression: str, batch: int = 1024) -> Iterator[list[dict]]:
    """Every record of a shard as {feature: list of int, float or bytes}, a batch at a time."""
    with RecordReader(shard_url, compression) as reader:
        while records := reader.read_batch(batch):
            yield _spool._example_values(records)
