#!/usr/bin/env python3
"""Trains a small PyTorch classifier on the handwritten-digits shards,
streamed from S3, GCS or local files by spool.torch, with a checkpoint every
--save-every steps through spool.CheckpointManager. Killed at any moment and
started again with the same arguments, it restores the latest complete
checkpoint (model, optimizer, where the data stream was) and continues as if
never interrupted: --summary writes a digest of every example it trained on,
in order, so two runs can be compared.

    python samples/python/train_digits.py \\
        --data s3://bucket/digits/train.manifest.json \\
        --eval s3://bucket/digits/test.manifest.json \\
        --checkpoints s3://bucket/runs/digits-7 --steps 600 --save-every 50

The shards are what `spool convert` makes of the digits table (64 integer
features p0..p63, 0-16 each, and a label); scripts/demo --python runs it.
Every rank of a distributed job (RANK/WORLD_SIZE, or torch.distributed)
reads its own part of each epoch and saves its own part of each checkpoint.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import sys
import time
from typing import Dict, Optional

import torch

import spool
import spool.torch

# `spool convert` stores the table's integers as int64 features.
FEATURES = {**{f"p{i}": "int64" for i in range(64)}, "label": "int64"}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="training shards: a manifest, shard URLs or a glob")
    parser.add_argument("--eval", help="test shards, for the accuracy at the end")
    parser.add_argument("--checkpoints", required=True, help="checkpoint root (any URL)")
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--save-every", type=int, default=50)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--num-workers", type=int, default=2, help="torch DataLoader worker processes")
    parser.add_argument("--workdir", default="/tmp/train-digits", help="local folder for restored checkpoints")
    parser.add_argument("--step-delay-ms", type=int, default=0, help="slow each step down (for demos)")
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--summary", help="write steps, records, digest and accuracy here at the end")
    return parser.parse_args()


def pixels_of(batch: Dict[str, torch.Tensor]) -> torch.Tensor:
    """(batch, 64) floats in [0, 1] from the 64 pixel features."""
    return torch.stack([batch[f"p{i}"] for i in range(64)], dim=1).float() / 16.0


class Progress:
    """Steps and records trained on, and a digest of the examples in order
    (each step's digest hashes the previous one with the step's batch)."""

    def __init__(self) -> None:
        self.step = 0
        self.records = 0
        self.digest = b""

    def add(self, pixels: torch.Tensor, labels: torch.Tensor) -> None:
        self.step += 1
        self.records += len(labels)
        self.digest = hashlib.sha256(self.digest + pixels.numpy().tobytes() + labels.numpy().tobytes()).digest()


def save_checkpoint(manager: spool.CheckpointManager, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                    loader: spool.torch.DataLoader, progress: Progress) -> None:
    state = io.BytesIO()
    torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                "digest": progress.digest}, state)
    # Captured now (bytes are copied), uploaded in the background: the loop
    # goes on while the checkpoint travels.
    manager.save_async(progress.step, {"state.pt": state.getvalue()},
                       metadata={"data": json.dumps(loader.state_dict()), "records": str(progress.records)})


def restore_checkpoint(manager: spool.CheckpointManager, workdir: str, model: torch.nn.Module,
                       optimizer: torch.optim.Optimizer, loader: spool.torch.DataLoader,
                       progress: Progress) -> Optional[int]:
    if manager.latest() is None:
        return None
    manifest = manager.restore(workdir)
    state = torch.load(os.path.join(workdir, "state.pt"), map_location="cpu")
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    progress.step = manifest.step
    progress.records = int(manifest.metadata["records"])
    progress.digest = state["digest"]
    loader.load_state_dict(json.loads(manifest.metadata["data"]))
    return manifest.step


def accuracy(model: torch.nn.Module, url: str) -> float:
    correct = total = 0
    with torch.no_grad(), spool.DataLoader(url, batch_size=256, shuffle=False, features=FEATURES) as test:
        for batch in test:
            tensors = {name: torch.from_numpy(value) for name, value in batch.items()}
            predicted = model(pixels_of(tensors)).argmax(dim=1)
            correct += int((predicted == tensors["label"]).sum())
            total += len(predicted)
    return correct / max(total, 1)


def main() -> int:
    args = arguments()
    torch.manual_seed(args.seed)
    model = torch.nn.Linear(64, 10)
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate)
    dataset = spool.torch.StreamingDataset(args.data, batch_size=args.batch_size, seed=args.seed,
                                           features=FEATURES, drop_remainder=True)
    loader = spool.torch.DataLoader(dataset, num_workers=args.num_workers)
    progress = Progress()
    rank = dataset.rank if dataset.rank is not None else int(os.environ.get("RANK", 0))
    world_size = dataset.world_size if dataset.world_size is not None else int(os.environ.get("WORLD_SIZE", 1))

    with spool.CheckpointManager(args.checkpoints, keep_last=3, rank=rank, world_size=world_size) as manager:
        resumed = restore_checkpoint(manager, args.workdir, model, optimizer, loader, progress)
        if resumed is not None:
            print(f"resumed from step {resumed} (epoch {dataset.epoch}, {progress.records} records so far)",
                  flush=True)
        started = time.monotonic()
        while progress.step < args.steps:
            for batch in loader:
                pixels, labels = pixels_of(batch), batch["label"]
                optimizer.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(pixels), labels)
                loss.backward()
                optimizer.step()
                progress.add(pixels, labels)
                if args.step_delay_ms:
                    time.sleep(args.step_delay_ms / 1000)
                if progress.step % args.log_every == 0:
                    print(f"step {progress.step:5d}/{args.steps}  loss {loss.item():.4f}  epoch {dataset.epoch}",
                          flush=True)
                if progress.step % args.save_every == 0:
                    save_checkpoint(manager, model, optimizer, loader, progress)
                if progress.step >= args.steps:
                    break
        manager.wait()
        seconds = time.monotonic() - started

    result = accuracy(model, args.eval) if args.eval else float("nan")
    digest = progress.digest.hex()[:16]
    print(f"done: {progress.step} steps, {progress.records} records trained on, record digest {digest}, "
          f"test accuracy {result:.4f} ({seconds:.1f} s)", flush=True)
    if args.summary:
        with open(args.summary, "w") as out:
            out.write(f"steps={progress.step}\nrecords={progress.records}\ndigest={digest}\naccuracy={result:.4f}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
