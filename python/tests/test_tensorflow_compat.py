"""spool's TFRecord files and tf.train.Example codec against TensorFlow itself.

docs/records.md promises that spool's shards feed ``tf.data.TFRecordDataset``
and that TensorFlow's shards feed spool, that the default compression level
gives TensorFlow's bytes exactly, that damaged files are refused as
TensorFlow refuses them, and that Examples move between the two unchanged.
These tests hold spool to that with TensorFlow (tensorflow-cpu) in the same
process: files are written by one side and read by the other, and every
Example is decoded by both parsers and compared value for value (floats bit
for bit, so NaN, -0.0 and the infinities count).

SequenceExamples: the Python package has no SequenceExample decoder, so
spool's side of that comparison is the ``spool records cat --sequence``
command (SPOOL_CLI), which decodes them in C++ and prints protobuf's JSON.

TensorFlow is imported unconditionally: without it these tests fail rather
than skip. Local files only.
"""

from __future__ import annotations

import base64
import csv
import json
import math
import os
import random
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # before the import: TensorFlow's C++ logging

# TensorFlow first, as a training script may import it: spool must not bind
# to TensorFlow's protobuf runtime (test_importing_spool_after_tensorflow).
import tensorflow as tf  # noqa: E402

import spool  # noqa: E402


# --------------------------------------------------------------------------------------------------------------------
# Compression and test data


@dataclass(frozen=True)
class Codec:
    """One compression as each side names it."""

    spool_name: str  # spool.RecordWriter / RecordReader's ``compression``
    tf_name: str     # TFRecordDataset's ``compression_type``, TFRecordWriter's ``options``
    extension: str   # the file name ending both sides use, which spool also reads the compression from


NONE = Codec("none", "", ".tfrecord")
ZLIB = Codec("zlib", "ZLIB", ".tfrecord.zlib")
GZIP = Codec("gzip", "GZIP", ".tfrecord.gz")
CODECS = [pytest.param(NONE, id="NONE"), pytest.param(ZLIB, id="ZLIB"), pytest.param(GZIP, id="GZIP")]


def _records() -> list[bytes]:
    """Records that exercise the framing and the deflate stream: empty ones,
    NUL bytes, text that compresses, random bytes that do not, and more than
    256 KiB in all (TensorFlow deflates its input in 256 KiB steps, so the
    byte-for-byte comparison crosses a step)."""
    rng = random.Random(20260521)
    records = [b"", b"\x00", b"\x00\x00\x00\x00", b"a\x00b\x00", b"\xff" * 17]
    records += [(b"record %d " % i) * (i % 40) + rng.randbytes(i % 9) for i in range(150)]
    records += [rng.randbytes(30_000), b"tfrecord" * 40_000, b""]
    return records


def _write_with_spool(path: Path, records: Iterable[bytes], codec: Codec, *, level: str = "default",
                      write_index: bool = False) -> spool.RecordFile:
    with spool.RecordWriter(path, codec.spool_name, compression_level=level, write_index=write_index) as writer:
        for record in records:
            writer.write(record)
    assert writer.file is not None
    return writer.file


def _write_with_tensorflow(path: Path, records: Iterable[bytes], codec: Codec) -> None:
    with tf.io.TFRecordWriter(str(path), options=codec.tf_name) as writer:
        for record in records:
            writer.write(record)


def _read_with_tensorflow(paths: Path | list[Path], codec: Codec) -> list[bytes]:
    names = [str(p) for p in paths] if isinstance(paths, list) else str(paths)
    return list(tf.data.TFRecordDataset(names, compression_type=codec.tf_name).as_numpy_iterator())


def _read_with_spool(path: Path, compression: Optional[str]) -> list[bytes]:
    with spool.RecordReader(path, compression) as reader:
        return list(reader)


def _index_entries(records: list[bytes]) -> list[tuple[int, int]]:
    """The (offset, framed size) lines of a DALI index for these records."""
    entries, offset = [], 0
    for record in records:
        entries.append((offset, len(record) + 16))
        offset += len(record) + 16
    return entries


def _parse_index(path: Path) -> list[tuple[int, int]]:
    return [(int(offset), int(size)) for offset, size in (line.split() for line in path.read_text().splitlines())]


# --------------------------------------------------------------------------------------------------------------------
# spool writes, TensorFlow reads


