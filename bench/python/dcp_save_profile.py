"""Profiles one torch.distributed.checkpoint save with spool.torch.dcp.StorageWriter.

Saves a state dict of TENSORS tensors of TENSOR_MIB MiB each (one process) to
`root` (a local folder or an s3:// URL), ROUNDS times, and prints per round
the wall and CPU seconds and MiB/s, then the process's peak RSS (VmHWM) and
the peak of Python allocations (tracemalloc, one extra round). With
--profile, a cProfile of one more round (top functions by cumulative time).

    PYTHONPATH=<build>/python python bench/python/dcp_save_profile.py ROOT [--rounds 3] [--profile]

Not a test: numbers for bench/results and docs/performance.md.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import resource
import statistics
import time
import tracemalloc
import uuid

import torch
import torch.distributed.checkpoint as dcp

import spool.torch.dcp


def vm_hwm_mib() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("root", help="local folder or s3:// URL; each save is a new step below a fresh prefix")
    parser.add_argument("--tensors", type=int, default=16)
    parser.add_argument("--tensor-mib", type=int, default=16)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="cProfile one more round")
    args = parser.parse_args()

    elements = args.tensor_mib * (1 << 20) // 4
    state = {f"layer{i}": torch.rand(elements) for i in range(args.tensors)}
    mib = args.tensors * args.tensor_mib
    root = f"{args.root.rstrip('/')}/dcp-save-{uuid.uuid4().hex[:8]}"
    step = 0

    def save() -> None:
        nonlocal step
        step += 1
        dcp.save(state, storage_writer=spool.torch.dcp.StorageWriter(root, step))

    rss_before = vm_hwm_mib()
    walls, cpus = [], []
    for _ in range(args.rounds):
        wall, cpu = time.perf_counter(), time.process_time()
        save()
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        print(f"save {mib} MiB: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU, {mib / walls[-1]:.0f} MiB/s", flush=True)
    print(f"median: {statistics.median(walls):.2f} s wall, {statistics.median(cpus):.2f} s CPU, "
          f"{mib / statistics.median(walls):.0f} MiB/s")
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS: {vm_hwm_mib():.0f} MiB (VmHWM; {rss_before:.0f} MiB with the state dict, before the saves; "
          f"ru_maxrss {maxrss:.0f} MiB)")
    tracemalloc.start()
    save()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    print(f"tracemalloc peak during one save: {peak / (1 << 20):.0f} MiB ({peak / (mib << 20):.2f}x the state dict)")
    if args.profile:
        profile = cProfile.Profile()
        profile.runcall(save)
        pstats.Stats(profile).sort_stats("cumulative").print_stats(25)


if __name__ == "__main__":
    main()
