#!/usr/bin/env python3
"""The Python package beside what a PyTorch user would otherwise run, on the
same server in the same run (bench/python/run.sh starts it):

1. streaming: spool.torch.StreamingDataset through spool.torch.DataLoader
   (0 and 2 workers; records as bytes, and as uint8 tensors without a
   copy) vs the C++ DataLoader (loader_bench) on the same shards, and vs
   boto3 + a pure-Python TFRecord reader (what a user writes without
   spool), in records/s;
2. checkpoint: spool.torch.save of a state_dict straight to S3 vs torch.save
   to a local file followed by `aws s3 cp`, in seconds and MiB/s.

Each figure is the median of --rounds runs, with min-max and the client's
CPU seconds (user+sys, this process and its children). The streaming cases
and the C++ loader take turns: each round runs one C++ pass of --epochs
epochs, then as many epochs of a new dataset in every Python case, so a
change in the machine's state between rounds touches both sides of a ratio
alike. Prints a Markdown table and writes --json.

    bench/python/run.sh <build dir> [--records 4096] [--rounds 3] [--epochs 3] [--state-mib 1024] [--only REGEX]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import resource
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from typing import Callable, Dict, List, Tuple

import boto3
import torch

import spool
import spool.torch


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def measure_once(run: Callable[[], float]) -> Tuple[float, float, float]:
    """`run` returns its amount of work (records or bytes): (work per second,
    seconds, client CPU seconds) of one run."""
    cpu, start = cpu_seconds(), time.monotonic()
    work = run()
    elapsed = time.monotonic() - start
    return work / elapsed, elapsed, cpu_seconds() - cpu


def summarize(samples: List[Tuple[float, float, float]]) -> Dict[str, float]:
    """Medians (and the rates' min-max) of measure_once's samples."""
    rates, seconds, cpus = (list(column) for column in zip(*samples))
    return {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
            "seconds": statistics.median(seconds), "cpu_seconds": statistics.median(cpus), "rounds": len(samples)}


def measure(run: Callable[[], float], rounds: int) -> Dict[str, float]:
    return summarize([measure_once(run) for _ in range(rounds)])


class SpoolRounds:
    """Each call is one round: a new dataset read for ``epochs`` epochs through
    one spool.torch.DataLoader, as a training run reads it (each epoch opens a
    new C++ loader; without workers, from the second on it reuses the record
    pool of the one before; workers are new processes each epoch), against
    one loader_bench pass of as many epochs (one C++ loader, one pool). The
    C++ loader's options in loader_bench, its 2 MiB fetch_chunk included.
    The dataset is kept until :meth:`release`, so that
    its teardown (unmapping the pool) falls outside the timing, as the C++
    loader's does in loader_bench."""

    def __init__(self, manifest: str, workers: int, record_type: str, epochs: int) -> None:
        self.manifest, self.workers, self.record_type, self.epochs = manifest, workers, record_type, epochs
        self.kept: List[object] = []

    def __call__(self) -> float:
        dataset = spool.torch.StreamingDataset(self.manifest, batch_size=32, seed=1, shuffle_buffer=256,
                                               interleave=4, memory_budget=256 << 20, read_ahead=16 << 20,
                                               fetch_chunk=2 << 20, record_type=self.record_type)
        loader = spool.torch.DataLoader(dataset, num_workers=self.workers)
        self.kept = [dataset, loader]
        return sum(len(batch) for _ in range(self.epochs) for batch in loader)

    def release(self) -> None:
        self.kept = []


def stream_boto3(bucket: str, prefix: str) -> float:
    """What a user writes without spool: list the shards, GET each whole, and
    walk the TFRecord framing in Python (length, CRC skipped, payload)."""
    s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL"])
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix=prefix)["Contents"]
            if o["Key"].endswith(".tfrecord")]
    records = 0
    for key in keys:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        offset = 0
        while offset < len(body):
            (length,) = struct.unpack_from("<Q", body, offset)
            payload = body[offset + 12:offset + 12 + length]  # the record, as a user's loop gets it
            offset += 12 + length + 4
            records += len(payload) > 0
    return records


def loader_bench(build: str, s3_prefix: str, local: str, records: int, *flags: str) -> str:
    return subprocess.run([os.path.join(build, "bench", "loader", "loader_bench"), "--s3", s3_prefix, "--local",
                           local, "--records", str(records), *flags],
                          check=True, capture_output=True, text=True).stdout


def cpp_loader_pass(build: str, s3_prefix: str, local: str, records: int, epochs: int) -> Dict[str, float]:
    """One pass of the C++ loader over the dataset written before, from each
    source, ``epochs`` epochs long: records/s as loader_bench times it (a
    pass, like each Python round, opens a new loader and pool, so both
    include the start)."""
    output = loader_bench(build, s3_prefix, local, records, "--existing", "--passes", "1", "--epochs", str(epochs))
    return {name: float(rate)
            for name, rate in re.findall(r"^\s+(local|s3)\s+pass \d+:\s+([0-9.]+) records/s", output, re.M)}


