#!/usr/bin/env python3
"""Parquet -> gzip TFRecord shards on S3 (the Ceph RGW): records per second per
core for spool on Spark, spool on Ray Data, Ray Data's own write_tfrecords,
and a Python loop over tf.io.TFRecordWriter (written locally, then uploaded
with spool.copy: TensorFlow 2.21 has no S3 file system). On demand, never
in the tests:

    bench/engines/run.sh build --rows 1000000

Prints one JSON line per case; run.sh writes them to bench/results.
The table: id, label (int64), score (float64), text (string), embedding
(list of 16 float32).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def make_table(rows: int) -> pa.Table:
    rng = np.random.default_rng(1)
    embedding = rng.random((rows, 16), dtype=np.float32)
    return pa.table({
        "id": pa.array(np.arange(rows, dtype=np.int64)),
        "label": pa.array(rng.integers(0, 1000, rows)),
        "score": pa.array(rng.random(rows)),
        "text": pa.array([f"row {i} of the benchmark table" for i in range(rows)]),
        "embedding": pa.FixedSizeListArray.from_arrays(embedding.reshape(-1), 16).cast(pa.list_(pa.float32())),
    })


def spool_spark(parquet: str, url: str, cores: int, shuffle_timed: bool = False, level: str = "default",
                warm: bool = False):
    """Like the Ray cases, the input is repartitioned to one partition per
    core and materialised (cached) before the clock starts; with
    ``shuffle_timed`` the repartition happens inside the timed write
    (``write_records(..., shards=cores)``), which separates the shuffle's
    cost from the write's. ``level``: the GZIP level (``"fast"``: ISA-L's
    fastest; the others use zlib's default, as TensorFlow does). ``warm``:
    time the application's second write, after an untimed one to a local
    folder: the first write of an application also starts the executors'
    Python workers and the JVM's first Arrow transfers, about 2 s on 2
    cores (of which importing pyarrow and spool is 0.14 s), once per
    application whatever its size; the Ray cases' workers are started by
    the ``materialize()`` before their clock."""
    from pyspark.sql import SparkSession

    import spool.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master(f"local[{cores}]").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.ui.enabled", "false").getOrCreate())
    try:
        df = spark.read.parquet(parquet)
        if not shuffle_timed:
            df = df.repartition(cores).cache()
        df.count()  # start-up and the Parquet footer (and the cache), outside the timing
        if warm:
            with tempfile.TemporaryDirectory() as folder:
                spool.spark.write_records(df, os.path.join(folder, "warm-up"), compression="gzip",
                                          compression_level=level)
        start = time.perf_counter()
        manifest = spool.spark.write_records(df, url, shards=cores if shuffle_timed else None, compression="gzip",
                                             compression_level=level)
        return manifest.total_records, time.perf_counter() - start, manifest.total_bytes
    finally:
        spark.stop()


def _ray(cores: int):
    import ray

    ray.init(num_cpus=cores, include_dashboard=False, log_to_driver=False, _node_ip_address="127.0.0.1")
    ray.data.DataContext.get_current().enable_progress_bars = False
    return ray


def spool_ray(parquet: str, url: str, cores: int):
    ray = _ray(cores)
    import spool.ray

    try:
        ds = ray.data.read_parquet(parquet).repartition(cores).materialize()
        start = time.perf_counter()
        sink = spool.ray.RecordsDatasink(url, compression="gzip")
        ds.write_datasink(sink)
        return sink.manifest.total_records, time.perf_counter() - start
    finally:
        ray.shutdown()


def ray_write_tfrecords(parquet: str, url: str, cores: int):
    import pyarrow.fs

    ray = _ray(cores)
    try:
        fs = pyarrow.fs.S3FileSystem(endpoint_override=os.environ["AWS_ENDPOINT_URL"], scheme="http",
                                     region=os.environ.get("AWS_REGION", "us-east-1"))
        ds = ray.data.read_parquet(parquet).repartition(cores).materialize()
        start = time.perf_counter()
        ds.write_tfrecords(url.removeprefix("s3://"), filesystem=fs,
                           arrow_open_stream_args={"compression": "gzip"})
        return ds.count(), time.perf_counter() - start
    finally:
        ray.shutdown()


def tf_loop(parquet: str, url: str, cores: int):
    import tensorflow as tf

    import spool

    table = pq.read_table(parquet)
    start = time.perf_counter()
    rows = 0
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "train-00000-of-00001.tfrecord.gz")
        with tf.io.TFRecordWriter(path, options="GZIP") as writer:
            for batch in table.to_batches(max_chunksize=8192):
                columns = batch.to_pydict()
                for i in range(batch.num_rows):
                    feature = {
                        "id": tf.train.Feature(int64_list=tf.train.Int64List(value=[columns["id"][i]])),
                        "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[columns["label"][i]])),
                        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[columns["score"][i]])),
                        "text": tf.train.Feature(bytes_list=tf.train.BytesList(value=[columns["text"][i].encode()])),
                        "embedding": tf.train.Feature(float_list=tf.train.FloatList(value=columns["embedding"][i])),
                    }
                    writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
                    rows += 1
        size = os.path.getsize(path)
        spool.copy(path, url + "-00000-of-00001.tfrecord.gz")
    return rows, time.perf_counter() - start, size


def spool_spark_shuffle_timed(parquet: str, url: str, cores: int):
    return spool_spark(parquet, url, cores, shuffle_timed=True)


def spool_spark_fast(parquet: str, url: str, cores: int):
    return spool_spark(parquet, url, cores, level="fast")


def spool_spark_warm(parquet: str, url: str, cores: int):
    return spool_spark(parquet, url, cores, warm=True)


CASES = {"spool-spark": (spool_spark, None), "spool-spark-shuffle-timed": (spool_spark_shuffle_timed, None),
         "spool-spark-fast": (spool_spark_fast, None), "spool-spark-warm": (spool_spark_warm, None),
         "spool-ray": (spool_ray, None),
         "ray-write_tfrecords": (ray_write_tfrecords, None), "tf-python-loop": (tf_loop, 1)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--bucket", default=os.environ.get("SPOOL_BENCH_BUCKET", "spool-bench"))
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        parquet = os.path.join(folder, "table.parquet")
        pq.write_table(make_table(args.rows), parquet, row_group_size=max(1, args.rows // 8))
        for name in args.cases.split(","):
            run, fixed_cores = CASES[name]
            cores = fixed_cores or args.cores
            url = f"s3://{args.bucket}/engines-bench/{name}-{uuid.uuid4().hex[:8]}/train"
            # (records, seconds) or (records, seconds, bytes written)
            records, seconds, *written = run(parquet, url, cores)
            print(json.dumps({"case": name, "rows": records, "cores": cores, "seconds": round(seconds, 2),
                              "records_per_s": round(records / seconds),
                              "records_per_s_per_core": round(records / seconds / cores),
                              "bytes": written[0] if written else None}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
