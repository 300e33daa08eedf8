"""spool.torch.RecordMapDataset: records by number over TFRecord shards, with
and without index files, under torch's samplers and DataLoader (batched
fetch, forked workers), on local files, Ceph RGW and the project's GCS
server."""

from __future__ import annotations

import pickle
import uuid

import numpy as np
import pytest
import torch
import torch.utils.data

import spool
import spool.torch
from conftest import create_gcs_bucket

FEATURES = {"label": "int64", "pixels": spool.Feature("float32", (3,))}


@pytest.fixture(scope="module")
def gcs_bucket(gcs_server: str) -> tuple[str, str]:
    """The project's GCS server with a bucket: (host:port, bucket)."""
    return gcs_server, create_gcs_bucket(gcs_server, "spool-map")


def _root(kind: str, request, tmp_path, monkeypatch) -> str:
    if kind == "s3":
        return request.getfixturevalue("s3_prefix")
    if kind == "gcs":
        host, bucket = request.getfixturevalue("gcs_bucket")
        for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST", "CLOUDSDK_CONFIG"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("STORAGE_EMULATOR_HOST", host)
        return f"gs://{bucket}/{uuid.uuid4().hex}"
    return str(tmp_path / "store")


@pytest.fixture(params=["local", pytest.param("s3", marks=pytest.mark.s3), "gcs"])
def store(tmp_path, request, monkeypatch) -> str:
    """A fresh folder: local, on Ceph RGW (marked s3), or on the GCS server."""
    return _root(request.param, request, tmp_path, monkeypatch)


@pytest.fixture(params=[pytest.param("s3", marks=pytest.mark.s3), "gcs"])
def remote(tmp_path, request, monkeypatch) -> str:
    """Like ``store``, for the tests that count requests: the stores that make them."""
    return _root(request.param, request, tmp_path, monkeypatch)


def _record(i: int) -> bytes:
    return spool.encode_example({"label": i, "pixels": np.array([i, i + 0.5, -i], np.float32)})


def _write(root: str, records: int, shards: int, write_index: bool) -> str:
    """A dataset of ``records`` Examples dealt round robin over ``shards``; returns its manifest URL."""
    with spool.ShardedWriter(f"{root}/train", shards=shards, compression="none", write_index=write_index) as w:
        for i in range(records):
            w.write(_record(i))
    return w.manifest.url


def _labels(items) -> list[int]:
    return [spool.parse_example(item, FEATURES)["label"].item() for item in items]


@pytest.mark.parametrize("write_index", [True, False], ids=["index-files", "no-index"])
def test_every_index_returns_its_record(store: str, write_index: bool) -> None:
    manifest = _write(store, records=101, shards=3, write_index=write_index)
    dataset = spool.torch.RecordMapDataset(manifest)
    assert len(dataset) == 101
    # Round robin: shard s holds s, s+3, ...; numbers run shard by shard.
    expected = [i for s in range(3) for i in range(s, 101, 3)]
    assert [spool.parse_example(dataset[i], FEATURES)["label"].item() for i in range(101)] == expected
    assert dataset[-1] == _record(expected[-1])
    assert dataset.locate(35) == (dataset.shards[1], 1)
    assert _labels(dataset.__getitems__([100, 0, 34, 34, 35])) == [expected[i] for i in (100, 0, 34, 34, 35)]
    # The same records through a glob and through the shards' URLs.
    for inputs in (f"{store}/train-*", dataset.shards):
        again = spool.torch.RecordMapDataset(inputs)
        assert again.shards == dataset.shards
        assert again.__getitems__(list(range(101))) == dataset.__getitems__(list(range(101)))


def test_a_missing_index_is_built_in_memory_and_written_only_when_asked(store: str) -> None:
    manifest = _write(store, records=20, shards=2, write_index=False)
    spool.torch.RecordMapDataset(manifest)
    assert not [e for e in spool.ls(f"{store}/") if e.url.endswith(".idx")], "nothing written unasked"
    written = spool.torch.RecordMapDataset(manifest, write_index=True)
    indexes = sorted(e.url for e in spool.ls(f"{store}/") if e.url.endswith(".idx"))
    assert indexes == [shard + ".idx" for shard in written.shards]
    # DALI's lines, as spool's writer writes them.
    with spool.open(indexes[0], "r") as f:
        lines = f.read().splitlines()
    assert len(lines) == 10 and lines[0].startswith("0 ")
    # The next dataset loads them (a stale one would fail its size check).
    assert spool.torch.RecordMapDataset(manifest).__getitems__(list(range(20))) == \
        written.__getitems__(list(range(20)))


