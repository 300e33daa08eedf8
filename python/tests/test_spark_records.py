"""spool.spark.write_records: Parquet -> Spark (local[2]) -> TFRecord shards, committed once."""

from __future__ import annotations

import os
import sys
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pytest

pytestmark = pytest.mark.engines

import engines_data as data  # noqa: E402

import spool  # noqa: E402
from spool import _engine_commit as engine  # noqa: E402

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import spool.spark  # noqa: E402


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable  # workers run this venv's Python
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    # Workers unpickle this module's UDFs by name.
    here = os.path.dirname(os.path.abspath(__file__))
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")]))
    # local[2, 4]: two cores, a task may fail 3 times (the injected failure
    # is retried); loopback only; speculation on.
    session = (SparkSession.builder.master("local[2,4]").appName("spool-records-test")
               .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "4")
               .config("spark.speculation", "true").config("spark.speculation.interval", "100ms")
               .config("spark.speculation.multiplier", "1").config("spark.speculation.quantile", "0.1")
               .getOrCreate())
    yield session
    session.stop()


@pytest.fixture(scope="module")
def parquet(tmp_path_factory) -> str:
    return data.write_parquet(str(tmp_path_factory.mktemp("parquet")))


def test_parquet_to_shards_every_row_once_with_its_values(spark, parquet, root):
    prefix = f"{root}/events/train"
    df = spark.read.parquet(parquet)
    manifest = spool.spark.write_records(df, prefix, shards=4)
    assert len(manifest.shards) == 4
    assert manifest.url.endswith("train.manifest.json")
    data.check_exactly_once(manifest)
    data.check_no_leftovers(manifest, prefix)
    if not prefix.startswith("s3://"):
        data.check_values_with_tensorflow(manifest)
    # The loader opens the dataset from its manifest.
    with spool.DataLoader(manifest.url, batch_size=1000, features={"id": "int64"}) as loader:
        ids = [i for batch in loader for i in batch["id"].tolist()]
    assert sorted(ids) == list(range(data.ROWS))
    with pytest.raises(FileExistsError):
        spool.spark.write_records(df, prefix)


def test_gzip_shards(spark, parquet, tmp_path):
    prefix = str(tmp_path / "gz" / "train")
    manifest = spool.spark.write_records(spark.read.parquet(parquet), prefix, compression="gzip",
                                         compression_level="fast")
    assert manifest.compression == "GZIP"
    assert all(s.url.endswith(".tfrecord.gz") for s in manifest.shards)
    data.check_exactly_once(manifest)
    data.check_no_leftovers(manifest, prefix)


def _fail_first_attempt(value):
    from pyspark import TaskContext

    context = TaskContext.get()
    if context.attemptNumber() == 0 and context.partitionId() == 1 and value % 1000 == 999:
        raise RuntimeError("injected failure of a first attempt")
    return value


def test_failed_first_attempt_is_retried_and_left_no_files(spark, parquet, root):
    prefix = f"{root}/retried/train"
    fail = F.udf(_fail_first_attempt, T.LongType())
    df = spark.read.parquet(parquet).repartition(3).withColumn("id", fail("id"))
    manifest = spool.spark.write_records(df, prefix)
    data.check_exactly_once(manifest)
    data.check_no_leftovers(manifest, prefix)


def _always_fail(value):
    from pyspark import TaskContext

    if TaskContext.get().partitionId() == 2 and value % 1000 == 999:
        raise RuntimeError("injected failure of every attempt")
    return value


def test_failed_job_leaves_no_manifest_and_no_shards(spark, parquet, root):
    prefix = f"{root}/failed/train"
    fail = F.udf(_always_fail, T.LongType())
    df = spark.read.parquet(parquet).repartition(3).withColumn("id", fail("id"))
    with pytest.raises(Exception, match="injected failure of every attempt"):
        spool.spark.write_records(df, prefix)
    assert data.files_under(prefix) == []


def test_only_the_chosen_attempt_of_a_partition_stays(tmp_path):
    # What speculation leaves: two attempts of one partition committed a
    # shard each; the driver's manifest names one and the other is deleted.
    prefix = str(tmp_path / "spec" / "train")
    columns = [engine.Column("id", "int64", False)]
    job = engine.new_job()
    def ids(*values: int) -> list:
        return [pa.RecordBatch.from_pydict({"id": pa.array(values, pa.int64())})]

    first = engine.write_shard(prefix, job, 0, "1", columns, ids(0, 1), "NONE", "default", True)
    engine.write_shard(prefix, job, 0, "2", columns, ids(0, 1), "NONE", "default", True)
    second = engine.write_shard(prefix, job, 1, "3", columns, ids(2), "NONE", "default", True)
    manifest = engine.commit(prefix, job, "NONE", columns, [first, second])
    data.check_exactly_once(manifest, rows=3)
    data.check_no_leftovers(manifest, prefix)


def test_unsupported_column_is_an_error_before_anything_is_written(spark, tmp_path):
    prefix = str(tmp_path / "bad" / "train")
    df = spark.createDataFrame([(1, {"a": 1})], "id long, attrs map<string,int>")
    with pytest.raises(TypeError, match="column 'attrs' has type map<string,int>"):
        spool.spark.write_records(df, prefix)
    assert not os.path.exists(tmp_path / "bad")
    df = spark.sql("select 1L as id, cast(1.5 as decimal(10,2)) as price")
    with pytest.raises(TypeError, match="column 'price'"):
        spool.spark.write_records(df, prefix)


def test_read_records_gives_back_the_table(spark, parquet, tmp_path):
    prefix = str(tmp_path / "back" / "train")
    df = spark.read.parquet(parquet)
    spool.spark.write_records(df, prefix, shards=2)
    back = spool.spark.read_records(spark, prefix, schema=df.schema)
    assert back.schema == df.schema
    got = {row["id"]: row for row in back.collect()}
    assert sorted(got) == list(range(data.ROWS))
    for want in data.table().to_pylist()[:500]:
        row = got[want["id"]].asDict()
        for name in ("f32", "f64"):  # float_list holds float32
            want[name] = None if want[name] is None else float(np.float32(want[name]))
        want["floats"] = [float(np.float32(v)) for v in want["floats"]]
        assert row == want
    # Without a schema: the manifest's, every feature an array.
    assert spool.spark.read_records(spark, prefix + ".manifest.json").schema["id"].dataType == T.ArrayType(T.LongType())


class _StillRunning:
    """A statusTracker whose job group keeps one stage with a task running."""

    def getJobIdsForGroup(self, group):
        return [7]

    def getJobInfo(self, job_id):
        return SimpleNamespace(stageIds=[3])

    def getStageInfo(self, stage_id):
        return SimpleNamespace(stageId=3, currentAttemptId=1, numActiveTasks=1)


def test_attempts_still_running_past_the_timeout_are_a_warning_naming_them(caplog):
    from spool import spark as spool_spark

    spark = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=_StillRunning))
    with caplog.at_level("WARNING", logger="spool.spark"):
        running = spool_spark._wait_for_attempts(spark, "group", "s3://bucket/prefix", timeout=0.3)
    assert running == ["stage 3 attempt 1: 1 running task(s)"]
    assert "s3://bucket/prefix" in caplog.text and "stopped waiting after" in caplog.text
    assert "stage 3 attempt 1" in caplog.text


def test_a_negative_attempts_timeout_is_a_value_error(spark, tmp_path):
    df = spark.createDataFrame([(1,)], "id long")
    with pytest.raises(ValueError, match="attempts_timeout"):
        spool.spark.write_records(df, str(tmp_path / "t"), attempts_timeout=-1)