@pytest.mark.parametrize("codec, level", [
    pytest.param(NONE, "default", id="NONE"),
    pytest.param(ZLIB, "default", id="ZLIB"),
    pytest.param(GZIP, "default", id="GZIP"),
    pytest.param(ZLIB, "fast", id="ZLIB-fast"),
    pytest.param(GZIP, "fast", id="GZIP-fast"),
])
def test_tensorflow_reads_a_spool_record_file(tmp_path: Path, codec: Codec, level: str) -> None:
    """tf.data reads every record spool's RecordWriter wrote, in order; an
    uncompressed file gets its DALI index beside it, which TensorFlow never
    sees and whose lines agree with the records TensorFlow read."""
    records = _records()
    path = tmp_path / f"data{codec.extension}"
    written = _write_with_spool(path, records, codec, level=level, write_index=codec is NONE)
    assert written.records == len(records)

    assert _read_with_tensorflow(path, codec) == records

    if codec is NONE:
        index = Path(f"{path}.idx")
        assert index.is_file()
        assert _parse_index(index) == _index_entries(records)
    if level == "fast":
        # The fast level must really be another deflater (else this test would
        # only repeat the default level's): its bytes are not the default's.
        default = _write_with_spool(tmp_path / f"default{codec.extension}", records, codec)
        assert default.records == written.records
        assert path.read_bytes() != (tmp_path / f"default{codec.extension}").read_bytes()


@pytest.mark.parametrize("codec, level", [
    pytest.param(NONE, "default", id="NONE-indexed"),
    pytest.param(ZLIB, "fast", id="ZLIB-fast"),
    pytest.param(GZIP, "fast", id="GZIP-fast"),
    pytest.param(GZIP, "default", id="GZIP"),
])
def test_tensorflow_reads_a_spool_sharded_dataset(tmp_path: Path, codec: Codec, level: str) -> None:
    """Each shard of a ShardedWriter dataset (records dealt round robin) reads
    in TensorFlow as exactly its share of the records; TensorFlow's usual
    shard glob finds the data files and none of the index files or the
    manifest beside them."""
    records = _records()
    shards = 3
    with spool.ShardedWriter(tmp_path / "train", shards, compression=codec.spool_name, compression_level=level,
                             write_index=codec is NONE) as writer:
        for record in records:
            writer.write(record)
    manifest = writer.manifest
    assert manifest is not None and manifest.total_records == len(records)
    assert manifest.compression == (codec.tf_name or "NONE")

    shard_paths = [tmp_path / shard.name for shard in manifest.shards]
    assert [p.name for p in shard_paths] == [f"train-{i:05d}-of-{shards:05d}{codec.extension}" for i in range(shards)]
    for i, (shard, path) in enumerate(zip(manifest.shards, shard_paths)):
        from_tensorflow = _read_with_tensorflow(path, codec)
        assert from_tensorflow == records[i::shards], path.name
        assert shard.records == len(from_tensorflow)
        if codec is NONE:
            assert _parse_index(Path(f"{path}.idx")) == _index_entries(from_tensorflow)

    pattern = str(tmp_path / f"train-*-of-{shards:05d}{codec.extension}")
    assert sorted(tf.io.gfile.glob(pattern)) == [str(p) for p in shard_paths]
    # All shards as one TensorFlow dataset: every record once, shard after shard.
    assert _read_with_tensorflow(shard_paths, codec) == [r for i in range(shards) for r in records[i::shards]]


@pytest.fixture(scope="module")
def spool_cli() -> str:
    """The built spool command, as CTest passes it (SPOOL_CLI)."""
    path = os.environ.get("SPOOL_CLI", "")
    if not path or not os.access(path, os.X_OK):
        pytest.fail("SPOOL_CLI must name the built spool command (build/cli/spool)")
    return path


def _run_spool(cli: str, *args: str) -> str:
    run = subprocess.run([cli, "--quiet", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL,
                         timeout=120)
    assert run.returncode == 0, f"spool {' '.join(args)} exited {run.returncode}: {run.stderr}"
    return run.stdout


@pytest.mark.parametrize("codec, flags", [
    pytest.param(NONE, ["--index"], id="NONE-index"),
    pytest.param(GZIP, ["--compression", "gzip", "--compression-level", "fast"], id="GZIP-fast"),
    pytest.param(ZLIB, ["--compression", "zlib", "--compression-level", "fast"], id="ZLIB-fast"),
])
def test_tensorflow_reads_spool_convert_output(tmp_path: Path, spool_cli: str, codec: Codec,
                                               flags: list[str]) -> None:
    """``spool convert`` shards (uncompressed with --index, or at the fast
    level) read in TensorFlow as in spool, and TensorFlow's parser finds the
    table's values in the Examples."""
    rows = [(i, "" if i % 7 == 3 else f"row {i} " + "text" * (i % 13), i / 8) for i in range(60)]
    table = tmp_path / "table.csv"
    with table.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["id", "text", "score"])
        out.writerows(rows)
    prefix = tmp_path / "out" / "train"
    _run_spool(spool_cli, "convert", str(table), str(prefix), "--shards", "2", *flags)

    shard_paths = [Path(f"{prefix}-{i:05d}-of-00002{codec.extension}") for i in range(2)]
    assert sorted(tf.io.gfile.glob(f"{prefix}-*-of-00002{codec.extension}")) == [str(p) for p in shard_paths]
    spec = {"id": tf.io.FixedLenFeature([], tf.int64), "text": tf.io.VarLenFeature(tf.string),
            "score": tf.io.FixedLenFeature([], tf.float32)}
    decoded: dict[int, tuple[str, float]] = {}
    for shard, path in enumerate(shard_paths):
        from_tensorflow = _read_with_tensorflow(path, codec)
        assert from_tensorflow == _read_with_spool(path, codec.spool_name), path.name
        if codec is NONE:
            assert _parse_index(Path(f"{path}.idx")) == _index_entries(from_tensorflow)
        parsed = tf.io.parse_example(from_tensorflow, spec)
        ids = parsed["id"].numpy().tolist()
        assert ids == list(range(shard, len(rows), 2))  # dealt round robin, in table order
        texts = tf.sparse.to_dense(parsed["text"], default_value=b"").numpy()
        for row_id, text, score in zip(ids, texts, parsed["score"].numpy()):
            decoded[row_id] = ((text[0] if len(text) else b"").decode(), float(score))
    assert decoded == {i: (text, float(np.float32(score))) for i, text, score in rows}


