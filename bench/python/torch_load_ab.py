#!/usr/bin/env python3
"""spool.torch.load (each tensor read straight into torch's memory, small
records from windows fetched ahead) against the object fetched whole into
memory and then parsed (spool.torch.load before 2026-11-27T18Z), alternating,
on one state dict saved with spool.torch.save. Prints wall and CPU seconds
(this process, spool's threads included) per round, and the medians.

    torch_load_ab.py s3://bucket/prefix [--state-mib 256] [--shape large] [--rounds 6]

Shapes: large (32 MiB tensors), small (1 MiB tensors), mixed (per layer a
16 MiB and a 4 MiB matrix and two 4 KiB norms, as a transformer's).
Needs the spool package on PYTHONPATH and the store's settings (AWS_*).
"""

from __future__ import annotations

import argparse
import io
import resource
import statistics
import time
from typing import Callable, Dict, List, Tuple

import torch

import spool
import spool.torch


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _state(mib: int, shape: str) -> Dict[str, torch.Tensor]:
    generator = torch.Generator().manual_seed(1)
    if shape == "large":
        return {f"w{i}": torch.randn(8 << 20, generator=generator) for i in range(max(1, mib // 32))}
    if shape == "small":
        return {f"w{i}": torch.randn(256 << 10, generator=generator) for i in range(mib)}
    state = {}
    for layer in range(max(1, mib // 20)):
        state[f"layer{layer}.attention"] = torch.randn(4 << 20, generator=generator)
        state[f"layer{layer}.norm1"] = torch.randn(1024, generator=generator)
        state[f"layer{layer}.mlp"] = torch.randn(1 << 20, generator=generator)
        state[f"layer{layer}.norm2"] = torch.randn(1024, generator=generator)
    return state


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("prefix")
    parser.add_argument("--state-mib", type=int, default=256)
    parser.add_argument("--shape", choices=("large", "small", "mixed"), default="large")
    parser.add_argument("--rounds", type=int, default=6)
    args = parser.parse_args()
    url = args.prefix.rstrip("/") + f"/torch-load-ab-{args.shape}.pt"
    state = _state(args.state_mib, args.shape)
    mib = sum(t.numel() * t.element_size() for t in state.values()) / (1 << 20)
    spool.torch.save(state, url)

    def whole_then_parse() -> object:
        with spool.open(url, "rb") as f:
            return torch.load(io.BytesIO(f.read()))

    ways: Dict[str, Callable[[], object]] = {"spool.torch.load": lambda: spool.torch.load(url),
                                             "whole, then parsed": whole_then_parse}
    times: Dict[str, List[Tuple[float, float]]] = {name: [] for name in ways}
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
    print(f"{args.shape}: {len(state)} tensors, {mib:.0f} MiB")
    for name, rows in times.items():
        walls, cpus = [w for w, _ in rows], [c for _, c in rows]
        print(f"{name}: {statistics.median(walls):.2f} s median ({min(walls):.2f}-{max(walls):.2f}), "
              f"{mib / statistics.median(walls):.0f} MiB/s, CPU {statistics.median(cpus):.2f} s")


if __name__ == "__main__":
    main()
