"""The loader's local shard cache (cache_dir) on local files and Ceph RGW."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import spool
import spool.torch

FEATURES = {"label": "int64", "pixels": spool.Feature("float32", (4,))}


def _write_dataset(root: str, records: int = 240, shards: int = 6) -> str:
    with spool.ShardedWriter(f"{root}/train", shards=shards) as writer:
        for i in range(records):
            writer.write(spool.encode_example({"label": i, "pixels": np.full(4, i, np.float32)}))
    return writer.manifest.url


def _get_bytes(loader: spool.DataLoader) -> int:
    """Bytes of GET responses (whole and ranged) the loader's store received."""
    requests = loader.requests()
    return sum(requests.get(op, {}).get("bytes_received", 0) for op in ("get", "ranged_get"))


def _read(manifest: str, **options: Any) -> tuple[list[int], dict[str, Any], int]:
    with spool.DataLoader(manifest, batch_size=16, seed=5, features=FEATURES, **options) as loader:
        labels = [int(label) for batch in loader for label in batch["label"]]
        return labels, loader.counters(), _get_bytes(loader)


def test_three_epochs_fetch_each_shard_once_and_keep_the_order(root: str, tmp_path: Path) -> None:
    manifest = _write_dataset(root)
    plain, _, plain_one_epoch_gets = _read(manifest, epochs=1)
    uncached, _, _ = _read(manifest, epochs=3)
    cache = tmp_path / "cache"
    cached, counters, gets = _read(manifest, epochs=3, cache_dir=cache)
    assert cached == uncached  # same records, same order
    assert plain == uncached[:len(plain)]
    shard_bytes = counters["cache_fetched_bytes"]
    assert shard_bytes == sum(p.stat().st_size for p in cache.iterdir() if not p.name.startswith("."))
    assert counters["cache_hits"] + counters["cache_misses"] == 3 * 6
    assert counters["cache_evicted_bytes"] == 0
    if plain_one_epoch_gets:  # an S3 store counts its requests
        # Epochs 2 and 3 sent no GET: three epochs cost what one uncached epoch does.
        assert gets == plain_one_epoch_gets
    # A restarted job reuses the cache: no shard is fetched again.
    again, counters, gets = _read(manifest, epochs=1, cache_dir=cache)
    assert again == plain
    assert counters["cache_fetched_bytes"] == 0 and counters["cache_misses"] == 0
    if plain_one_epoch_gets:
        assert gets == plain_one_epoch_gets - shard_bytes  # the manifest only


def test_streaming_dataset_workers_share_the_cache(root: str, tmp_path: Path) -> None:
    manifest = _write_dataset(root)

    def epochs(**options: Any) -> list[list[int]]:
        dataset = spool.torch.StreamingDataset(manifest, features=FEATURES, batch_size=8, **options)
        loader = spool.torch.DataLoader(dataset, num_workers=2)
        return [[label for batch in loader for label in batch["label"].tolist()] for _ in range(2)]

    cache = tmp_path / "cache"
    assert epochs(cache_dir=os.fspath(cache), cache_limit=1 << 30) == epochs()
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 6


def test_cli_lists_and_clears_the_cache(root: str, tmp_path: Path) -> None:
    manifest = _write_dataset(root)
    cache = tmp_path / "cache"
    _read(manifest, epochs=1, cache_dir=cache, cache_policy="lru")
    cli = os.environ.get("SPOOL_CLI", "spool")
    listed = subprocess.run([cli, "cache", "ls", "--dir", os.fspath(cache)], check=True, capture_output=True,
                            text=True).stdout
    assert listed.strip().splitlines()[-1].startswith("6 shards")
    subprocess.run([cli, "cache", "clear"], check=True, capture_output=True,
                   env={**os.environ, "SPOOL_CACHE_DIR": os.fspath(cache)})
    assert not [p for p in cache.iterdir() if not p.name.startswith(".")]


def _shard_get_bytes(dataset: spool.torch.RecordMapDataset) -> int:
    requests = dataset.requests()
    return sum(requests.get(op, {}).get("bytes_received", 0) for op in ("get", "ranged_get"))


