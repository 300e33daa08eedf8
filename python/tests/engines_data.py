"""The Parquet table the Spark and Ray tests convert, and the checks of what they wrote.

Every mapped type with nulls; ``id`` (no nulls) numbers the rows. The row
count is SPOOL_ENGINES_ROWS (default 5,000, sized for CI; the issue's
1,000,000-row run: SPOOL_ENGINES_ROWS=1000000, see docs/records.md).
"""

from __future__ import annotations

import os
import posixpath

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

import spool

ROWS = int(os.environ.get("SPOOL_ENGINES_ROWS", "5000"))


def table(rows: int = ROWS) -> pa.Table:
    ids = np.arange(rows, dtype=np.int64)
    null = ids % 7 == 3  # every 7th row has its nullable columns null

    def nullable(values, type_):
        return pa.array(values, type=type_, mask=null)

    return pa.table({
        "id": pa.array(ids),
        "i8": pa.array((ids % 100).astype(np.int8)),
        "i32": nullable((ids * 3 - 50).astype(np.int32), pa.int32()),
        "flag": nullable(ids % 2 == 0, pa.bool_()),
        "f32": nullable((ids / 4).astype(np.float32), pa.float32()),
        "f64": pa.array(ids * 0.5),
        "text": nullable([f"row {i}" for i in ids], pa.string()),
        "blob": pa.array([bytes([i % 256, 0, 7]) for i in ids], pa.binary()),
        "ints": nullable([list(range(i % 4)) for i in ids], pa.list_(pa.int64())),
        "floats": pa.array([[float(i), 0.25] for i in ids], pa.list_(pa.float64())),
        "words": pa.array([[b"a", str(i).encode()] for i in ids], pa.list_(pa.string())),
    })


def write_parquet(folder: str, rows: int = ROWS) -> str:
    path = os.path.join(folder, "table.parquet")
    pq.write_table(table(rows), path, row_group_size=max(1, rows // 4))
    return path


def read_ids(manifest: spool.DatasetManifest) -> np.ndarray:
    """Every record's id, through spool's C++ record reader and Example decoder."""
    ids = []
    for shard in manifest.shards:
        with spool.RecordReader(shard.url, manifest.compression) as reader:
            while batch := reader.read_batch(4096):
                ids.append(spool.parse_examples(batch, {"id": "int64"})["id"])
    return np.concatenate(ids) if ids else np.zeros(0, np.int64)


def check_exactly_once(manifest: spool.DatasetManifest, rows: int = ROWS) -> None:
    ids = np.sort(read_ids(manifest))
    assert manifest.total_records == rows
    np.testing.assert_array_equal(ids, np.arange(rows))


def files_under(prefix: str) -> list[str]:
    folder, base = posixpath.split(prefix)
    return sorted(e.url for e in spool.ls(folder + "/", recursive=True) if posixpath.basename(e.url).startswith(base))


def check_no_leftovers(manifest: spool.DatasetManifest, prefix: str) -> None:
    """Under the prefix: the manifest, its shards and their indexes, nothing else."""
    listed = {posixpath.basename(url) for url in files_under(prefix)}
    expected = {posixpath.basename(manifest.url)} | {posixpath.basename(s.url) for s in manifest.shards}
    assert listed - {name + ".idx" for name in expected} == expected


def check_values_with_tensorflow(manifest: spool.DatasetManifest, rows: int = ROWS) -> None:
    """TensorFlow parses every record to the table's values (local shards)."""
    import tensorflow as tf

    expected = table(rows).to_pydict()
    spec = {"id": tf.io.FixedLenFeature([], tf.int64)}
    for name, kind in [("i8", tf.int64), ("i32", tf.int64), ("flag", tf.int64), ("f32", tf.float32),
                       ("f64", tf.float32), ("text", tf.string), ("blob", tf.string), ("ints", tf.int64),
                       ("floats", tf.float32), ("words", tf.string)]:
        spec[name] = tf.io.VarLenFeature(kind)
    compression = "" if manifest.compression == "NONE" else manifest.compression
    data = tf.data.TFRecordDataset([s.url for s in manifest.shards], compression_type=compression)
    seen = 0
    for batch in data.batch(8192).map(lambda r: tf.io.parse_example(r, spec)):
        ids = batch["id"].numpy()
        columns = {name: tf.sparse.to_dense(value, default_value=b"" if value.dtype == tf.string else 0).numpy()
                   for name, value in batch.items() if isinstance(value, tf.sparse.SparseTensor)}
        lengths = {name: tf.math.bincount(tf.cast(value.indices[:, 0], tf.int32), minlength=len(ids)).numpy()
                   for name, value in batch.items() if isinstance(value, tf.sparse.SparseTensor)}
        for row, i in enumerate(ids):
            for name, length in lengths.items():
                want = expected[name][i]
                if want is None:
                    assert length[row] == 0, (name, i)
                    continue
                want = want if isinstance(want, list) else [want]
                got = columns[name][row][: length[row]].tolist()
                if name in ("text", "words"):
                    want = [w.encode() if isinstance(w, str) else w for w in want]
                if name in ("f32", "f64", "floats"):
                    np.testing.assert_allclose(got, np.asarray(want, np.float32), err_msg=f"{name} {i}")
                else:
                    assert got == [int(w) if isinstance(w, bool) else w for w in want], (name, i, got, want)
        seen += len(ids)
    assert seen == rows
