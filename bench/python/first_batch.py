"""Time to first batch of spool.torch.StreamingDataset (0 workers, batch 32,
no shuffle) from the S3 server of AWS_ENDPOINT_URL, each measurement in a
fresh process after its imports, over peers_bench's default datasets (2,000 x
100 KB and 50,000 x 1 KB, 8 shards each). Prints medians with min-max.

  first_batch.py --s3 s3://bucket/prefix prepare        writes both datasets
  first_batch.py --s3 s3://bucket/prefix measure [--rounds N]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys

DATASETS = {"100KB": (2_000, 100_000, 8), "1KB": (50_000, 1_000, 8)}  # records, bytes each, shards

# Run in a fresh process: prints the seconds to the first batch and to the end of the pass.
_ONE_PASS = r'''
import sys, time
import torch
import spool.torch
start = time.monotonic()
dataset = spool.torch.StreamingDataset(sys.argv[1], batch_size=32, shuffle=False)
batches = iter(torch.utils.data.DataLoader(dataset, batch_size=None, num_workers=0))
next(batches)
first = time.monotonic() - start
for _ in batches:
    pass
print(first, time.monotonic() - start)
'''


def prepare(prefix: str) -> None:
    import spool
    for name, (records, size, shards) in DATASETS.items():
        with spool.ShardedWriter(f"{prefix}/{name}/data", shards) as writer:
            for _ in range(records):
                writer.write(os.urandom(16) + bytes(size - 16))
    print(f"wrote {', '.join(DATASETS)} under {prefix}")


def one_pass(manifest: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _ONE_PASS, manifest], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def measure(prefix: str, rounds: int) -> None:
    runs: dict[str, list[tuple[float, float]]] = {name: [] for name in DATASETS}
    for _ in range(rounds):
        for name in DATASETS:  # alternating, as peers_bench does
            runs[name].append(one_pass(f"{prefix}/{name}/data.manifest.json"))
    for name, passes in runs.items():
        firsts = [first for first, _ in passes]
        print(f"{name}: first batch median {statistics.median(firsts) * 1000:.0f} ms "
              f"(min {min(firsts) * 1000:.0f}, max {max(firsts) * 1000:.0f}); "
              f"whole pass median {statistics.median(whole for _, whole in passes):.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--s3", required=True, help="s3://bucket/prefix for the datasets")
    parser.add_argument("command", choices=["prepare", "measure"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    prefix = args.s3.rstrip("/")
    prepare(prefix) if args.command == "prepare" else measure(prefix, args.rounds)


if __name__ == "__main__":
    main()
