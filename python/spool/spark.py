"""A Spark DataFrame as TFRecord shards of ``tf.train.Example``, committed once.

>>> df = spark.read.parquet("s3a://lake/events/")
>>> manifest = spool.spark.write_records(df, "s3://bucket/train/events", compression="gzip")

Each executor writes its partition straight to the store through spool (S3,
GCS or files: the executors need spool installed and the store's
credentials); the driver then writes ``<url>.manifest.json`` listing one
successful attempt per partition and deletes every other attempt's file, so
retried tasks, speculative execution and a failed job leave either no
dataset (no manifest) or a complete one without duplicates.
:func:`read_records` reads such a dataset (any dataset with a manifest) back
into a DataFrame, one Spark task per shard.

Column types: integers and booleans become int64_list features, floats and
doubles float_list, strings and binary bytes_list, arrays of those lists;
a null is an absent feature. Any other type is a :class:`TypeError` naming
the column, raised before anything is written.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from typing import Any, Iterator, Optional, Sequence, Union

try:
    from pyspark import TaskContext
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql import types as T
except ImportError as error:  # pragma: no cover - depends on the environment
    raise ImportError("spool.spark needs pyspark: pip install 'spool[spark]' (or pyspark>=4.0)") from error

from spool import _engine_commit as engine
from spool.records import CompressionLevel, DatasetManifest

PathLike = Union[str, "os.PathLike[str]"]

# What each task returns to the driver: its attempt's shard (WrittenShard).
_RESULT_SCHEMA = "partition int, url string, records long, bytes long, crc32c long, index_url string"


def _result_arrow_schema() -> Any:
    import pyarrow as pa

    return pa.schema([("partition", pa.int32()), ("url", pa.string()), ("records", pa.int64()),
                      ("bytes", pa.int64()), ("crc32c", pa.int64()), ("index_url", pa.string())])


_INT_TYPES = (T.ByteType, T.ShortType, T.IntegerType, T.LongType, T.BooleanType)
_FLOAT_TYPES = (T.FloatType, T.DoubleType)
_BYTES_TYPES = (T.StringType, T.BinaryType)


def _kind(data_type: Any) -> Optional[str]:
    if isinstance(data_type, _INT_TYPES):
        return "int64"
    if isinstance(data_type, _FLOAT_TYPES):
        return "float"
    if isinstance(data_type, _BYTES_TYPES):
        return "bytes"
    return None


def _columns(schema: Any, features: Optional[Sequence[str]]) -> list[engine.Column]:
    fields = {field.name: field for field in schema.fields}
    in_order = [field.name for field in schema.fields]  # the dict keeps one of two equal names
    names = list(features) if features is not None else in_order
    engine.check_unique(names, in_order)
    columns = []
    for name in names:
        if name not in fields:
            raise KeyError(f"features names {name!r}, which is not a column (columns: {', '.join(fields)})")
        data_type = fields[name].dataType
        is_list = isinstance(data_type, T.ArrayType)
        kind = _kind(data_type.elementType if is_list else data_type)
        if kind is None:
            raise engine.unsupported(name, data_type.simpleString())
        columns.append(engine.Column(name, kind, is_list))
    return columns


_log = logging.getLogger("spool.spark")


def _wait_for_attempts(spark: SparkSession, group: str, prefix: str, timeout: float) -> list[str]:
    """Waits until no task of the job's stages runs: a speculative attempt that
    lost may still be writing, and must be done before its file is deleted.

    After ``timeout`` seconds it stops waiting, logs a warning naming the
    prefix and the stages whose tasks still run, and returns them (the
    caller deletes the losers' files anyway: an attempt still writing may
    then leave one file behind, which its name ties to the job)."""
    tracker = spark.sparkContext.statusTracker()
    deadline = time.monotonic() + timeout
    while True:
        running = []
        for job_id in tracker.getJobIdsForGroup(group):
            job = tracker.getJobInfo(job_id)
            for stage_id in job.stageIds if job else ():
                stage = tracker.getStageInfo(stage_id)
                if stage and stage.numActiveTasks:
                    running.append(f"stage {stage.stageId} attempt {stage.currentAttemptId}: "
                                   f"{stage.numActiveTasks} running task(s)")
        if not running:
            return []
        if time.monotonic() >= deadline:
            _log.warning("spool.spark.write_records to %s: stopped waiting after %.0f s for task attempts "
                         "that still run (%s); their files are deleted now, and one still being written "
                         "may be left behind under the prefix", prefix, timeout, "; ".join(running))
            return running
        time.sleep(0.2)


def write_records(df: DataFrame, url: PathLike, *, shards: Optional[int] = None, compression: str = "none",
                  compression_level: CompressionLevel = "default", index: bool = True,
                  features: Optional[Sequence[str]] = None, attempts_timeout: float = 120.0) -> DatasetManifest:
    """Writes ``df`` as TFRecord shards under the prefix ``url`` and commits
    ``<url>.manifest.json``; returns the manifest.

    ``shards``: the number of shards (the DataFrame is repartitioned to it);
    left out, one per partition. ``compression``: ``"none"``, ``"zlib"`` or
    ``"gzip"``; ``compression_level`` as for :class:`spool.RecordWriter`
    (``"fast"`` for large conversions). ``index``: write each uncompressed
    shard's DALI index (``<shard>.idx``) for :class:`spool.torch.RecordMapDataset`.
    ``features``: the columns to write (default: all), in this order.
    ``attempts_timeout``: how long the driver waits, after the job, for task
    attempts still running (speculative losers) before it deletes the
    losers' files; past it, it logs a warning (logger ``spool.spark``)
    naming the prefix and the stages still running, and goes on.

    Raises :class:`TypeError` for a column without a feature type,
    :class:`ValueError` for a column to write whose name appears twice (a
    join can leave two), and :class:`FileExistsError` when
    ``<url>.manifest.json`` exists, all before anything is written; a failed job raises its error after deleting what it wrote.
    """
    prefix = os.fspath(url).rstrip("/")
    columns = _columns(df.schema, features)
    compression = engine.compression_name(compression)
    level = str(compression_level)
    engine.check_not_committed(prefix)
    if features is not None:
        df = df.select(*features)
    if attempts_timeout < 0:
        raise ValueError("attempts_timeout must be 0 or more seconds")
    if shards is not None:
        if shards < 1:
            raise ValueError("shards must be 1 or more")
        df = df.repartition(shards)
    job = engine.new_job()

    def write_partition(batches: Iterator[Any]) -> Iterator[Any]:
        # Arrow batches: far cheaper than the rows of df.rdd (no Row objects,
        # no pickling between the JVM and Python), encoded in C++ a batch at a time.
        import pyarrow as pa

        context = TaskContext.get()

        shard = engine.write_shard(prefix, job, context.partitionId(), str(context.taskAttemptId()), columns,
                                   batches, compression, level, index)
        yield pa.RecordBatch.from_pylist([dataclasses.asdict(shard)], schema=_result_arrow_schema())

    spark = df.sparkSession
    context = spark.sparkContext
    group = f"spool-write-records-{job}"
    context.setJobGroup(group, f"spool.spark.write_records to {prefix}", interruptOnCancel=True)
    try:
        written = [engine.WrittenShard(**row.asDict())
                   for row in df.mapInArrow(write_partition, _RESULT_SCHEMA).collect()]
    except BaseException:
        _wait_for_attempts(spark, group, prefix, attempts_timeout)
        engine.discard(prefix, job)
        raise
    finally:
        context.setLocalProperty("spark.jobGroup.id", None)
        context.setLocalProperty("spark.job.description", None)
    _wait_for_attempts(spark, group, prefix, attempts_timeout)
    return engine.commit(prefix, job, compression, columns, written)


_KIND_TYPES = {"int64_list": T.LongType(), "float_list": T.FloatType(), "bytes_list": T.BinaryType()}


def _schema_of(features: Sequence[tuple[str, str]], schema: Any) -> Any:
    if schema is None:
        if not features:
            raise ValueError("the manifest has no schema: give read_records a schema")
        fields = []
        for name, kind in features:
            if kind not in _KIND_TYPES:
                raise ValueError(f"feature {name!r} is of mixed kinds: give read_records a schema")
            fields.append(T.StructField(name, T.ArrayType(_KIND_TYPES[kind])))
        return T.StructType(fields)
    if isinstance(schema, str):
        schema = T._parse_datatype_string(schema)
    _columns(schema, None)  # TypeError for a type no feature maps to
    return schema


def _converter(data_type: Any):
    if isinstance(data_type, T.StringType):
        return lambda v: v.decode()
    if isinstance(data_type, T.BooleanType):
        return bool
    if isinstance(data_type, _INT_TYPES):
        return int
    if isinstance(data_type, _FLOAT_TYPES):
        return float
    return bytes


def read_records(spark: SparkSession, url: PathLike, schema: Any = None) -> DataFrame:
    """The Examples of a dataset as a DataFrame, one row per record, read by
    one task per shard.

    ``url``: the dataset's prefix or its ``.manifest.json``. ``schema``: a
    ``StructType`` or DDL string (``"id long, text string, ints array<long>"``)
    with the types :func:`write_records` maps; a scalar column takes a
    feature's first value, an array column all of them, and a missing
    feature is null. Left out, every feature of the manifest's schema
    becomes an array column of its kind (long, float or binary).
    """
    dataset = engine.read_dataset(os.fspath(url))
    schema = _schema_of(dataset.features, schema)
    fields = [(field.name, isinstance(field.dataType, T.ArrayType),
               _converter(field.dataType.elementType if isinstance(field.dataType, T.ArrayType) else field.dataType))
              for field in schema.fields]

    def read_shard(shard_url: str) -> Iterator[tuple]:
        for batch in engine.example_values(shard_url, dataset.compression):
            for features in batch:
                row = []
                for name, is_list, convert in fields:
                    values = features.get(name)
                    if is_list:
                        row.append(None if values is None else [convert(v) for v in values])
                    else:
                        row.append(convert(values[0]) if values else None)
                yield tuple(row)

    shards = dataset.shards
    rdd = spark.sparkContext.parallelize(shards, max(1, len(shards))).flatMap(read_shard)
    return spark.createDataFrame(rdd, schema)


__all__ = ["read_records", "write_records"]
