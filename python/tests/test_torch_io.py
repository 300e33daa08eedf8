"""torch.save / torch.load of a state_dict straight through spool.open, no temporary file."""

from __future__ import annotations

import threading

import pytest
import torch

import spool
import spool.torch
from spool._torch_archive import TorchArchiveReader


def test_state_dict_round_trip(root: str) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10))
    with spool.open(f"{root}/model.pt", "wb") as f:
        torch.save(model.state_dict(), f)
    with spool.open(f"{root}/model.pt", "rb") as f:
        loaded = torch.load(f, map_location="cpu")
    expected = model.state_dict()
    assert loaded.keys() == expected.keys()
    assert all(torch.equal(loaded[name], expected[name]) for name in expected)


def _awkward_state() -> dict:
    """Tensors large and small around every threshold the reader is given
    below, shared storages, views, dtypes and plain Python values."""
    generator = torch.Generator().manual_seed(7)
    big = torch.randn(96 << 10, generator=generator)  # 384 KiB: read straight into the tensor
    state = {
        "big": big,
        "big_view": big[1000:2000],  # the same storage: saved and loaded once
        "mid": torch.randn(40 << 10, generator=generator),  # 160 KiB: from a window
        "empty": torch.empty(0),
        "scalar": torch.tensor(3),
        "half": torch.randn(70 << 10, generator=generator).to(torch.bfloat16),
        "strided": torch.randn(256, 512, generator=generator).t(),  # 512 KiB, not contiguous
        "config": {"layers": [1, 2, 3], "name": "model"},
    }
    for i in range(40):  # a run of small tensors longer than a window
        state[f"norm{i}"] = torch.full((3000 + i,), float(i))
    return state


def _assert_same(loaded: dict, expected: dict) -> None:
    assert loaded.keys() == expected.keys()
    for name, value in expected.items():
        if isinstance(value, torch.Tensor):
            assert loaded[name].dtype == value.dtype and torch.equal(loaded[name], value), name
        else:
            assert loaded[name] == value, name
    assert loaded["big_view"].untyped_storage().data_ptr() == loaded["big"].untyped_storage().data_ptr()


class _CountingArchiveReader(TorchArchiveReader):
    """Counts the ranges the reader fetches from the store."""

    def __init__(self, raw, **options) -> None:
        self.fetched: list[tuple[int, int]] = []
        super().__init__(raw, **options)

    def _raw_read(self, start: int, target: memoryview) -> int:
        self.fetched.append((start, len(target)))
        return super()._raw_read(start, target)


SMALL_THRESHOLDS = {"direct_bytes": 256 << 10, "window_bytes": 64 << 10, "tail_bytes": 4 << 10}


def test_load_reads_large_tensors_straight_into_place_and_nothing_twice(root: str) -> None:
    state = _awkward_state()
    spool.torch.save(state, f"{root}/awkward.pt")
    _assert_same(spool.torch.load(f"{root}/awkward.pt"), state)  # with the default thresholds

    with spool.open(f"{root}/awkward.pt", "rb") as f, _CountingArchiveReader(f.raw, **SMALL_THRESHOLDS) as archive:
        _assert_same(torch.load(archive), state)
        size = f.raw.size
    large = {t.untyped_storage().nbytes() for t in (state["big"], state["strided"].contiguous())}
    # Each large tensor is one read of exactly its bytes, into the tensor.
    assert sorted(n for _, n in archive.fetched if n in large) == sorted(large)
    # No byte is fetched twice (the tail and the windows may meet, by a bound
    # of a local header per record), and the windows stop short of large data.
    ranges = sorted(archive.fetched)
    overlap = sum(max(0, (a + n) - b) for (a, n), (b, _) in zip(ranges, ranges[1:]))
    assert overlap <= 4 << 10
    assert sum(n for _, n in ranges) <= size + overlap


def test_load_of_a_legacy_archive_and_of_random_reads(tmp_path) -> None:
    state = _awkward_state()
    path = str(tmp_path / "legacy.pt")
    with open(path, "wb") as f:  # torch's format before 1.6: not a zip archive
        torch.save(state, f, _use_new_zipfile_serialization=False)
    _assert_same(spool.torch.load(path, weights_only=False), state)

    # Whatever the order of reads, the bytes are the file's.
    data = open(path, "rb").read()
    generator = torch.Generator().manual_seed(3)
    with spool.open(path, "rb") as f, TorchArchiveReader(f.raw, **SMALL_THRESHOLDS) as archive:
        for _ in range(200):
            start = int(torch.randint(0, len(data) + 10, (1,), generator=generator))
            length = int(torch.randint(0, 400 << 10, (1,), generator=generator))
            archive.seek(start)
            assert archive.read(length) == data[start:start + length]


def test_load_leaves_no_thread_behind(root: str) -> None:
    state = _awkward_state()
    spool.torch.save(state, f"{root}/threads.pt")
    with spool.open(f"{root}/threads.pt", "rb") as f:
        archive = _CountingArchiveReader(f.raw, **SMALL_THRESHOLDS)
        archive.seek(0)
        archive.read(16)  # starts the next window in the background
        archive.close()
    assert not [t for t in threading.enumerate() if t.name.startswith("spool-torch-load")]
    with pytest.raises(ValueError):
        archive.read(1)
