"""Arrow batches to tf.train.Example in C++ (what spool.spark and spool.ray
write) give the bytes of the row-by-row Python encoding they replaced."""

from __future__ import annotations

from typing import Any, Sequence

import pyarrow as pa
import pytest

from spool import _engine_commit as engine
from spool import _spool


def _python_encoding(columns: Sequence[engine.Column], row: Sequence[Any]) -> bytes:
    # The former per-row path: values through Python objects, then _encode_example.
    def values(value: Any, kind: str) -> list:
        if kind == "bytes":
            return [v.encode() if isinstance(v, str) else bytes(v) for v in value]
        if kind == "int64":
            return [int(v) for v in value]
        return [float(v) for v in value]

    entries = []
    for column, value in zip(columns, row):
        if value is None:
            continue
        entries.append((column.name, column.kind, values(value if column.is_list else (value,), column.kind)))
    return _spool._encode_example(entries)


def _batch() -> pa.RecordBatch:
    rows = 40
    data = {
        "i8": pa.array([None if i % 7 == 0 else i - 20 for i in range(rows)], pa.int8()),
        "i16": pa.array([i * -300 for i in range(rows)], pa.int16()),
        "i32": pa.array([i * 70000 for i in range(rows)], pa.int32()),
        "i64": pa.array([(i - 20) * 2**40 for i in range(rows)], pa.int64()),
        "u8": pa.array([i * 6 for i in range(rows)], pa.uint8()),
        "u16": pa.array([i * 1600 for i in range(rows)], pa.uint16()),
        "u32": pa.array([i * 100_000_000 for i in range(rows)], pa.uint32()),
        "u64": pa.array([i * 2**57 for i in range(rows)], pa.uint64()),
        "flag": pa.array([None if i % 5 == 0 else i % 2 == 0 for i in range(rows)], pa.bool_()),
        "f16": pa.array([i / 4 for i in range(rows)], pa.float16()),
        "f32": pa.array([i / 3 for i in range(rows)], pa.float32()),
        "f64": pa.array([None if i % 3 == 0 else i / 7 + 1e-9 for i in range(rows)], pa.float64()),
        "text": pa.array([None if i % 4 == 0 else "é" * (i % 3) for i in range(rows)], pa.string()),
        "large_text": pa.array([f"row {i}" for i in range(rows)], pa.large_string()),
        "blob": pa.array([bytes([i]) * (i % 5) for i in range(rows)], pa.binary()),
        "large_blob": pa.array([None if i % 6 == 0 else b"\x00" * i for i in range(rows)], pa.large_binary()),
        "ints": pa.array([None if i % 8 == 0 else list(range(i % 4)) for i in range(rows)], pa.list_(pa.int32())),
        "flags": pa.array([[True, False][: i % 3] for i in range(rows)], pa.list_(pa.bool_())),
        "floats": pa.array([[i / 2, -i / 3] for i in range(rows)], pa.large_list(pa.float64())),
        "words": pa.array([None if i % 9 == 0 else ["a", "", "bc"][: i % 4] for i in range(rows)],
                          pa.list_(pa.string())),
        "blobs": pa.array([[b"x" * i] for i in range(rows)], pa.large_list(pa.large_binary())),
        "empty": pa.array(["" for _ in range(rows)], pa.string()),
    }
    return pa.RecordBatch.from_pydict(data)


def _columns(batch: pa.RecordBatch) -> list[engine.Column]:
    import spool.ray  # noqa: F401 - only for arrow_columns' mapping, when ray is there
    return spool.ray.arrow_columns(batch.schema)


@pytest.fixture(scope="module")
def columns() -> list[engine.Column]:
    pytest.importorskip("ray")
    return _columns(_batch())


@pytest.mark.parametrize("offset,length", [(0, 40), (3, 30), (17, 1), (40, 0)])
def test_arrow_batch_gives_the_bytes_of_the_python_encoding(columns, offset, length):
    batch = _batch().slice(offset, length)  # slices: every buffer read at an offset
    expected = [_python_encoding(columns, row) for row in zip(*(c.to_pylist() for c in batch.columns))]
    assert engine.encode_batch(columns, batch) == expected
    assert len(expected) == length


def test_lists_sliced_inside_their_values_keep_their_elements(columns):
    # A list array whose values array is itself a slice (a nonzero child offset).
    values = pa.array(list(range(100)), pa.int64()).slice(10, 50)
    lists = pa.ListArray.from_arrays(pa.array([0, 2, 2, 5], pa.int32()), values)
    batch = pa.RecordBatch.from_arrays([lists], ["ints"])
    ints = [engine.Column("ints", "int64", True)]
    assert engine.encode_batch(ints, batch) == [_python_encoding(ints, (row,)) for row in lists.to_pylist()]


