#!/usr/bin/env python3
"""Runs inside the image's engines stage (tests/samples/image_test.py --engines
starts it), with the image's Python, spool and pyarrow.

    engines_in_image.py table PARQUET ROWS
        writes a Parquet table of ROWS rows with a column of every type
        spool.spark and spool.ray map, nulls included
    engines_in_image.py verify PARQUET DATASET_URL
        reads every record of the committed dataset through spool and checks
        that each row of the table is there exactly once with equal values;
        prints the count as JSON
"""

from __future__ import annotations

import json
import struct
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq

from spool import _engine_commit as engine


def table(path: str, rows: int) -> None:
    ids = list(range(rows))
    pq.write_table(pa.table({
        "id": pa.array(ids, pa.int64()),
        "label": pa.array([i % 7 for i in ids], pa.int32()),
        "flag": pa.array([None if i % 11 == 0 else i % 2 == 0 for i in ids], pa.bool_()),
        "score": pa.array([None if i % 13 == 0 else i / 3 for i in ids], pa.float64()),
        "text": pa.array([None if i % 17 == 0 else f"row {i}" for i in ids], pa.string()),
        "blob": pa.array([bytes([i % 256]) * (i % 5) for i in ids], pa.binary()),
        "tokens": pa.array([None if i % 19 == 0 else list(range(i % 4)) for i in ids], pa.list_(pa.int64())),
    }), path, row_group_size=max(1, rows // 8))


def _f32(value: float) -> float:
    return struct.unpack("f", struct.pack("f", value))[0]


def _expected(row: dict) -> tuple:
    """A row as its Example's features: scalars as one-value lists, strings as
    bytes, floats at float32, nulls absent."""
    out = {}
    for name, value in row.items():
        if value is None:
            continue
        values = value if isinstance(value, list) else [value]
        out[name] = tuple(_f32(v) if isinstance(v, float) else v.encode() if isinstance(v, str)
                          else int(v) if isinstance(v, bool) else v for v in values)
    return tuple(sorted(out.items()))


def verify(path: str, url: str) -> None:
    want = Counter(_expected(row) for row in pq.read_table(path).to_pylist())
    dataset = engine.read_dataset(url)
    got = Counter()
    for shard in dataset.shards:
        for batch in engine.example_values(shard, dataset.compression):
            for features in batch:
                got[tuple(sorted((k, tuple(v)) for k, v in features.items()))] += 1
    missing, extra = want - got, got - want
    if missing or extra:
        sys.exit(f"{url}: {sum(missing.values())} rows missing and {sum(extra.values())} unexpected "
                 f"(first missing: {next(iter(missing), None)}; first unexpected: {next(iter(extra), None)})")
    print(json.dumps({"dataset": url, "rows": sum(got.values()), "shards": len(dataset.shards)}))


if __name__ == "__main__":
    if sys.argv[1] == "table":
        table(sys.argv[2], int(sys.argv[3]))
    else:
        verify(sys.argv[2], sys.argv[3])
