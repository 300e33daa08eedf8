"""spool.RecordWriter, RecordReader and ShardedWriter on local files and Ceph RGW."""

from __future__ import annotations

import gzip
import json
import os

import pytest

import spool


def _records(count: int) -> list[bytes]:
    # Sizes from empty to larger than one upload part's share, bytes that compress.
    return [(b"record %d " % i) * (i % 50) + os.urandom(i % 7) for i in range(count)]


@pytest.mark.parametrize("compression", ["none", "zlib", "GZIP"])
def test_write_then_read_each_compression(root: str, compression: str) -> None:
    records = _records(2000)
    url = f"{root}/one.tfrecord"
    with spool.RecordWriter(url, compression) as writer:
        for record in records:
            writer.write(record)
        assert writer.records == len(records)
    assert writer.file is not None and writer.file.records == len(records)
    assert writer.file.payload_bytes == sum(map(len, records))
    assert spool.stat(url).size == writer.file.bytes
    with spool.RecordReader(url, compression) as reader:
        assert reader.compression == compression.upper()
        assert list(reader) == records


def test_compression_follows_the_extension(root: str) -> None:
    with spool.RecordWriter(f"{root}/a.tfrecord.gz") as writer:
        writer.write(b"zipped")
    with spool.open(f"{root}/a.tfrecord.gz") as f:
        assert f.read(2) == b"\x1f\x8b"  # a GZIP member
    with spool.RecordReader(f"{root}/a.tfrecord.gz") as reader:
        assert reader.compression == "GZIP" and list(reader) == [b"zipped"]


def test_the_format_is_tensorflows(root: str) -> None:
    """Framing checked by hand: length, masked CRC32C of it, payload, masked CRC32C."""
    with spool.RecordWriter(f"{root}/plain.tfrecord", "none") as writer:
        writer.write(b"abc")
    with spool.open(f"{root}/plain.tfrecord") as f:
        raw = f.read()
    assert len(raw) == 8 + 4 + 3 + 4 and raw[:8] == (3).to_bytes(8, "little") and raw[12:15] == b"abc"


def test_batches_offsets_and_seek(root: str) -> None:
    records = _records(300)
    url = f"{root}/seek.tfrecord"
    with spool.RecordWriter(url) as writer:
        for record in records:
            writer.write(record)
    with spool.RecordReader(url) as reader:
        assert reader.read_batch(100) == records[:100]
        resume_at = reader.offset
        assert reader.read() == records[100]
    with spool.RecordReader(url) as reader:
        reader.seek(resume_at)
        assert reader.read_batch(1000) == records[100:]
        assert reader.read() is None and reader.read_batch(5) == []


def test_an_exception_in_the_with_block_publishes_nothing(root: str) -> None:
    with pytest.raises(RuntimeError):
        with spool.RecordWriter(f"{root}/aborted.tfrecord") as writer:
            writer.write(b"x" * (6 << 20))
            raise RuntimeError("the converter crashed")
    with pytest.raises(FileNotFoundError):
        spool.stat(f"{root}/aborted.tfrecord")
    with pytest.raises(spool.FailedPreconditionError):
        writer.write(b"after abort")


def test_errors(root: str, tmp_path) -> None:
    with pytest.raises(FileNotFoundError) as missing:
        spool.RecordReader(f"{root}/missing.tfrecord")
    assert "missing.tfrecord" in str(missing.value)
    with pytest.raises(ValueError):
        spool.RecordWriter(f"{root}/x.tfrecord", "lz4")
    with pytest.raises(ValueError):
        spool.RecordReader("ftp://host/x.tfrecord")
    # A damaged record is DataLoss naming the file and the offset.
    good = tmp_path / "good.tfrecord"
    with spool.RecordWriter(good) as writer:
        writer.write(b"a" * 100)
        writer.write(b"b" * 100)
    damaged = bytearray(good.read_bytes())
    damaged[-20] ^= 0xFF  # inside the second payload
    with spool.open(f"{root}/damaged.tfrecord", "wb") as f:
        f.write(damaged)
    with spool.RecordReader(f"{root}/damaged.tfrecord") as reader:
        assert reader.read() == b"a" * 100
        with pytest.raises(spool.DataLossError, match=r"corrupted record at 128 in .*damaged\.tfrecord"):
            reader.read()


def _read_dataset(manifest: spool.DatasetManifest) -> list[bytes]:
    out = []
    for shard in manifest.shards:
        with spool.RecordReader(shard.url) as reader:
            shard_records = list(reader)
        assert len(shard_records) == shard.records
        with spool.open(shard.url) as f:
            stored = f.read()
        assert len(stored) == shard.bytes
        out += shard_records
    return out