# --------------------------------------------------------------------------------------------------------------------
# TensorFlow writes, spool reads; the same bytes from both writers


@pytest.mark.parametrize("codec", CODECS)
def test_spool_reads_a_tensorflow_record_file(tmp_path: Path, codec: Codec) -> None:
    """spool reads a tf.io.TFRecordWriter file record for record, whether the
    compression is given or taken from the extension."""
    records = _records()
    path = tmp_path / f"tf{codec.extension}"
    _write_with_tensorflow(path, records, codec)

    assert _read_with_spool(path, codec.spool_name) == records
    with spool.RecordReader(path) as reader:  # compression from ".gz" / ".zlib"
        assert reader.compression == (codec.tf_name or "NONE")
        assert list(reader) == records


@pytest.mark.parametrize("codec", CODECS)
def test_default_level_output_is_tensorflows_bytes(tmp_path: Path, codec: Codec) -> None:
    """For the same records, spool's writer at the default level and
    tf.io.TFRecordWriter produce identical files."""
    records = _records()
    _write_with_tensorflow(tmp_path / f"tf{codec.extension}", records, codec)
    _write_with_spool(tmp_path / f"spool{codec.extension}", records, codec)
    tf_bytes = (tmp_path / f"tf{codec.extension}").read_bytes()
    spool_bytes = (tmp_path / f"spool{codec.extension}").read_bytes()
    assert len(spool_bytes) == len(tf_bytes)
    assert spool_bytes == tf_bytes


# --------------------------------------------------------------------------------------------------------------------
# Damaged files

_ERROR_AT = re.compile(r"(corrupted|truncated) record at (\d+)")


def _read_until_error(records: Iterable[bytes]) -> tuple[list[bytes], Optional[BaseException]]:
    """The records read before an error, and the error (None when none came)."""
    read: list[bytes] = []
    try:
        for record in records:
            read.append(bytes(record))
    except Exception as error:  # noqa: BLE001  (the caller checks its type)
        return read, error
    return read, None


def _error_position(error: BaseException) -> tuple[str, int]:
    match = _ERROR_AT.search(str(error))
    assert match, f"no 'corrupted/truncated record at N' in: {error}"
    return match.group(1), int(match.group(2))


def _both_read(path: Path, codec: Codec) -> tuple[tuple[list[bytes], Optional[BaseException]],
                                                  tuple[list[bytes], Optional[BaseException]]]:
    dataset = tf.data.TFRecordDataset(str(path), compression_type=codec.tf_name)
    from_tensorflow = _read_until_error(dataset.as_numpy_iterator())
    with spool.RecordReader(path, codec.spool_name) as reader:
        from_spool = _read_until_error(reader)
    return from_tensorflow, from_spool


def test_a_flipped_payload_byte_is_refused_by_both(tmp_path: Path) -> None:
    """One flipped bit in the payload of record 3 of an uncompressed file:
    both readers return records 0-2, then fail with DataLoss naming the same
    offset (the payload's, as TensorFlow reports it)."""
    records = [b"first", b"second", b"", b"the damaged record", b"after it"]
    path = tmp_path / "flipped.tfrecord"
    _write_with_spool(path, records, NONE)
    data = bytearray(path.read_bytes())
    record_offset = sum(len(r) + 16 for r in records[:3])
    data[record_offset + 12 + 4] ^= 0x01  # a byte inside "the damaged record"
    path.write_bytes(bytes(data))

    (tf_read, tf_error), (spool_read, spool_error) = _both_read(path, NONE)
    assert tf_read == spool_read == records[:3]
    assert isinstance(tf_error, tf.errors.DataLossError), tf_error
    assert isinstance(spool_error, spool.DataLossError), spool_error
    assert spool_error.code == "DataLoss"
    assert _error_position(tf_error) == _error_position(spool_error) == ("corrupted", record_offset + 12)


