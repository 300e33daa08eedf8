#!/usr/bin/env python3
"""`spool convert --compression-level fast` writes ordinary GZIP and ZLIB
TFRecord files: Python's own gzip and zlib modules, with the TFRecord
framing (length, masked CRC32C of the length, payload, masked CRC32C of the
payload) checked here, read the same records as from a default-level
conversion of the same table; spool reads them back and verifies them; a
level without compression is refused with a one-line error. (TensorFlow's
reader on fast files: python/tests/test_tensorflow_compat.py.)

  fast_level_test.py --spool PATH

Local files only. Only the standard library.
"""
import argparse
import glob
import gzip
import os
import struct
import subprocess
import sys
import tempfile
import unittest
import zlib

SPOOL = ""


def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def crc32c(data: bytes) -> int:
    c = 0xFFFFFFFF
    for b in data:
        c = _TABLE[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def masked(data: bytes) -> int:
    c = crc32c(data)
    return ((((c >> 15) | (c << 17)) & 0xFFFFFFFF) + 0xA282EAD8) & 0xFFFFFFFF


def records_of(stream: bytes) -> list:
    """The payloads of a TFRecord byte stream, every CRC checked."""
    out, pos = [], 0
    while pos < len(stream):
        header = stream[pos:pos + 12]
        (length,) = struct.unpack("<Q", header[:8])
        assert struct.unpack("<I", header[8:])[0] == masked(header[:8]), f"length CRC at {pos}"
        payload = stream[pos + 12:pos + 12 + length]
        (footer,) = struct.unpack("<I", stream[pos + 12 + length:pos + 16 + length])
        assert footer == masked(payload), f"payload CRC at {pos}"
        out.append(payload)
        pos += 16 + length
    return out


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def spool(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    run = subprocess.run([SPOOL, "--quiet", *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if check and run.returncode != 0:
        raise AssertionError(f"spool {' '.join(args)} exited {run.returncode}: {run.stderr}")
    return run


class FastLevel(unittest.TestCase):
    def setUp(self) -> None:
        self.dir = tempfile.TemporaryDirectory(prefix="spool-fast-level-")
        self.root = self.dir.name
        self.csv = os.path.join(self.root, "table.csv")
        with open(self.csv, "w") as f:
            f.write("id,text,score\n")
            for i in range(3000):
                f.write(f"{i},{'word' * (i % 40)} {i * 7919 % 1000},{i / 3:.4f}\n")

    def tearDown(self) -> None:
        self.dir.cleanup()

    def convert(self, name: str, *flags: str) -> list:
        prefix = os.path.join(self.root, name, "train")
        spool("convert", self.csv, prefix, "--shards", "3", *flags)
        return sorted(p for p in glob.glob(prefix + "-*") if not p.endswith(".idx"))

    def test_fast_gzip_and_zlib_read_as_the_default_level_does(self) -> None:
        expected = [records_of(read(p)) for p in self.convert("plain")]
        default_gzip = self.convert("default", "--compression", "gzip")
        for compression, decode in (("gzip", gzip.decompress), ("zlib", zlib.decompress)):
            with self.subTest(compression=compression):
                shards = self.convert("fast-" + compression, "--compression", compression,
                                      "--compression-level", "fast")
                self.assertEqual(len(shards), 3)
                for shard, want in zip(shards, expected):
                    self.assertEqual(records_of(decode(read(shard))), want, shard)
                spool("records", "verify", os.path.join(self.root, "fast-" + compression, "train"))
                count = spool("records", "count", os.path.join(self.root, "fast-" + compression, "train"))
                self.assertIn("3000", count.stdout)
        # The default level is zlib's (TensorFlow's bytes), so the files differ.
        fast_gzip = self.convert("fast-again", "--compression", "gzip", "--compression-level", "fast")
        self.assertNotEqual(read(default_gzip[0]), read(fast_gzip[0]))

    def test_a_level_without_compression_is_refused(self) -> None:
        run = spool("convert", self.csv, os.path.join(self.root, "x", "train"), "--compression-level", "fast",
                    check=False)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("--compression-level fast needs --compression gzip or zlib", run.stderr)
        self.assertEqual(run.stderr.strip().count("\n"), 0, run.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.root, "x")))
        run = spool("convert", self.csv, os.path.join(self.root, "y", "train"), "--compression", "gzip",
                    "--compression-level", "11", check=False)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("not one of default, fast or 0..9", run.stderr)


def main() -> None:
    global SPOOL
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    args, rest = parser.parse_known_args()
    SPOOL = args.spool
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