def test_rows_of_nulls_and_names_past_ascii_encode_as_protobuf_does():
    # The encoder writes the wire format itself: an all-null row is an empty
    # Example, and features go in byte order of their names (UTF-8 "é" after "z").
    batch = pa.RecordBatch.from_arrays([
        pa.array([1, None, None], pa.int64()),
        pa.array(["a", None, "c"], pa.string()),
        pa.array([None, None, 2.5], pa.float64()),
        pa.array([[1.0], None, []], pa.list_(pa.float32())),
    ], ["z", "é", "f", "a"])
    columns = [engine.Column("z", "int64", False), engine.Column("é", "bytes", False),
               engine.Column("f", "float", False), engine.Column("a", "float", True)]
    rows = list(zip(*(c.to_pylist() for c in batch.columns)))
    encoded = engine.encode_batch(columns, batch)
    assert encoded == [_python_encoding(columns, row) for row in rows]
    assert encoded[1] == b""


def test_a_name_twice_is_a_value_error_before_anything_is_written():
    # A join leaves two columns of one name; features= may name one twice.
    import pyspark.sql.types as T
    import spool.ray
    import spool.spark

    twice = T.StructType([T.StructField("id", T.LongType()), T.StructField("id", T.LongType()),
                          T.StructField("x", T.DoubleType())])
    with pytest.raises(ValueError, match="column 'id' appears twice"):
        spool.spark._columns(twice, None)
    assert [c.name for c in spool.spark._columns(twice, ["x"])] == ["x"]
    with pytest.raises(ValueError, match="column 'x' appears twice"):
        spool.spark._columns(twice, ["x", "x"])
    schema = pa.schema([("id", pa.int64()), ("id", pa.int64()), ("x", pa.float64())])
    with pytest.raises(ValueError, match="column 'id' appears twice"):
        spool.ray.arrow_columns(schema)
    assert [c.name for c in spool.ray.arrow_columns(schema, ["x"])] == ["x"]


def test_a_null_inside_a_list_is_a_value_error_naming_the_column():
    batch = pa.RecordBatch.from_pydict({"ints": pa.array([[1], [2, None]], pa.list_(pa.int64()))})
    with pytest.raises(ValueError, match="column 'ints': an array holds a null"):
        engine.encode_batch([engine.Column("ints", "int64", True)], batch)


def test_an_unsigned_value_past_int64_is_a_value_error():
    batch = pa.RecordBatch.from_pydict({"big": pa.array([1, 2**63], pa.uint64())})
    with pytest.raises(ValueError, match="column 'big': a value of 2\\^63 or more"):
        engine.encode_batch([engine.Column("big", "int64", False)], batch)


def test_buffers_too_short_for_the_array_are_a_value_error_not_a_read_past_them():
    # (name, (type, offset, length, validity, offsets, data), items): the
    # description Python hands the encoder; a lie about lengths must not
    # make it read outside the buffers it was given.
    four_ints = bytes(4 * 8)
    offsets = bytes([0, 0, 0, 0, 9, 0, 0, 0])  # one element of 9 bytes
    bad = [
        [("n", ("int64", 0, 5, None, None, four_ints), None)],  # 5 values in 4
        [("n", ("int64", 2, 3, None, None, four_ints), None)],  # offset + length past the end
        [("n", ("int64", 0, 4, bytes(0), None, four_ints), None)],  # a validity bitmap too short
        [("b", ("binary", 0, 1, None, offsets, b"short"), None)],  # bytes past the data
        [("b", ("binary", 0, 2, None, offsets, b"x" * 9), None)],  # offsets for one element, two asked
        [("l", ("list", 0, 1, None, bytes([0, 0, 0, 0, 5, 0, 0, 0]), None),
          ("int64", 0, 4, None, None, four_ints))],  # a list past its items
    ]
    for columns in bad:
        with pytest.raises(ValueError, match="do not match its type|offsets past its items"):
            _spool._encode_arrow_examples(columns)
    assert len(_spool._encode_arrow_examples([("n", ("int64", 0, 4, None, None, four_ints), None)])) == 4
    with pytest.raises(ValueError, match="two columns are named 'n'; rename or drop one"):
        _spool._encode_arrow_examples([("n", ("int64", 0, 4, None, None, four_ints), None)] * 2)
