"""Shard cache benchmark: epochs read from the Ceph RGW with no cache, a cache
of 100% and of 50% of the dataset with next-use and with LRU eviction, and
MosaicML Streaming (its own MDS shards of the same samples, written by its
MDSWriter) with the same cache_limit; then spool's epoch 2 with a full cache
beside the same shards read as local files. Per epoch: the bytes GET from the
server and the epoch's time, medians over --rounds.

spool's bytes are its store's request counters (the loader prefetches across
the epoch boundary, so the split of bytes between epochs is approximate; the
total is exact). MosaicML's bytes are the sizes of the files its S3
downloader wrote, counted as each download returns (every byte it GETs lands
in such a file).

    bench/loader/cache_run.sh <build dir> [--shards 40 --shard-mb 4 --epochs 3 --rounds 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import types
from typing import Any, Optional

import spool

BATCH = 64
RECORD = 100_000
Epochs = list[tuple[int, float]]  # (bytes from the server, seconds) per epoch


def sample(i: int) -> bytes:
    """Sample i: RECORD incompressible bytes, the same for every writer."""
    return random.Random(i).randbytes(RECORD)


def get_bytes(loader: spool.DataLoader) -> int:
    requests = loader.requests()
    return sum(requests.get(op, {}).get("bytes_received", 0) for op in ("get", "ranged_get"))


def run_spool(manifest: str, epochs: int, limit: Optional[int], policy: str) -> Epochs:
    cache = tempfile.mkdtemp(prefix="spool-cache-bench-")
    options = {} if limit is None else dict(cache_dir=cache, cache_limit=limit, cache_policy=policy)
    per_epoch = []
    try:
        with spool.DataLoader(manifest, batch_size=BATCH, seed=3, epochs=epochs, **options) as loader:
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


def import_mosaic() -> Any:
    """streaming.base without the package __init__ (it imports torchvision; see
    bench/python/peers_bench.py), with its S3 downloads counted."""
    if "streaming" not in sys.modules:
        spec = importlib.util.find_spec("streaming")
        if spec is None:
            raise SystemExit("cache_bench: MosaicML Streaming is not importable; "
                             "cache_run.sh installs it (bench/python/install_peers.sh)")
        package = types.ModuleType("streaming")
        package.__path__ = list(spec.submodule_search_locations)
        sys.modules["streaming"] = package
    import streaming.base
    return streaming.base


class DownloadCounter:
    """Adds the size of each file MosaicML's S3 downloader writes (it downloads
    from threads, hence the lock)."""

    def __init__(self) -> None:
        from streaming.base.storage.download import S3Downloader
        self.bytes, lock, impl = 0, threading.Lock(), S3Downloader._download_file_impl

        def counted(downloader: Any, remote: str, local: str, timeout: float) -> None:
            impl(downloader, remote, local, timeout)
            with lock:
                self.bytes += os.path.getsize(local)

        S3Downloader._download_file_impl = counted


def run_mosaic(remote: str, epochs: int, limit: Optional[int], block: Optional[int]) -> Epochs:
    """In a process of its own (run by main with --mosaic): MosaicML keeps
    state in shared memory per dataset."""
    import torch
    base = import_mosaic()
    base.util.clean_stale_shared_memory()
    counter = DownloadCounter()
    cache = tempfile.mkdtemp(prefix="mosaic-cache-bench-")
    per_epoch = []
    try:
        dataset = base.StreamingDataset(remote=remote, local=cache, shuffle=True, shuffle_seed=3,
                                        batch_size=BATCH, cache_limit=limit, shuffle_block_size=block)
        for _ in range(epochs):
            started, fetched = time.monotonic(), counter.bytes
            for _ in torch.utils.data.DataLoader(dataset, batch_size=BATCH, num_workers=0, collate_fn=list):
                pass
            per_epoch.append((counter.bytes - fetched, time.monotonic() - started))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return per_epoch


def mosaic_in_child(remote: str, epochs: int, limit: Optional[int], block: Optional[int] = None) -> Epochs:
    """block: MosaicML's shuffle_block_size in samples; None: its default
    (262,144 samples: here the whole dataset, one global shuffle)."""
    r = subprocess.run([sys.executable, os.path.abspath(__file__), "--mosaic",
                        json.dumps([remote, epochs, limit, block])],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:  # e.g. its refusal of a limit under 4 shards: reported in the table
        raise RuntimeError((r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1][:200])
    return [tuple(e) for e in json.loads(r.stdout.strip().splitlines()[-1])]


def write_datasets(url: str, local: str, shards: int, records: int) -> tuple[str, str, str, int]:
    """The same samples as spool shards on the store and on local disk (byte for
    byte the same shards), and as MosaicML MDS shards on the store."""
    manifests = []
    for where in (f"{url}/train", os.path.join(local, "train")):
        with spool.ShardedWriter(where, shards=shards) as writer:
            for i in range(records):
                writer.write(sample(i))
        manifests.append(writer.manifest.url)
    base = import_mosaic()
    staging = tempfile.mkdtemp(dir=local)
    with base.MDSWriter(out=(staging, f"{url}/mds"), columns={"data": "bytes"}, keep_local=True,
                        size_limit=records * (RECORD + 64) // shards) as mds:
        for i in range(records):
            mds.write({"data": sample(i)})
    mds_bytes = sum(os.path.getsize(os.path.join(staging, f)) for f in os.listdir(staging) if f.endswith(".mds"))
    shutil.rmtree(staging, ignore_errors=True)
    print(f"MosaicML MDS shards: {mds_bytes / 1e6:.1f} MB")
    return manifests[0], manifests[1], f"{url}/mds", writer.manifest.total_bytes


def median_epochs(runs: list[Epochs]) -> Epochs:
    return [(int(statistics.median(r[e][0] for r in runs)), statistics.median(r[e][1] for r in runs))
            for e in range(len(runs[0]))]


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--mosaic":
        print(json.dumps(run_mosaic(*json.loads(sys.argv[2]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url", required=True, help="where to write the datasets, e.g. s3://bucket/run-1")
    parser.add_argument("--local", required=True, help="a scratch folder for the local copy")
    parser.add_argument("--shards", type=int, default=40)
    parser.add_argument("--shard-mb", type=int, default=4)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3, help="runs of each case; figures are medians")
    parser.add_argument("--cases", default="", help="only the cases whose label contains this text")
    args = parser.parse_args()
    records = args.shards * (args.shard_mb * 1_000_000 // RECORD)
    remote, local, mds, dataset = write_datasets(args.url, args.local, args.shards, records)
    print(f"dataset: {records} x {RECORD} B in {args.shards} shards, {dataset / 1e6:.1f} MB; "
          f"{args.epochs} epochs, medians of {args.rounds} rounds; load average before: {os.getloadavg()}")
    print(f"| {'case':<24} | {'MB from server':>14} | " + " | ".join(f"epoch {e} MB, s" for e in range(args.epochs)) + " |")
    print("|" + "---|" * (args.epochs + 2))
    cases = [("spool, no cache", lambda: run_spool(remote, args.epochs, None, "")),
             ("spool next_use 100%", lambda: run_spool(remote, args.epochs, dataset, "next_use")),
             ("spool lru 100%", lambda: run_spool(remote, args.epochs, dataset, "lru")),
             ("MosaicML 100%", lambda: mosaic_in_child(mds, args.epochs, dataset)),
             ("spool next_use 50%", lambda: run_spool(remote, args.epochs, dataset // 2, "next_use")),
             ("spool lru 50%", lambda: run_spool(remote, args.epochs, dataset // 2, "lru")),
             ("MosaicML 50%", lambda: mosaic_in_child(mds, args.epochs, dataset // 2)),
             # spool reads 4 shards at once (interleave) through a 1,024-record shuffle
             # buffer; MosaicML's nearest: shuffle blocks of 4 shards' samples.
             ("MosaicML 50%, 4-shard blocks", lambda: mosaic_in_child(mds, args.epochs, dataset // 2, 4 * records // args.shards)),
             ("spool, local files", lambda: run_spool(local, args.epochs, None, ""))]
    results = {}
    for label, run in [c for c in cases if args.cases in c[0]]:
        try:
            results[label] = epochs = median_epochs([run() for _ in range(args.rounds)])
        except RuntimeError as error:
            print(f"| {label:<24} | failed: {error} |", flush=True)
            continue
        total = sum(b for b, _ in epochs)
        print(f"| {label:<24} | {total / 1e6:>14.1f} | " +
              " | ".join(f"{b / 1e6:.0f}, {s:.2f}" for b, s in epochs) + " |", flush=True)
    if "spool next_use 100%" not in results or "spool, local files" not in results:
        return
    cached, files = results["spool next_use 100%"][1][1], statistics.median(s for _, s in results["spool, local files"])
    print(f"\nepoch 2 with a full cache: {cached:.2f} s; local files, median epoch: {files:.2f} s; "
          f"speed ratio {files / cached:.2f}x (goal >= 0.9x); load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
