"""A Ray Data Datasink that writes TFRecord shards of ``tf.train.Example``, committed once.

>>> ds = ray.data.read_parquet("s3://lake/events/")
>>> ds.write_datasink(spool.ray.RecordsDatasink("s3://bucket/train/events", compression="gzip"))

Each write task writes its blocks as one shard straight to the store through
spool, under a name of its own attempt; ``on_write_complete`` (on the
driver, once) writes ``<url>.manifest.json`` listing one shard per task and
deletes every other file of the write (retried tasks' attempts), and
``on_write_failed`` deletes them all: no manifest, no shards. Column types
map as in :mod:`spool.spark` (Arrow integers and booleans to int64_list,
floats float_list, strings and binary bytes_list, lists of those; null: an
absent feature); another type is a :class:`TypeError` naming the column,
raised before that task writes anything.

A datasink is used for one write; make a new one for the next.
:func:`read_records` reads a committed dataset back as a ``ray.data.Dataset``.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Optional, Sequence, Union

try:
    import pyarrow as pa
    from ray.data import Datasink, Datasource, ReadTask
    from ray.data.block import BlockMetadata
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("spool.ray needs ray[data]: pip install 'spool[ray]' (or 'ray[data]>=2.40')") from error

from spool import _engine_commit as engine
from spool.records import CompressionLevel, DatasetManifest

PathLike = Union[str, "os.PathLike[str]"]


def _kind(data_type: Any) -> Optional[str]:
    if pa.types.is_integer(data_type) or pa.types.is_boolean(data_type):
        return "int64"
    if pa.types.is_floating(data_type):
        return "float"
    if (pa.types.is_string(data_type) or pa.types.is_large_string(data_type) or pa.types.is_binary(data_type)
            or pa.types.is_large_binary(data_type)):
        return "bytes"
    return None


def arrow_columns(schema: "pa.Schema", features: Optional[Sequence[str]] = None) -> list[engine.Column]:
    """The feature of each column of an Arrow schema; TypeError for one without."""
    names = list(features) if features is not None else schema.names
    engine.check_unique(names, schema.names)
    columns = []
    for name in names:
        if name not in schema.names:
            raise KeyError(f"features names {name!r}, which is not a column (columns: {', '.join(schema.names)})")
        data_type = schema.field(name).type
        is_list = pa.types.is_list(data_type) or pa.types.is_large_list(data_type)
        kind = _kind(data_type.value_type if is_list else data_type)
        if kind is None:
            raise engine.unsupported(name, str(data_type))
        columns.append(engine.Column(name, kind, is_list))
    return columns


class RecordsDatasink(Datasink):
    """Writes a Ray Dataset as TFRecord shards under the prefix ``url`` and
    commits ``<url>.manifest.json`` (see the module's docstring).

    ``compression``, ``compression_level``, ``index`` and ``features`` as for
    :func:`spool.spark.write_records`. After the write, :attr:`manifest` is
    the committed :class:`spool.DatasetManifest`.
    """

    def __init__(self, url: PathLike, *, compression: str = "none", compression_level: CompressionLevel = "default",
                 index: bool = True, features: Optional[Sequence[str]] = None) -> None:
        self.prefix = os.fspath(url).rstrip("/")
        self.compression = engine.compression_name(compression)
        self.compression_level = str(compression_level)
        self.index = index
        self.features = list(features) if features is not None else None
        self.job = engine.new_job()
        self.manifest: Optional[DatasetManifest] = None
        self._columns: Optional[list[engine.Column]] = None

    def on_write_start(self, *args: Any, **kwargs: Any) -> None:
        engine.check_not_committed(self.prefix)

    def write(self, blocks: Iterable[Any], ctx: Any) -> Optional[tuple[list[engine.Column], engine.WrittenShard]]:
        tables = [block if isinstance(block, pa.Table) else pa.Table.from_pandas(block, preserve_index=False)
                  for block in blocks]
        tables = [table for table in tables if table.num_rows]
        if not tables:
            return None
        columns = arrow_columns(tables[0].schema, self.features)
        for table in tables[1:]:
            arrow_columns(table.schema, self.features)

        def batches() -> Iterable[Any]:
            for table in tables:
                yield from table.select([c.name for c in columns]).to_batches()

        shard = engine.write_shard(self.prefix, self.job, ctx.task_idx, engine.new_job(), columns, batches(),
                                   self.compression, self.compression_level, self.index)
        return columns, shard

    def on_write_complete(self, write_result: Any) -> None:
        returns = [r for r in getattr(write_result, "write_returns", write_result) if r is not None]
        columns = returns[0][0] if returns else []
        self.manifest = engine.commit(self.prefix, self.job, self.compression, columns, [r[1] for r in returns])

    def on_write_failed(self, error: Exception) -> None:
        engine.discard(self.prefix, self.job)

    def get_name(self) -> str:
        return "SpoolRecords"


_KIND_ARROW = {"int64_list": pa.int64(), "float_list": pa.float32(), "bytes_list": pa.binary()}


def _schema_of(features: Sequence[tuple[str, str]]) -> "pa.Schema":
    """The default columns: every feature a list of its kind."""
    return pa.schema([(name, pa.list_(_KIND_ARROW[kind])) for name, kind in features])


def _converter(data_type: Any) -> Any:
    """Python value of one feature value for an Arrow type (as spool.spark's reader converts)."""
    if pa.types.is_string(data_type) or pa.types.is_large_string(data_type):
        return lambda v: v.decode()
    if pa.types.is_boolean(data_type):
        return bool
    return None  # int, float and bytes values go in as they are


def _columns_of(schema: "pa.Schema") -> list[tuple[str, bool, Any]]:
    """(name, is_list, converter) per field; TypeError for a type no feature maps to."""
    arrow_columns(schema)  # TypeError naming the column
    out = []
    for field in schema:
        is_list = pa.types.is_list(field.type) or pa.types.is_large_list(field.type)
        out.append((field.name, is_list, _converter(field.type.value_type if is_list else field.type)))
    return out


def _shard_table(shard_url: str, compression: str, schema: "pa.Schema") -> "pa.Table":
    fields = _columns_of(schema)
    columns: dict[str, list] = {name: [] for name, _, _ in fields}
    for batch in engine.example_values(shard_url, compression):
        for example in batch:
            for name, is_list, convert in fields:
                values = example.get(name)  # absent: null
                if values is not None and convert is not None:
                    values = [convert(v) for v in values]
                if not is_list:
                    values = values[0] if values else None  # a scalar column takes the first value
                columns[name].append(values)
    return pa.table({name: pa.array(columns[name], schema.field(name).type) for name, _, _ in fields}, schema=schema)


class RecordsDatasource(Datasource):
    """A committed dataset's Examples as a Ray Datasource: one read task per
    group of shards, one Arrow block per shard. Without ``schema``, every
    feature of the manifest's schema is a list column of its kind (int64,
    float32 or binary), null where an Example lacks it. With ``schema`` (a
    ``pyarrow.Schema`` of the types :class:`RecordsDatasink` maps), its
    fields are the columns: a scalar column takes a feature's first value,
    a list column all of them, a missing feature is null, and a type no
    feature maps to is a :class:`TypeError` naming the column. See
    :func:`read_records`."""

    def __init__(self, url: PathLike, schema: Optional["pa.Schema"] = None) -> None:
        super().__init__()
        self.dataset = engine.read_dataset(os.fspath(url))
        if schema is not None:
            _columns_of(schema)  # TypeError before any task starts
            self.schema = schema
            return
        if not self.dataset.features and self.dataset.shards:
            raise ValueError(f"the manifest of {os.fspath(url)} has no schema, which read_records needs for its "
                             "columns: write the dataset with RecordsDatasink or spool.spark.write_records (they "
                             "record one), or give read_records a schema=")
        for name, kind in self.dataset.features:
            if kind not in _KIND_ARROW:
                raise ValueError(f"feature {name!r} of {os.fspath(url)} is of mixed kinds, which no Arrow column "
                                 "holds: give read_records a schema= naming its type")
        self.schema = _schema_of(self.dataset.features)

    def estimate_inmemory_data_size(self) -> Optional[int]:
        return None

    def get_read_tasks(self, parallelism: int, per_task_row_limit: Optional[int] = None,
                       data_context: Any = None) -> list[ReadTask]:
        shards = list(zip(self.dataset.shards, self.dataset.records))
        groups = max(1, min(parallelism, len(shards)))
        compression, schema = self.dataset.compression, self.schema
        tasks = []
        for group in range(groups):
            mine = shards[group::groups]
            if not mine:
                continue
            urls = [url for url, _ in mine]

            def read(urls: list[str] = urls) -> Iterable["pa.Table"]:
                for url in urls:
                    yield _shard_table(url, compression, schema)

            metadata = BlockMetadata(num_rows=sum(records for _, records in mine), size_bytes=None,
                                     input_files=urls, exec_stats=None)
            tasks.append(ReadTask(read, metadata, per_task_row_limit=per_task_row_limit))
        return tasks

    def get_name(self) -> str:
        return "SpoolRecords"


def read_records(url: PathLike, *, schema: Optional["pa.Schema"] = None, parallelism: int = -1) -> "ray.data.Dataset":
    """The Examples of a committed dataset (its prefix or ``.manifest.json``)
    as a ``ray.data.Dataset``, one row per record, read by tasks of whole
    shards; columns as :class:`RecordsDatasource` makes them, from
    ``schema`` when given (``pa.schema([("id", pa.int64()), ("text", pa.string())])``)."""
    import ray.data

    return ray.data.read_datasource(RecordsDatasource(url, schema),
                                    override_num_blocks=None if parallelism < 0 else parallelism)


__all__ = ["RecordsDatasink", "RecordsDatasource", "arrow_columns", "read_records"]