def test_record_map_dataset_reads_shards_from_the_cache(root: str, tmp_path: Path) -> None:
    manifest = _write_dataset(root)
    order = np.random.default_rng(3).permutation(240).tolist()
    plain = spool.torch.RecordMapDataset(manifest).__getitems__(order)
    cache = tmp_path / "cache"
    first = spool.torch.RecordMapDataset(manifest, cache_dir=cache)
    assert [first[i] for i in order] == plain
    counters = first.cache_counters()
    assert counters["cache_misses"] == 6 and counters["cache_hits"] == 0
    assert counters["cache_fetched_bytes"] == sum(p.stat().st_size for p in cache.iterdir()
                                                  if not p.name.startswith("."))
    # Another reader (a later run, another process) of the same node: no GET of shard data.
    second = spool.torch.RecordMapDataset(manifest, cache_dir=cache)
    assert second.__getitems__(order) == plain
    assert second.cache_counters()["cache_misses"] == 0 and second.cache_counters()["cache_hits"] == 6
    assert _shard_get_bytes(second) == 0


def test_record_map_dataset_never_serves_a_cached_copy_of_a_rewritten_shard(root: str, tmp_path: Path) -> None:
    # Labels 200-439: every record the same size, so a rewrite keeps the shard's size.
    with spool.ShardedWriter(f"{root}/train", shards=6) as writer:
        for i in range(240):
            writer.write(spool.encode_example({"label": 200 + i, "pixels": np.full(4, i, np.float32)}))
    manifest, cache = writer.manifest.url, tmp_path / "cache"
    cached = spool.torch.RecordMapDataset(manifest, cache_dir=cache)
    cached.__getitems__(list(range(240)))  # every shard now in the cache
    before = spool.torch.RecordMapDataset(manifest, cache_dir=tmp_path / "other-cache")  # indexed, nothing read
    shard = cached.shards[1]
    size = spool.stat(shard).size
    with spool.RecordReader(shard) as reader:
        labels = [int(v) for v in spool.parse_examples(reader.read_batch(1000), FEATURES)["label"]]
    with spool.RecordWriter(shard, compression="none") as w:
        for label in labels:
            w.write(spool.encode_example({"label": label + 1000, "pixels": np.full(4, label - 200, np.float32)}))
    assert spool.stat(shard).size == size
    # A reader opened before the rewrite refuses its uncached records, as without a cache.
    with pytest.raises(spool.DataLossError, match="changed since the dataset was opened"):
        before.__getitems__(list(range(240)))
    # A reader opened after it gets the new records, not the cached old ones.
    fresh = spool.torch.RecordMapDataset(manifest, cache_dir=cache)
    plain = spool.torch.RecordMapDataset(manifest)
    order = list(range(240))
    assert fresh.__getitems__(order) == plain.__getitems__(order)
    assert fresh.cache_counters()["cache_misses"] == 1 and fresh.cache_counters()["cache_hits"] == 5


def test_record_map_dataset_keeps_the_cache_limit(root: str, tmp_path: Path) -> None:
    manifest = _write_dataset(root)
    cache = tmp_path / "cache"
    shard = max(b[-1] for b in spool.torch.RecordMapDataset(manifest)._bounds)
    limit = int(2 * shard)
    order = np.random.default_rng(4).permutation(240).tolist()
    plain = spool.torch.RecordMapDataset(manifest).__getitems__(order)
    for _ in range(2):  # each pass a new reader: shards are fetched again, evicting others
        dataset = spool.torch.RecordMapDataset(manifest, cache_dir=cache, cache_limit=limit)
        assert [dataset[i] for i in order] == plain
        assert sum(p.stat().st_size for p in cache.iterdir() if not p.name.startswith(".")) <= limit
    assert dataset.cache_counters()["cache_evicted_bytes"] > 0


def test_record_map_dataset_takes_the_cache_from_the_environment(root: str, tmp_path: Path,
                                                                 monkeypatch: Any) -> None:
    manifest = _write_dataset(root)
    cache = tmp_path / "cache"
    monkeypatch.setenv("SPOOL_CACHE_DIR", os.fspath(cache))
    dataset = spool.torch.RecordMapDataset(manifest)
    assert len(dataset.__getitems__(list(range(240)))) == 240
    assert dataset.cache_counters()["cache_misses"] == 6
    assert len([p for p in cache.iterdir() if not p.name.startswith(".")]) == 6