def checkpoint_cases(s3_prefix: str, state_mib: int, rounds: int) -> Dict[str, Dict[str, float]]:
    # A state_dict of float32 tensors of 64 MiB each.
    tensors = max(1, state_mib // 64)
    state = {f"layer{i}.weight": torch.randn(16 << 20) for i in range(tensors)}
    size = sum(t.numel() * 4 for t in state.values())
    url = f"{s3_prefix}/checkpoint/model.pt"

    def with_spool() -> float:
        spool.torch.save(state, url)
        return size

    def local_then_aws() -> float:
        with tempfile.TemporaryDirectory(dir=os.environ.get("SPOOL_BENCH_LOCAL")) as folder:
            path = os.path.join(folder, "model.pt")
            torch.save(state, path)
            subprocess.run(["aws", "s3", "cp", "--only-show-errors", path, url.replace(".pt", "-aws.pt")],
                           check=True)
        return size

    return {"spool.torch.save": measure(with_spool, rounds), "torch.save + aws s3 cp": measure(local_then_aws, rounds)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", required=True)
    parser.add_argument("--s3", required=True, help="s3://bucket/prefix on the bench server")
    parser.add_argument("--local", required=True, help="a local scratch folder")
    parser.add_argument("--records", type=int, default=4096, help="100 KB records in the dataset")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3, help="epochs per round, in C++ and Python alike")
    parser.add_argument("--state-mib", type=int, default=1024)
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--only", metavar="REGEX",
                        help="only the streaming cases whose name matches (e.g. '0 workers, numpy'), beside the "
                             "C++ loader; the boto3 and checkpoint cases are left out")
    args = parser.parse_args()

    manifests = {"local": f"{args.local}/loader-bench.manifest.json", "s3": f"{args.s3}/loader-bench.manifest.json"}
    cases: Dict[str, Tuple[str, SpoolRounds]] = {}
    for source, manifest in manifests.items():
        # bytes: a copy of each record (the default); numpy: uint8 tensors
        # over the loader's buffers, as the C++ loader hands them out.
        for workers, record_type in ((0, "bytes"), (0, "numpy"), (2, "bytes"), (2, "numpy")):
            name = f"{source}: StreamingDataset, {workers} workers, {record_type}"
            if args.only is None or re.search(args.only, name):
                cases[name] = (source, SpoolRounds(manifest, workers, record_type, args.epochs))
    if not cases:
        parser.error(f"no streaming case matches --only {args.only!r}")
    # The dataset, written once (and kept) by the C++ bench's own writer.
    loader_bench(args.build, args.s3, args.local, args.records, "--passes", "1", "--keep")
    cpp_rates: Dict[str, List[float]] = {}
    samples: Dict[str, List[Tuple[float, float, float]]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for source, rate in cpp_loader_pass(args.build, args.s3, args.local, args.records, args.epochs).items():
            cpp_rates.setdefault(source, []).append(rate)
        for name, (_, run) in cases.items():
            samples[name].append(measure_once(run))
            run.release()
    cpp = {source: statistics.median(rates) for source, rates in cpp_rates.items()}
    results: Dict[str, Dict] = {"records": args.records, "epochs": args.epochs, "cpp_loader": cpp,
                                "cpp_loader_passes": cpp_rates, "streaming": {}, "checkpoint": {}}
    for name, (source, _) in cases.items():
        results["streaming"][name] = summarize(samples[name])
        results["streaming"][name]["vs_cpp"] = results["streaming"][name]["median"] / cpp[source]
    if args.only is None:
        bucket, _, prefix = args.s3[len("s3://"):].partition("/")
        boto = measure(lambda: stream_boto3(bucket, f"{prefix}/loader-bench"), args.rounds)
        results["streaming"]["s3: boto3 + Python TFRecord reader"] = boto
        results["checkpoint"] = checkpoint_cases(args.s3, args.state_mib, args.rounds)

    print(f"\nStreaming {args.records} x 100 KB records, {args.epochs} epochs a round (median records/s of "
          f"{args.rounds} rounds, min-max, client CPU s); C++ DataLoader (median of as many passes of "
          f"{args.epochs} epochs, one before each round): local {cpp['local']:.0f}, s3 {cpp['s3']:.0f} records/s\n")
    print("| case | records/s | min-max | vs C++ loader | client CPU s |\n|---|---|---|---|---|")
    for name, r in results["streaming"].items():
        versus = f"{r['vs_cpp']:.2f}x" if "vs_cpp" in r else "-"
        print(f"| {name} | {r['median']:.0f} | {r['min']:.0f}-{r['max']:.0f} | {versus} | {r['cpu_seconds']:.1f} |")
    if args.only is None:
        spool_s3 = max(r["median"] for n, r in results["streaming"].items() if n.startswith("s3: Streaming"))
        print(f"\nspool vs boto3 + Python reader on s3: {spool_s3 / boto['median']:.1f}x")
        print(f"\nCheckpoint of a {args.state_mib} MiB state_dict to S3 (median of {args.rounds})\n")
        print("| case | MiB/s | min-max | seconds | client CPU s |\n|---|---|---|---|---|")
        for name, r in results["checkpoint"].items():
            print(f"| {name} | {r['median'] / 2**20:.0f} | {r['min'] / 2**20:.0f}-{r['max'] / 2**20:.0f} | "
                  f"{r['seconds']:.1f} | {r['cpu_seconds']:.1f} |")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(results, out, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
