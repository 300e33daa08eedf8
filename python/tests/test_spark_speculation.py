"""spool.spark.write_records under real speculative execution.

Spark launches speculative copies only outside local mode, and never on a
host where the task already runs (so not in ``local-cluster`` mode either,
whose executors share one host name). This starts a standalone cluster on
this machine: a master and two workers, one named ``127.0.0.1`` and one
``localhost`` (both loopback), each with one executor. The first attempt of
one partition is held until a second attempt of that partition has started
and written, so both attempts write a shard and the commit has to choose one.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

pytestmark = pytest.mark.engines

import engines_data as data  # noqa: E402

import spool  # noqa: E402

pyspark = pytest.importorskip("pyspark")
from pyspark.sql import SparkSession  # noqa: E402
from pyspark.sql import functions as F  # noqa: E402
from pyspark.sql import types as T  # noqa: E402

import spool.spark  # noqa: E402

ROWS = 3000
PARTITIONS = 3
SLOW_PARTITION = 1
# Set in the executors' environment: where attempts leave their marks.
MARKS_ENV = "SPOOL_TEST_ATTEMPT_MARKS"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _standalone(spark_home: str, work: Path) -> Iterator[str]:
    """A master and two workers with different host names, stopped on exit; yields the master's URL."""
    spark_class = os.path.join(spark_home, "bin", "spark-class")
    url = f"spark://127.0.0.1:{_free_port()}"
    with contextlib.ExitStack() as stack:
        processes: list[subprocess.Popen] = []

        def stop() -> None:
            for process in processes:
                process.terminate()
            for process in processes:
                try:
                    process.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()

        stack.callback(stop)

        def start(name: str, *args: str) -> None:
            log = stack.enter_context(open(work / f"{name}.log", "w"))
            processes.append(subprocess.Popen([spark_class, *args], stdout=log, stderr=subprocess.STDOUT,
                                              env=dict(os.environ, SPARK_WORKER_DIR=str(work / name))))

        start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
              "--port", url.rsplit(":", 1)[1], "--webui-port", str(_free_port()))
        for name, host in (("worker-a", "127.0.0.1"), ("worker-b", "localhost")):
            start(name, "org.apache.spark.deploy.worker.Worker", "--host", host, "--cores", "1",
                  "--memory", "1g", "--webui-port", str(_free_port()), url)
        deadline = time.monotonic() + 180
        while len(re.findall(r"Registering worker", (work / "master.log").read_text())) < 2:
            if time.monotonic() > deadline or any(p.poll() is not None for p in processes):
                raise RuntimeError("the standalone cluster did not start: " + "; ".join(
                    f"{log.name}: {log.read_text()[-1500:]}" for log in sorted(work.glob("*.log"))))
            time.sleep(0.5)
        yield url


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    marks = tmp_path_factory.mktemp("attempts")
    here = os.path.dirname(os.path.abspath(__file__))
    with pytest.MonkeyPatch.context() as env:
        env.setenv("PYSPARK_PYTHON", sys.executable)
        env.setenv("SPARK_LOCAL_IP", "127.0.0.1")
        # The workers start executors with $SPARK_HOME/bin/spark-class: the
        # PyPI package ships it with the jars.
        env.setenv("SPARK_HOME", os.path.dirname(pyspark.__file__))
        env.setenv("PYTHONPATH", os.pathsep.join(filter(None, [here, os.environ.get("PYTHONPATH")])))
        with _standalone(os.environ["SPARK_HOME"], tmp_path_factory.mktemp("standalone")) as master:
            # Speculation as eager as Spark allows: check every 100 ms, a task is
            # slow once it runs longer than the median of the finished ones.
            session = (SparkSession.builder.master(master).appName("spool-speculation-test")
                       .config("spark.driver.host", "127.0.0.1").config("spark.driver.bindAddress", "127.0.0.1")
                       .config("spark.ui.enabled", "false").config("spark.executor.memory", "512m")
                       .config("spark.executorEnv.PYTHONPATH", os.environ["PYTHONPATH"])
                       .config("spark.executorEnv.SPARK_LOCAL_IP", "127.0.0.1")
                       .config(f"spark.executorEnv.{MARKS_ENV}", str(marks))
                       .config("spark.speculation", "true").config("spark.speculation.interval", "100ms")
                       .config("spark.speculation.multiplier", "1").config("spark.speculation.quantile", "0.1")
                       .config("spark.speculation.minTaskRuntime", "100ms")
                       .config("spark.cores.max", "2").getOrCreate())
            try:
                yield session, marks
            finally:
                session.stop()


def _mark_attempt(value):
    """Leaves ``p<partition>-a<attempt>`` per task; holds the first attempt of
    SLOW_PARTITION until another attempt of it has marked (60 s at most)."""
    from pyspark import TaskContext

    context = TaskContext.get()
    marks = os.environ[MARKS_ENV]
    partition, attempt = context.partitionId(), context.attemptNumber()
    mark = os.path.join(marks, f"p{partition}-a{attempt}")
    if not os.path.exists(mark):
        with open(mark, "w") as f:
            f.write(str(context.taskAttemptId()))
        if partition == SLOW_PARTITION and attempt == 0:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and not any(
                    name.startswith(f"p{partition}-a") and name != f"p{partition}-a0" for name in os.listdir(marks)):
                time.sleep(0.1)
    return value


def test_speculative_copy_is_launched_and_one_attempt_is_committed(cluster, tmp_path):
    spark, marks = cluster
    prefix = str(tmp_path / "store" / "spec" / "train")
    mark = F.udf(_mark_attempt, T.LongType())
    df = (spark.range(ROWS).repartition(PARTITIONS).withColumn("id", mark("id"))
          .withColumn("half", F.col("id").cast("double") / 2))
    manifest = spool.spark.write_records(df, prefix)

    # Spark itself started a second attempt of the held partition.
    attempts = sorted(name for name in os.listdir(marks) if name.startswith(f"p{SLOW_PARTITION}-"))
    assert len(attempts) >= 2, f"no speculative attempt ran: {sorted(os.listdir(marks))}"

    # Each partition once in the manifest, each row once with its values.
    assert len(manifest.shards) == PARTITIONS
    data.check_exactly_once(manifest, rows=ROWS)
    ids, halves = [], []
    for shard in manifest.shards:
        with spool.RecordReader(shard.url, manifest.compression) as reader:
            while batch := reader.read_batch(4096):
                parsed = spool.parse_examples(batch, {"id": "int64", "half": "float32"})
                ids.append(parsed["id"])
                halves.append(parsed["half"])
    ids, halves = np.concatenate(ids), np.concatenate(halves)
    np.testing.assert_array_equal(halves, (ids / 2).astype(np.float32))
    data.check_no_leftovers(manifest, prefix)