def test_a_record_cut_short_is_refused_by_both(tmp_path: Path) -> None:
    """A file that ends inside a record's payload: both readers return the
    complete records before it, then fail with DataLoss "truncated record"
    at that record's offset."""
    records = [b"one", b"two" * 10, b"three" * 100, b"four"]
    path = tmp_path / "truncated.tfrecord"
    _write_with_spool(path, records, NONE)
    record_offset = sum(len(r) + 16 for r in records[:2])
    path.write_bytes(path.read_bytes()[:record_offset + 12 + 50])  # header and 50 of 500 payload bytes

    (tf_read, tf_error), (spool_read, spool_error) = _both_read(path, NONE)
    assert tf_read == spool_read == records[:2]
    assert isinstance(tf_error, tf.errors.DataLossError), tf_error
    assert isinstance(spool_error, spool.DataLossError), spool_error
    assert _error_position(tf_error) == _error_position(spool_error) == ("truncated", record_offset)


def test_a_partial_header_at_the_end_is_the_end_for_both(tmp_path: Path) -> None:
    """1 to 11 trailing bytes (a header cut short) end the file cleanly in
    TensorFlow, and so in spool: the complete records, no error."""
    records = [b"one", b"two"]
    path = tmp_path / "tail.tfrecord"
    _write_with_spool(path, records + [b"three"], NONE)
    path.write_bytes(path.read_bytes()[:sum(len(r) + 16 for r in records) + 7])

    (tf_read, tf_error), (spool_read, spool_error) = _both_read(path, NONE)
    assert tf_error is None and spool_error is None
    assert tf_read == spool_read == records


@pytest.mark.parametrize("codec", [pytest.param(ZLIB, id="ZLIB"), pytest.param(GZIP, id="GZIP")])
def test_damaged_compressed_data_is_refused_by_both(tmp_path: Path, codec: Codec) -> None:
    """A flipped bit in the middle of a ZLIB/GZIP stream: both readers fail
    with DataLoss and neither returns a record the writer did not write."""
    records = [(b"record %d " % i) * (i + 1) for i in range(60)]
    path = tmp_path / f"flipped{codec.extension}"
    _write_with_spool(path, records, codec)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    path.write_bytes(bytes(data))

    (tf_read, tf_error), (spool_read, spool_error) = _both_read(path, codec)
    assert isinstance(tf_error, tf.errors.DataLossError), tf_error
    assert isinstance(spool_error, spool.DataLossError), spool_error
    assert tf_read == records[:len(tf_read)] and spool_read == records[:len(spool_read)]


