#!/usr/bin/env python3
"""spool.torch.load (the object fetched whole in parallel ranged reads, then
parsed from memory) against torch.load over spool.open's stream (each tensor
read with a request of its own as the unpickler reaches it), alternating, on
one state dict saved with spool.torch.save. Prints wall and CPU seconds
(this process, spool's threads included) per round and the medians.

    torch_load_ab.py s3://bucket/prefix [--state-mib 256] [--rounds 6]
Needs the spool package on PYTHONPATH and the store's settings (AWS_*).
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time

import torch

import spool
import spool.torch


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--state-mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    url = args.prefix.rstrip("/") + "/torch-load-ab.pt"
    state = {f"w{i}": torch.randn(1024, 256) for i in range(args.state_mib)}  # 1 MiB each
    spool.torch.save(state, url)

    def streamed() -> object:
        with spool.open(url, "rb") as f:
            return torch.load(f)

    ways = {"spool.torch.load (whole, then parse)": lambda: spool.torch.load(url),
            "torch.load(spool.open(url)) (streamed)": streamed}
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in ways}
    for r in range(args.rounds):
        order = list(ways) if r % 2 == 0 else list(reversed(ways))
        for name in order:
            cpu, start = _cpu(), time.monotonic()
            loaded = ways[name]()
            times[name].append((time.monotonic() - start, _cpu() - cpu))
            assert all(torch.equal(loaded[k], state[k]) for k in state), f"{name} loaded something else"
            del loaded
            print(f"round {r + 1} {name}: {times[name][-1][0]:.2f} s, CPU {times[name][-1][1]:.2f} s", flush=True)
    spool.rm(url)
    for name, rows in times.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(f"{name}: {statistics.median(walls):.2f} s median ({min(walls):.2f}-{max(walls):.2f}), "
              f"{args.state_mib / statistics.median(walls):.0f} MiB/s, CPU {statistics.median(cpus):.2f} s")


if __name__ == "__main__":
    main()