def test_features_and_transform(store: str) -> None:
    manifest = _write(store, records=10, shards=1, write_index=True)
    dataset = spool.torch.RecordMapDataset(manifest, features=FEATURES)
    item = dataset[4]
    assert item["label"].dtype == torch.int64 and item["label"].item() == 4
    assert torch.equal(item["pixels"], torch.tensor([4, 4.5, -4], dtype=torch.float32))
    batch = next(iter(torch.utils.data.DataLoader(dataset, batch_size=4)))
    assert batch["label"].tolist() == [0, 1, 2, 3] and batch["pixels"].shape == (4, 3)
    doubled = spool.torch.RecordMapDataset(manifest, features=FEATURES, transform=lambda x: x["label"] * 2)
    assert doubled[3].item() == 6


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_distributed_sampler_epoch_covers_every_record_once(store: str, ranks: int) -> None:
    manifest = _write(store, records=96, shards=4, write_index=False)
    dataset = spool.torch.RecordMapDataset(manifest, features=FEATURES)
    seen: list[int] = []
    for rank in range(ranks):
        sampler = torch.utils.data.DistributedSampler(dataset, num_replicas=ranks, rank=rank, shuffle=True, seed=3)
        sampler.set_epoch(1)
        for batch in torch.utils.data.DataLoader(dataset, batch_size=16, sampler=sampler):
            seen.extend(batch["label"].tolist())
    assert sorted(seen) == list(range(96))
    assert seen != sorted(seen), "the sampler's order, not the dataset's"


class _CountingDataset(spool.torch.RecordMapDataset):
    """Records which fetch hook the DataLoader called, with how many indices."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[str, int]] = []

    def __getitem__(self, index):
        self.calls.append(("item", 1))
        return super().__getitem__(index)

    def __getitems__(self, indices):
        self.calls.append(("items", len(indices)))
        return super().__getitems__(indices)


def test_the_dataloader_fetches_a_batch_through_getitems(store: str) -> None:
    manifest = _write(store, records=150, shards=2, write_index=True)
    dataset = _CountingDataset(manifest)
    loader = torch.utils.data.DataLoader(dataset, batch_size=64, sampler=torch.utils.data.RandomSampler(dataset),
                                         collate_fn=list)
    records = [record for batch in loader for record in batch]
    assert sorted(_labels(records)) == list(range(150))
    assert dataset.calls == [("items", 64), ("items", 64), ("items", 22)]


def _reads(requests: dict) -> int:
    return sum(requests.get(op, {}).get("requests", 0) for op in ("get", "ranged_get"))


def test_a_batch_of_one_shard_is_one_ranged_read(remote: str) -> None:
    manifest = _write(remote, records=500, shards=2, write_index=True)
    dataset = spool.torch.RecordMapDataset(manifest)
    rng = np.random.default_rng(7)
    first_shard = rng.choice(250, size=64, replace=False).tolist()
    assert dataset.__getitems__(first_shard) == [dataset.__getitems__([i])[0] for i in first_shard]
    dataset = spool.torch.RecordMapDataset(manifest)  # fresh counters
    items = dataset.__getitems__(first_shard)
    opened = dataset.requests()
    assert _reads(opened) == 1, opened
    # The read is pinned to the version indexed: the shard's open makes no request.
    assert sum(op["requests"] for op in opened.values()) == 1, opened
    dataset.__getitems__(rng.choice(250, size=64, replace=False).tolist())
    assert _reads(dataset.requests()) == 2
    # Records far apart (beyond max_gap) are separate reads.
    sparse = spool.torch.RecordMapDataset(manifest, max_gap=0)
    sparse.__getitems__([0, 2, 4, 6])
    assert _reads(sparse.requests()) == 4
    assert items == [dataset[i] for i in first_shard]


def test_shards_open_without_a_metadata_request_and_a_deleted_one_is_named(remote: str) -> None:
    """Each process opens the shards it reads from the size and version the
    index took, with no request of its own; that a shard went shows when it
    is read, in the dataset's terms."""
    payload = bytes(range(256)) * 40
    with spool.ShardedWriter(f"{remote}/opened/train", shards=2, compression="none", write_index=True) as w:
        for _ in range(200):
            w.write(payload)
    dataset = spool.torch.RecordMapDataset(w.manifest.url)
    assert dataset.__getitems__([0, 150, 199]) == [payload] * 3
    requests = dataset.requests()
    assert "head" not in requests, requests
    assert _reads(requests) == sum(op["requests"] for op in requests.values()), requests
    spool.rm(dataset.shards[0])  # records 0-99
    with pytest.raises(FileNotFoundError, match=r"train-00000-of-00002\.tfrecord was deleted after the dataset was "
                                                r"opened: restore it or open the dataset again"):
        dataset.__getitems__([5])
    assert dataset.__getitems__([120]) == [payload]


