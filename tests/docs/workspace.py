"""The sample inputs that the examples in the docs name, made in each section's
folder before its blocks run, as a user's own files would be there.

An example may use any of these by its relative name; anything else it needs
comes from an earlier block of its section or from a setup annotation.
"""

from __future__ import annotations

import os
import random
import struct
import zlib

# train.py stands for the user's training script: `python train.py --save-to DIR`
# writes a small checkpoint folder.
TRAIN_PY = '''\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("--save-to", required=True)
folder = parser.parse_args().save_to
os.makedirs(os.path.join(folder, "optimizer"), exist_ok=True)
with open(os.path.join(folder, "model.pt"), "wb") as f:
    f.write(os.urandom(64 * 1024))
with open(os.path.join(folder, "optimizer", "state.bin"), "wb") as f:
    f.write(os.urandom(4096))
'''


def _png(width: int, height: int, seed: int) -> bytes:
    """A valid grey PNG of the given size (the converter keeps the bytes as they are)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    rows = b"".join(b"\x00" + bytes((seed * 7 + x + y) % 256 for x in range(width)) for y in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def _write(path: str, data: bytes | str) -> None:
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    with open(path, "wb") as f:
        f.write(data.encode() if isinstance(data, str) else data)


def make(folder: str) -> None:
    """Writes the sample inputs into `folder`."""
    rng = random.Random(42)
    digits = ["label," + ",".join(f"p{i}" for i in range(64))]
    for n in range(200):
        digits.append(f"{n % 10}," + ",".join(str(rng.randrange(17)) for _ in range(64)))
    _write(os.path.join(folder, "digits.csv"), "\n".join(digits) + "\n")
    _write(os.path.join(folder, "events.jsonl"),
           "".join(f'{{"user": "u{n}", "clicks": {n % 5}, "score": {n / 7:.3f}}}\n' for n in range(50)))
    for class_index, name in enumerate(("airplane", "automobile", "bird")):
        for n in range(4):
            _write(os.path.join(folder, "cifar10", "train", name, f"{n:04d}.png"), _png(8, 8, class_index * 10 + n))
    for name in ("raw/readme.txt", "raw/part-0.bin", "raw/sub/part-1.bin", "dataset/a.txt", "dataset/b/c.txt",
                 "checkpoints/model.pt", "checkpoints/optimizer.pt", "logs/train.log", "file",
                 "model.ckpt", "train-00000-of-00016"):
        _write(os.path.join(folder, name), f"{name}\n" * 100)
    _write(os.path.join(folder, "ckpt", "model.pt"), os.urandom(32 * 1024))
    _write(os.path.join(folder, "ckpt", "optimizer", "state.bin"), os.urandom(4096))
    _write(os.path.join(folder, "train.py"), TRAIN_PY)
    with open(os.path.join(folder, "big.bin"), "wb") as f:   # 40 MiB of zeros, sparse: a multipart upload
        f.truncate(40 << 20)
