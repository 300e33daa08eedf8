"""Shard cache benchmark: epochs read from a store with no cache, a cache of
100% of the dataset, and 50% with next-use and with LRU eviction: the bytes
GET from the server over the run (the loader prefetches across the epoch
boundary, so a per-epoch split of the bytes would blur) and each epoch's
time.

    bench/loader/cache_run.sh <build dir> [--shards 40 --shard-mb 4 --epochs 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from typing import Optional

import spool


def get_bytes(loader: spool.DataLoader) -> int:
    requests = loader.requests()
    return sum(requests.get(op, {}).get("bytes_received", 0) for op in ("get", "ranged_get"))


def run(manifest: str, epochs: int, limit: Optional[int], policy: str) -> list[tuple[int, float]]:
    cache = tempfile.mkdtemp(prefix="spool-cache-bench-")
    options = {} if limit is None else dict(cache_dir=cache, cache_limit=limit, cache_policy=policy)
    per_epoch = []
    try:
        with spool.DataLoader(manifest, batch_size=64, seed=3, epochs=epochs, **options) as loader:
            epoch, started, fetched = 0, time.monotonic(), 0
            for _ in loader:
                if loader.epoch != epoch:  # the first batch of the next epoch
                    now, total = time.monotonic(), get_bytes(loader)
                    per_epoch.append((total - fetched, now - started))
                    epoch, started, fetched = loader.epoch, now, total
            per_epoch.append((get_bytes(loader) - fetched, time.monotonic() - started))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return per_epoch


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--url", required=True, help="where to write the dataset, e.g. s3://bucket/run-1")
    parser.add_argument("--shards", type=int, default=40)
    parser.add_argument("--shard-mb", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    args = parser.parse_args()
    record = 100_000
    per_shard = args.shard_mb * 1_000_000 // record
    with spool.ShardedWriter(f"{args.url}/train", shards=args.shards) as writer:
        for i in range(args.shards * per_shard):
            writer.write(os.urandom(record))
    manifest = writer.manifest.url
    dataset = writer.manifest.total_bytes
    print(f"dataset: {args.shards} shards, {dataset / 1e6:.1f} MB; {args.epochs} epochs")
    print(f"{'cache':<16} {'MB from server':>15} " + " ".join(f"{'epoch ' + str(e) + ' s':>10}" for e in range(args.epochs)))
    for label, limit, policy in [("none", None, ""), ("100% next_use", dataset, "next_use"),
                                 ("50% next_use", dataset // 2, "next_use"), ("50% lru", dataset // 2, "lru")]:
        epochs = run(manifest, args.epochs, limit, policy)
        total = sum(b for b, _ in epochs)
        print(f"{label:<16} {total / 1e6:>15.1f} " + " ".join(f"{s:>10.2f}" for _, s in epochs))


if __name__ == "__main__":
    main()