@pytest.mark.parametrize("codec", [pytest.param(ZLIB, id="ZLIB"), pytest.param(GZIP, id="GZIP")])
def test_a_compressed_file_cut_short(tmp_path: Path, codec: Codec) -> None:
    """A ZLIB/GZIP file cut in half: spool refuses it (DataLoss), and
    TensorFlow either refuses it too or returns only records the writer
    wrote, fewer than all (docs/records.md: spool deliberately errs where
    TensorFlow may end quietly at the end of the stream)."""
    records = [(b"record %d " % i) * (i + 1) for i in range(60)]
    path = tmp_path / f"cut{codec.extension}"
    _write_with_spool(path, records, codec)
    path.write_bytes(path.read_bytes()[:path.stat().st_size // 2])

    (tf_read, tf_error), (spool_read, spool_error) = _both_read(path, codec)
    assert isinstance(spool_error, spool.DataLossError), spool_error
    assert spool_read == records[:len(spool_read)] and len(spool_read) < len(records)
    assert tf_error is None or isinstance(tf_error, tf.errors.DataLossError), tf_error
    assert tf_read == records[:len(tf_read)] and len(tf_read) < len(records)


# --------------------------------------------------------------------------------------------------------------------
# tf.train.Example: TensorFlow's parser against spool's

# Values at the edges of each list type.
FLOAT_EDGES = [math.nan, math.inf, -math.inf, 0.0, -0.0, 1e-45, 3.4028234663852886e38, -1.5, 0.1]
INT64_EDGES = [-2**63, 2**63 - 1, 0, -1, 1, 2**31, -2**31 - 1, 2**53 + 1]
BYTES_EDGES = [b"", b"\x00", b"a\x00b", b"\x00\x00\x00", b"\xff\xfe\x80", "ünïcödé".encode()]


def _bytes_feature(values: list[bytes]) -> tf.train.Feature:
    return tf.train.Feature(bytes_list=tf.train.BytesList(value=values))


def _float_feature(values: list[float]) -> tf.train.Feature:
    return tf.train.Feature(float_list=tf.train.FloatList(value=values))


def _int64_feature(values: list[int]) -> tf.train.Feature:
    return tf.train.Feature(int64_list=tf.train.Int64List(value=values))


def _example(features: dict[str, tf.train.Feature]) -> tf.train.Example:
    return tf.train.Example(features=tf.train.Features(feature=features))


# name -> (the Feature TensorFlow's writer stores, TF's FixedLenFeature, spool's Feature)
EXAMPLE_FEATURES: dict[str, tuple[tf.train.Feature, tf.io.FixedLenFeature, spool.Feature]] = {
    "floats": (_float_feature(FLOAT_EDGES), tf.io.FixedLenFeature([len(FLOAT_EDGES)], tf.float32),
               spool.Feature("float32", (len(FLOAT_EDGES),))),
    "int64s": (_int64_feature(INT64_EDGES), tf.io.FixedLenFeature([len(INT64_EDGES)], tf.int64),
               spool.Feature("int64", (len(INT64_EDGES),))),
    "bytes": (_bytes_feature(BYTES_EDGES), tf.io.FixedLenFeature([len(BYTES_EDGES)], tf.string),
              spool.Feature("bytes", (len(BYTES_EDGES),))),
    "empty_floats": (_float_feature([]), tf.io.FixedLenFeature([0], tf.float32), spool.Feature("float32", (0,))),
    "empty_int64s": (_int64_feature([]), tf.io.FixedLenFeature([0], tf.int64), spool.Feature("int64", (0,))),
    "empty_bytes": (_bytes_feature([]), tf.io.FixedLenFeature([0], tf.string), spool.Feature("bytes", (0,))),
    "label": (_int64_feature([-2**63]), tf.io.FixedLenFeature([], tf.int64), spool.Feature("int64")),
    "weight": (_float_feature([math.nan]), tf.io.FixedLenFeature([], tf.float32), spool.Feature("float32")),
    "id": (_bytes_feature([b"\x00id\x00"]), tf.io.FixedLenFeature([], tf.string), spool.Feature("bytes")),
    "matrix": (_float_feature([1.0, -0.0, math.inf, 4.5, -math.inf, 6.25]),
               tf.io.FixedLenFeature([2, 3], tf.float32), spool.Feature("float32", (2, 3))),
}


def _assert_same_values(name: str, from_tensorflow: Any, from_spool: Any) -> None:
    """Equal values and shapes; floats compared bit for bit (NaN, -0.0)."""
    expected = np.asarray(from_tensorflow)
    if expected.dtype == object:  # bytes: TensorFlow gives an object array of them
        if expected.ndim == 0:
            assert isinstance(from_spool, bytes) and from_spool == expected.item(), name
        else:
            # spool gives a list of bytes, flat whatever the feature's shape (python/src/examples.h).
            assert isinstance(from_spool, list) and from_spool == expected.reshape(-1).tolist(), name
        return
    got = np.asarray(from_spool)
    assert got.dtype == expected.dtype and got.shape == expected.shape, (name, got.dtype, got.shape)
    if expected.dtype == np.float32:
        np.testing.assert_array_equal(got.view(np.uint32), expected.view(np.uint32), err_msg=name)
    else:
        np.testing.assert_array_equal(got, expected, err_msg=name)


def test_an_example_decodes_as_in_tensorflow() -> None:
    """A TensorFlow-built Example with every list type, empty lists, int64
    extremes, NaN and the infinities, NUL bytes and a 2-d shape: spool's
    parse_example gives tf.io.parse_single_example's values."""
    record = _example({name: stored for name, (stored, _, _) in EXAMPLE_FEATURES.items()}).SerializeToString()
    from_tensorflow = tf.io.parse_single_example(record, {name: tf_spec for name, (_, tf_spec, _) in
                                                          EXAMPLE_FEATURES.items()})
    from_spool = spool.parse_example(record, {name: spec for name, (_, _, spec) in EXAMPLE_FEATURES.items()})
    assert sorted(from_spool) == sorted(EXAMPLE_FEATURES)
    for name in EXAMPLE_FEATURES:
        _assert_same_values(name, from_tensorflow[name].numpy(), from_spool[name])
    # The edge values themselves, not only agreement: a shared misreading would pass the loop above.
    assert from_spool["int64s"].tolist() == INT64_EDGES
    assert from_spool["bytes"] == BYTES_EDGES
    assert np.signbit(from_spool["floats"][4]) and np.isnan(from_spool["floats"][0])

    # float64 reads the same float_list, widened exactly.
    wide = spool.parse_example(record, {"floats": spool.Feature("float64", (len(FLOAT_EDGES),))})["floats"]
    assert wide.dtype == np.float64
    np.testing.assert_array_equal(wide, from_tensorflow["floats"].numpy().astype(np.float64))
    assert np.signbit(wide).tolist() == np.signbit(from_tensorflow["floats"].numpy()).tolist()


def test_a_batch_with_defaults_decodes_as_in_tensorflow() -> None:
    """parse_examples on a batch where some Examples lack a feature: spool's
    per-feature default gives tf.io.parse_example's default_value."""
    examples = [
        _example({"label": _int64_feature([3]), "scores": _float_feature([0.5, math.nan, -2.0]),
                  "name": _bytes_feature([b"a\x00"])}),
        _example({"scores": _float_feature([1.0, 2.0, 3.0])}),
        _example({"label": _int64_feature([2**63 - 1]), "name": _bytes_feature([b""])}),
    ]
    records = [e.SerializeToString() for e in examples]
    from_tensorflow = tf.io.parse_example(records, {
        "label": tf.io.FixedLenFeature([], tf.int64, default_value=-1),
        "scores": tf.io.FixedLenFeature([3], tf.float32, default_value=[0.25] * 3),
        "name": tf.io.FixedLenFeature([], tf.string, default_value=b"?\x00"),
    })
    from_spool = spool.parse_examples(records, {
        "label": spool.Feature("int64", default=-1),
        "scores": spool.Feature("float32", (3,), default=0.25),
        "name": spool.Feature("bytes", default=b"?\x00"),
    })
    for name in ("label", "scores", "name"):
        _assert_same_values(name, from_tensorflow[name].numpy(), from_spool[name])
    assert from_spool["label"].tolist() == [3, -1, 2**63 - 1]
    assert from_spool["name"] == [b"a\x00", b"?\x00", b""]


@pytest.mark.parametrize("stored, tf_spec, spool_spec", [
    pytest.param(_float_feature([1.0]), tf.io.FixedLenFeature([], tf.int64), spool.Feature("int64"),
                 id="float_list-read-as-int64"),
    pytest.param(_int64_feature([1]), tf.io.FixedLenFeature([], tf.string), spool.Feature("bytes"),
                 id="int64_list-read-as-bytes"),
    pytest.param(_float_feature([]), tf.io.FixedLenFeature([0], tf.string), spool.Feature("bytes", (0,)),
                 id="empty-float_list-read-as-bytes"),
    pytest.param(_int64_feature([1, 2]), tf.io.FixedLenFeature([3], tf.int64), spool.Feature("int64", (3,)),
                 id="two-values-for-three"),
    pytest.param(_bytes_feature([]), tf.io.FixedLenFeature([], tf.string, default_value=b"x"),
                 spool.Feature("bytes", default=b"x"), id="empty-list-is-not-missing"),
    pytest.param(None, tf.io.FixedLenFeature([], tf.int64), spool.Feature("int64"), id="missing-without-default"),
])
def test_a_mismatch_is_refused_by_both(stored: Optional[tf.train.Feature], tf_spec: tf.io.FixedLenFeature,
                                       spool_spec: spool.Feature) -> None:
    """Where TensorFlow's parser refuses an Example for a spec (another kind,
    another count, a required feature missing), spool's refuses it too."""
    record = _example({} if stored is None else {"f": stored}).SerializeToString()
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_single_example(record, {"f": tf_spec})
    with pytest.raises(ValueError, match="'f'"):
        spool.parse_example(record, {"f": spool_spec})


def test_a_feature_with_no_list_set_takes_the_default_as_in_tensorflow() -> None:
    """A Feature with no list set is a missing one for FixedLenFeature: the
    default applies, and without a default both refuse it (shape (0,) too)."""
    record = _example({"f": tf.train.Feature()}).SerializeToString()
    from_tensorflow = tf.io.parse_single_example(record, {"f": tf.io.FixedLenFeature([], tf.int64, default_value=5)})
    assert from_tensorflow["f"].numpy() == 5
    assert spool.parse_example(record, {"f": spool.Feature("int64", default=5)})["f"] == 5
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.io.parse_single_example(record, {"f": tf.io.FixedLenFeature([0], tf.int64)})
    with pytest.raises(ValueError, match="missing"):
        spool.parse_example(record, {"f": spool.Feature("int64", shape=(0,))})


def test_spool_encoded_examples_are_tensorflows() -> None:
    """encode_example's bytes are the Example TensorFlow would build from the
    same values (deterministically serialized, byte for byte), and
    tf.io.parse_single_example reads the values back exactly."""
    values: dict[str, Any] = {
        "floats": np.array(FLOAT_EDGES, np.float32),
        "int64s": INT64_EDGES,
        "bytes": BYTES_EDGES,
        "empty_floats": np.zeros(0, np.float32),
        "empty_int64s": np.zeros(0, np.int64),
        "label": 2**63 - 1,
        "weight": -math.inf,
        "id": b"\x00id\x00",
        "text": "ünï",
        "flag": True,
    }
    encoded = spool.encode_example(values)

    expected = _example({
        "floats": _float_feature(FLOAT_EDGES),
        "int64s": _int64_feature(INT64_EDGES),
        "bytes": _bytes_feature(BYTES_EDGES),
        "empty_floats": _float_feature([]),
        "empty_int64s": _int64_feature([]),
        "label": _int64_feature([2**63 - 1]),
        "weight": _float_feature([-math.inf]),
        "id": _bytes_feature([b"\x00id\x00"]),
        "text": _bytes_feature(["ünï".encode()]),
        "flag": _int64_feature([1]),
    })
    # Bytes, not messages: message equality would call NaN unequal to itself and -0.0 equal to 0.0.
    assert encoded == expected.SerializeToString(deterministic=True)

    parsed = tf.io.parse_single_example(encoded, {
        "floats": tf.io.FixedLenFeature([len(FLOAT_EDGES)], tf.float32),
        "int64s": tf.io.FixedLenFeature([len(INT64_EDGES)], tf.int64),
        "bytes": tf.io.FixedLenFeature([len(BYTES_EDGES)], tf.string),
        "empty_floats": tf.io.FixedLenFeature([0], tf.float32),
        "empty_int64s": tf.io.FixedLenFeature([0], tf.int64),
        "label": tf.io.FixedLenFeature([], tf.int64),
        "weight": tf.io.FixedLenFeature([], tf.float32),
        "id": tf.io.FixedLenFeature([], tf.string),
        "text": tf.io.FixedLenFeature([], tf.string),
        "flag": tf.io.FixedLenFeature([], tf.int64),
    })
    _assert_same_values("floats", np.array(FLOAT_EDGES, np.float32), parsed["floats"].numpy())
    assert parsed["int64s"].numpy().tolist() == INT64_EDGES
    assert parsed["bytes"].numpy().tolist() == BYTES_EDGES
    assert parsed["empty_floats"].numpy().shape == (0,) and parsed["empty_int64s"].numpy().shape == (0,)
    assert parsed["label"].numpy() == 2**63 - 1 and parsed["weight"].numpy() == -math.inf
    assert parsed["id"].numpy() == b"\x00id\x00" and parsed["text"].numpy().decode() == "ünï"
    assert parsed["flag"].numpy() == 1


def test_numpy_bytes_arrays_encode_as_a_bytes_list() -> None:
    """An empty NumPy bytes array is an empty bytes_list (TensorFlow refuses a
    float_list for a string feature, even an empty one), and a non-empty one
    holds its values."""
    encoded = spool.encode_example({"tags": np.array([], dtype=np.bytes_), "ids": np.array([b"a", b"bc"]),
                                    "names": np.array(["x", "ÿz"])})
    parsed = tf.io.parse_single_example(encoded, {"tags": tf.io.VarLenFeature(tf.string),
                                                  "ids": tf.io.FixedLenFeature([2], tf.string),
                                                  "names": tf.io.FixedLenFeature([2], tf.string)})
    assert parsed["tags"].values.numpy().tolist() == []
    assert parsed["ids"].numpy().tolist() == [b"a", b"bc"]
    assert [v.decode() for v in parsed["names"].numpy().tolist()] == ["x", "ÿz"]


# --------------------------------------------------------------------------------------------------------------------
# tf.train.SequenceExample: TensorFlow's parser against spool's (the spool command)


def _sequence_examples() -> list[tf.train.SequenceExample]:
    def feature_list(features: list[tf.train.Feature]) -> tf.train.FeatureList:
        return tf.train.FeatureList(feature=features)

    return [
        tf.train.SequenceExample(
            context=tf.train.Features(feature={
                "id": _bytes_feature([b"seq\x000"]),
                "extremes": _int64_feature([-2**63, 2**63 - 1]),
                "specials": _float_feature([math.nan, math.inf, -math.inf, -0.0, 1e-45]),
                "nothing": _float_feature([]),
            }),
            feature_lists=tf.train.FeatureLists(feature_list={
                "tokens": feature_list([_int64_feature([1, -2**63]), _int64_feature([]),
                                        _int64_feature([2**63 - 1, 0, 7])]),
                "frames": feature_list([_float_feature([math.nan, -0.0]), _float_feature([math.inf, -math.inf])]),
                "words": feature_list([_bytes_feature([b"a\x00", b""]), _bytes_feature([]),
                                       _bytes_feature([b"\x00"])]),
                "no_steps": feature_list([]),
            })),
        tf.train.SequenceExample(
            context=tf.train.Features(feature={
                "id": _bytes_feature([b""]), "extremes": _int64_feature([]),
                "specials": _float_feature([0.5]), "nothing": _float_feature([]),
            }),
            feature_lists=tf.train.FeatureLists(feature_list={
                "tokens": feature_list([_int64_feature([5])]), "frames": feature_list([]),
                "words": feature_list([_bytes_feature(["ü".encode()])]), "no_steps": feature_list([]),
            })),
    ]


CONTEXT_TYPES = {"id": tf.string, "extremes": tf.int64, "specials": tf.float32, "nothing": tf.float32}
SEQUENCE_TYPES = {"tokens": tf.int64, "frames": tf.float32, "words": tf.string, "no_steps": tf.int64}


def _values_from_json(feature: dict[str, Any]) -> list[Any]:
    """A Feature in protobuf's JSON mapping with proto field names (as spool
    prints it) as Python values: bytes from base64, int64 from their strings,
    floats with "NaN"/"Infinity", each rounded to float32 as the message
    holds them. A Feature with no list set is ``{}``."""
    if not feature:
        return []
    (kind, value_list), = feature.items()
    values = value_list.get("value", [])  # an empty list prints as {}
    if kind == "bytes_list":
        return [base64.b64decode(v) for v in values]
    if kind == "int64_list":
        return [int(v) for v in values]
    assert kind == "float_list", kind
    return [np.float32(float(v)) for v in values]


def _float_bits(values: Iterable[Any]) -> list[int]:
    return np.array(list(values), np.float32).view(np.uint32).tolist()


def _same(kind: tf.dtypes.DType, from_tensorflow: list[Any], from_spool: list[Any]) -> bool:
    if kind == tf.float32:
        return _float_bits(from_tensorflow) == _float_bits(from_spool)
    return list(from_tensorflow) == list(from_spool)


def test_a_sequence_example_decodes_as_in_tensorflow(tmp_path: Path, spool_cli: str) -> None:
    """SequenceExamples written by TensorFlow, decoded by
    tf.io.parse_single_sequence_example and by spool (``spool records cat
    --sequence``, the only SequenceExample decoder spool exposes outside
    C++): the same context values and the same steps of every feature list,
    for each list type, empty lists and feature lists without steps, int64
    extremes, NaN, the infinities, -0.0 and NUL bytes."""
    examples = _sequence_examples()
    path = tmp_path / "sequences.tfrecord"
    _write_with_tensorflow(path, [e.SerializeToString() for e in examples], NONE)

    lines = _run_spool(spool_cli, "records", "cat", "--sequence", str(path)).splitlines()
    assert len(lines) == len(examples)
    for number, (example, line) in enumerate(zip(examples, lines)):
        # Every JSON number there is a float_list value (int64s are strings): parse_int=float
        # keeps "-0" negative, which int() would not.
        from_spool = json.loads(line, parse_int=float)
        context, sequences = tf.io.parse_single_sequence_example(
            example.SerializeToString(),
            context_features={name: tf.io.RaggedFeature(kind) for name, kind in CONTEXT_TYPES.items()},
            sequence_features={name: tf.io.RaggedFeature(kind) for name, kind in SEQUENCE_TYPES.items()})

        spool_context = from_spool.get("context", {}).get("feature", {})
        assert sorted(spool_context) == sorted(CONTEXT_TYPES), number
        for name, kind in CONTEXT_TYPES.items():
            expected = context[name].numpy().tolist()
            assert _same(kind, expected, _values_from_json(spool_context[name])), (number, name)

        spool_lists = from_spool.get("feature_lists", {}).get("feature_list", {})
        for name, kind in SEQUENCE_TYPES.items():
            expected_steps = sequences[name].to_list()
            spool_steps = [_values_from_json(step) for step in spool_lists.get(name, {}).get("feature", [])]
            assert len(spool_steps) == len(expected_steps), (number, name)
            for step, (want, got) in enumerate(zip(expected_steps, spool_steps)):
                assert _same(kind, want, got), (number, name, step)

    # Known values, so that a misreading shared by both sides cannot pass.
    first = json.loads(lines[0], parse_int=float)
    assert _values_from_json(first["context"]["feature"]["extremes"]) == [-2**63, 2**63 - 1]
    assert _values_from_json(first["context"]["feature"]["id"]) == [b"seq\x000"]


def test_parse_example_reads_a_sequence_examples_context_as_tensorflow_does() -> None:
    """A SequenceExample's context is field 1, like an Example's features:
    tf.io.parse_single_example reads it from a SequenceExample record, and so
    does spool.parse_example (the Python package's only way into one)."""
    record = _sequence_examples()[0].SerializeToString()
    from_tensorflow = tf.io.parse_single_example(record, {
        "id": tf.io.FixedLenFeature([], tf.string), "extremes": tf.io.FixedLenFeature([2], tf.int64),
        "specials": tf.io.FixedLenFeature([5], tf.float32)})
    from_spool = spool.parse_example(record, {
        "id": "bytes", "extremes": ("int64", (2,)), "specials": ("float32", (5,))})
    for name in ("id", "extremes", "specials"):
        _assert_same_values(name, from_tensorflow[name].numpy(), from_spool[name])
    assert from_spool["extremes"].tolist() == [-2**63, 2**63 - 1]


# --------------------------------------------------------------------------------------------------------------------
# Both in one process


def test_importing_spool_after_tensorflow(tmp_path: Path) -> None:
    """docs/python.md's tf.data recipe imports both, and a training script may
    well import TensorFlow first. A child process does what ``import
    tensorflow`` does to the process's symbols -- load TensorFlow's framework
    library RTLD_GLOBAL, in a fraction of the import's time -- then imports
    spool and decodes an Example (the failure was an abort, not an exception:
    without RTLD_DEEPBIND the extension bound to TensorFlow's protobuf
    runtime and clashed on the message name tensorflow.BytesList)."""
    framework = Path(tf.sysconfig.get_lib()) / "libtensorflow_framework.so.2"
    assert framework.is_file(), framework
    package_root = str(Path(spool.__file__).resolve().parent.parent)
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2",
               PYTHONPATH=os.pathsep.join(filter(None, [package_root, os.environ.get("PYTHONPATH")])))
    script = (f"import ctypes, os; ctypes.CDLL({str(framework)!r}, mode=os.RTLD_GLOBAL)\n"
              "import spool\n"
              "print(spool.parse_example(spool.encode_example({'x': 7}), {'x': 'int64'})['x'])\n")
    child = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, cwd=tmp_path,
                           timeout=120)
    assert child.returncode == 0, child.stderr[-2000:]
    assert child.stdout.strip() == "7"