def test_sharded_writer_fixed_shards_and_manifest(root: str) -> None:
    records = _records(1000)
    with spool.ShardedWriter(f"{root}/ds/train", shards=4, compression="gzip") as writer:
        for record in records:
            writer.write(record)
    manifest = writer.manifest
    assert manifest is not None and manifest.url.endswith("/ds/train.manifest.json")
    assert manifest.compression == "GZIP" and manifest.total_records == len(records)
    assert [s.name for s in manifest.shards] == [f"train-0000{i}-of-00004.tfrecord.gz" for i in range(4)]
    assert sorted(_read_dataset(manifest)) == sorted(records)
    # Round robin: shard i holds records i, i + 4, ...
    with spool.RecordReader(manifest.shards[1].url) as reader:
        assert list(reader) == records[1::4]
    with spool.open(manifest.url) as f:
        on_disk = json.load(f)
    assert [s["name"] for s in on_disk["shards"]] == [s.name for s in manifest.shards]
    assert sorted(e.url.rsplit("/", 1)[-1] for e in spool.ls(f"{root}/ds")) == sorted(
        [s.name for s in manifest.shards] + ["train.manifest.json"])


def test_sharded_writer_rolled_and_keyed_shards(root: str) -> None:
    records = _records(250)
    with spool.ShardedWriter(f"{root}/rolled/part", max_shard_records=100) as writer:
        for record in records:
            writer.write(record)
    assert [s.records for s in writer.manifest.shards] == [100, 100, 50]
    assert _read_dataset(writer.manifest) == records

    with spool.ShardedWriter(f"{root}/keyed/part", shards=3, by_key=True) as writer:
        for i, record in enumerate(records):
            writer.write(record, key=b"user-%d" % (i % 10))
    assert sorted(_read_dataset(writer.manifest)) == sorted(records)


def test_keys_may_be_text_and_wrong_types_say_what_to_pass(root: str) -> None:
    records = _records(60)
    with spool.ShardedWriter(f"{root}/by-bytes/part", shards=3, by_key=True) as writer:
        for i, record in enumerate(records):
            writer.write(record, key=b"user-%d" % (i % 10))
    with spool.ShardedWriter(f"{root}/by-text/part", shards=3, by_key=True) as writer:
        for i, record in enumerate(records):
            writer.write(record, key=f"user-{i % 10}")  # a str is its UTF-8 bytes
    def shards(name: str) -> list[tuple[str, int]]:
        return [(e.key.rsplit("/", 1)[-1], e.size) for e in spool.ls(f"{root}/{name}/") if "tfrecord" in e.key]

    assert len(shards("by-text")) == 3 and shards("by-text") == shards("by-bytes")

    writer = spool.ShardedWriter(f"{root}/wrong/part", shards=2, by_key=True)
    with pytest.raises(TypeError, match=r"a key must be bytes, bytearray or memoryview, not int"):
        writer.write(b"record", key=7)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"a record must be bytes.*not str \(encode text first"):
        writer.write("record", key="k")  # type: ignore[arg-type]
    writer.abort()
    single = spool.RecordWriter(f"{root}/wrong.tfrecord")
    with pytest.raises(TypeError, match=r"a record must be bytes.*not str \(encode text first"):
        single.write("text")  # type: ignore[arg-type]
    single.abort()


def _unframe(stream: bytes) -> list[bytes]:
    """TFRecord framing by hand: length, its CRC, payload, its CRC."""
    out, at = [], 0
    while at < len(stream):
        length = int.from_bytes(stream[at:at + 8], "little")
        out.append(stream[at + 12:at + 12 + length])
        at += 12 + length + 4
    return out


def test_compression_levels(root: str) -> None:
    """"fast" shards are other bytes than the default's, read by spool and by Python's gzip."""
    records = _records(3000)
    stored = {}
    for level in ("default", "fast", 1):
        with spool.ShardedWriter(f"{root}/levels-{level}/train", shards=2, compression="gzip",
                                 compression_level=level) as writer:
            for record in records:
                writer.write(record)
        assert sorted(_read_dataset(writer.manifest)) == sorted(records)
        with spool.open(writer.manifest.shards[0].url) as f:
            stored[level] = f.read()
        assert _unframe(gzip.decompress(stored[level])) == records[0::2]
    assert stored["fast"] != stored["default"] and stored[1] != stored["default"]

    with spool.RecordWriter(f"{root}/fast.tfrecord.gz", compression_level="fast") as writer:
        for record in records:
            writer.write(record)
    with spool.RecordReader(f"{root}/fast.tfrecord.gz") as reader:
        assert list(reader) == records
    with pytest.raises(ValueError, match="compression level 'quick'"):
        spool.ShardedWriter(f"{root}/bad/train", shards=1, compression="gzip", compression_level="quick")
    with pytest.raises(ValueError, match=r"plain\.tfrecord at a level: it is uncompressed"):
        spool.RecordWriter(f"{root}/plain.tfrecord", compression_level="fast")
    with pytest.raises(ValueError, match="a compression level needs GZIP or ZLIB shards"):
        spool.ShardedWriter(f"{root}/bad/train", shards=1, compression_level=1)
    assert spool.ls(f"{root}/bad", recursive=True) == []


def test_sharded_writer_aborted_leaves_no_dataset(root: str) -> None:
    with pytest.raises(RuntimeError):
        with spool.ShardedWriter(f"{root}/broken/train", shards=2) as writer:
            for record in _records(500):
                writer.write(record)
            raise RuntimeError("interrupted")
    assert spool.ls(f"{root}/broken", recursive=True) == []