def test_forked_workers_read_through_their_own_connections(store: str) -> None:
    manifest = _write(store, records=90, shards=3, write_index=False)
    dataset = spool.torch.RecordMapDataset(manifest, features=FEATURES)
    dataset.__getitems__([0, 50, 89])  # the parent has opened its shards before the fork
    loader = torch.utils.data.DataLoader(dataset, batch_size=8, num_workers=2, multiprocessing_context="fork",
                                         sampler=torch.utils.data.RandomSampler(dataset))
    for _ in range(2):
        labels = sorted(label for batch in loader for label in batch["label"].tolist())
        assert labels == list(range(90))
    assert dataset[89]["label"].item() == 89, "the parent's reader still works"
    # Pickled (spawn), the dataset travels without its reader and opens its own.
    copy = pickle.loads(pickle.dumps(spool.torch.RecordMapDataset(manifest)))
    assert _labels(copy.__getitems__([0, 1, 2])) == [0, 3, 6]


def test_bad_input_is_a_clear_error(store: str, tmp_path) -> None:
    manifest = _write(store, records=12, shards=2, write_index=False)
    dataset = spool.torch.RecordMapDataset(manifest)
    with pytest.raises(IndexError, match="record 12 is out of range: the dataset has 12 records"):
        dataset[12]
    with pytest.raises(IndexError):
        dataset[-13]
    for bad in ("3", 3.0):
        with pytest.raises(TypeError, match="must be integers"):
            dataset[bad]  # type: ignore[index]
    assert dataset[np.int64(3)] == dataset[torch.tensor(3)] == dataset[3]
    assert dataset.__getitems__([]) == []
    with spool.ShardedWriter(f"{store}/gz/train", shards=1, compression="gzip") as w:
        w.write(b"x")
    with pytest.raises(ValueError, match=r"train-00000-of-00001.tfrecord.gz is GZIP-compressed: random access"):
        spool.torch.RecordMapDataset(f"{store}/gz/train.manifest.json")
    with pytest.raises(FileNotFoundError):
        spool.torch.RecordMapDataset(f"{store}/missing.tfrecord")
    with pytest.raises(ValueError, match="no inputs"):
        spool.torch.RecordMapDataset([])
    # A shard rewritten after the dataset was opened is refused, not misread.
    shard = dataset.shards[1]
    with spool.RecordWriter(shard, compression="none") as w:
        w.write(b"another record")
    with pytest.raises(spool.DataLossError, match="changed since the dataset was opened"):
        dataset[7]


def test_bytes_after_the_last_record_are_refused_when_indexing(tmp_path) -> None:
    """A shard cut inside a record's header (being written, or damaged) has
    bytes the index does not cover: refused at once, not read as records."""
    shard = tmp_path / "cut.tfrecord"
    with spool.RecordWriter(shard, compression="none") as w:
        for i in range(3):
            w.write(_record(i))
    size = shard.stat().st_size
    with open(shard, "ab") as f:
        f.write(b"\x05\x00\x00")
    with pytest.raises(spool.DataLossError, match=rf"cut.tfrecord is {size + 3} bytes but its records end at byte "
                                                  rf"{size}: the shard is damaged or being written"):
        spool.torch.RecordMapDataset(str(shard))


def test_a_changed_shard_or_stale_index_is_refused_not_followed(store: str) -> None:
    manifest = _write(store, records=12, shards=2, write_index=True)
    # Rewritten with records of the same sizes after the dataset was made:
    # their CRCs pass, the version does not.
    dataset = spool.torch.RecordMapDataset(manifest)
    shard = dataset.shards[1]  # records 1, 3, ..., 11
    size = spool.stat(shard).size
    with spool.RecordWriter(shard, compression="none") as w:
        for i in range(13, 25, 2):
            w.write(_record(i))
    assert spool.stat(shard).size == size
    with pytest.raises(spool.DataLossError, match="changed since the dataset was opened"):
        dataset[6]
    # Rewritten with other sizes, its old .idx left beside it.
    shard = dataset.shards[0]
    with spool.RecordWriter(shard, compression="none") as w:
        for i in range(5):
            w.write(_record(100 + i))
    with pytest.raises(ValueError, match=r"bad index .*\.idx.*rebuild"):
        spool.torch.RecordMapDataset(shard)
    with pytest.raises(spool.DataLossError, match="bytes but its dataset manifest says"):
        spool.torch.RecordMapDataset(manifest)
