#!/usr/bin/env python3
"""Converts a Parquet table into TFRecord shards of tf.train.Example on Spark
or on Ray Data, committed once with a dataset manifest (docs/records.md,
"From Spark and Ray").

    python samples/python/convert_parquet.py --engine spark \\
        /data/events.parquet s3://bucket/train/events --shards 64 --compression gzip
    python samples/python/convert_parquet.py --engine ray \\
        s3://lake/events/ s3://bucket/train/events --compression gzip

Spark: the master comes from spark-submit (--master), else local[*]. Ray:
ray.init() joins the cluster it runs in (a KubeRay RayJob), else starts a
local one. Prints the manifest's URL and counts as one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine", choices=("spark", "ray"), required=True)
    parser.add_argument("input", help="the Parquet file or folder (Spark: any path Spark reads)")
    parser.add_argument("output", help="the dataset prefix: <output>.manifest.json is written last")
    parser.add_argument("--shards", type=int, default=None, help="shards to write (default: one per partition)")
    parser.add_argument("--compression", default="gzip", choices=("none", "zlib", "gzip"))
    args = parser.parse_args(argv)

    if args.engine == "spark":
        from pyspark.sql import SparkSession

        import spool.spark

        spark = SparkSession.builder.appName("spool-convert-parquet").getOrCreate()
        try:
            manifest = spool.spark.write_records(spark.read.parquet(args.input), args.output, shards=args.shards,
                                                 compression=args.compression, compression_level="fast")
        finally:
            spark.stop()
    else:
        import ray

        import spool.ray

        ray.init()
        ds = ray.data.read_parquet(args.input)
        if args.shards:
            ds = ds.repartition(args.shards)
        sink = spool.ray.RecordsDatasink(args.output, compression=args.compression, compression_level="fast")
        ds.write_datasink(sink)
        manifest = sink.manifest
    print(json.dumps({"manifest": manifest.url, "shards": len(manifest.shards),
                      "records": manifest.total_records}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
