#!/usr/bin/env python3
"""Trains a small MLP on the handwritten-digits shards with
DistributedDataParallel (gloo, CPU), streaming them with spool.torch's
elastic StreamingDataset and saving a torch.distributed.checkpoint through
spool every --save-every steps. Killed at any moment and started again, on
the same number of ranks or another that divides --partitions, it loads the
latest committed checkpoint (model, optimizer, where the data stream was)
and trains on the rest of the epoch, each record once.

    torchrun --standalone --nproc-per-node 2 samples/python/train_digits_ddp.py \\
        --data s3://bucket/digits/train.manifest.json \\
        --checkpoints s3://bucket/runs/digits-ddp --epochs 1 --save-every 10 \\
        --trace /tmp/digits-trace

The shards are what `spool convert` makes of the digits table with an `id`
column (64 integer features p0..p63, 0-16 each, a label and the row's id);
scripts/demo --python --ranks 2 runs it. --trace DIR makes each rank write
DIR/rank-<r>.txt, one line per step: the step and the ids of the records
this rank trained on. Rank 0 prints the model's SHA-256 before each save
("saving step S model H") and after a restore ("restored step S model H"),
so that a run can be checked against the one it resumed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import time
from typing import Dict, Optional, TextIO

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.nn.parallel import DistributedDataParallel

import spool
import spool.torch
from spool.torch.dcp import StorageReader, StorageWriter

# `spool convert` stores the table's integers as int64 features.
FEATURES = {**{f"p{i}": "int64" for i in range(64)}, "label": "int64", "id": "int64"}


def arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="training shards (with an id feature): a manifest, URLs or a glob")
    parser.add_argument("--checkpoints", required=True, help="DCP checkpoint root (any URL)")
    parser.add_argument("--epochs", type=int, default=1)
    parser.add_argument("--partitions", type=int, default=12,
                        help="elastic partitions: every world size x num_workers the job runs on must divide it")
    parser.add_argument("--global-batch-size", type=int, default=24, help="records per step over all ranks")
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--keep-last", type=int, default=3)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--learning-rate", type=float, default=0.1)
    parser.add_argument("--num-workers", type=int, default=0, help="torch DataLoader worker processes per rank")
    parser.add_argument("--step-delay-ms", type=int, default=0, help="slow each step down (for demos)")
    parser.add_argument("--trace", help="folder for each rank's record ids, one line per step")
    return parser.parse_args()


def pixels_of(batch: Dict[str, torch.Tensor]) -> torch.Tensor:
    """(batch, 64) floats in [0, 1] from the 64 pixel features."""
    return torch.stack([batch[f"p{i}"] for i in range(64)], dim=1).float() / 16.0


def model_digest(model: torch.nn.Module) -> str:
    """SHA-256 of the parameters and buffers, by name: equal on two runs
    exactly when their models are."""
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def checkpoint_state(model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                     loader: spool.torch.DataLoader, step: int) -> Dict[str, object]:
    """What a checkpoint holds: DCP's model and optimizer state dicts, the
    step, and the data stream's place (a JSON string, the same on every rank,
    which DCP stores once)."""
    model_state, optimizer_state = get_state_dict(model, optimizer)
    return {"model": model_state, "optim": optimizer_state, "step": step,
            "data": json.dumps(loader.state_dict())}


def latest_step(root: str) -> Optional[int]:
    """The latest committed step, as rank 0 sees it, on every rank (so that
    all ranks load the same one even if a save commits meanwhile)."""
    found = [None]
    if dist.get_rank() == 0:
        with spool.CheckpointManager(root) as manager:
            found[0] = manager.latest()
    dist.broadcast_object_list(found, src=0)
    return found[0]


def restore(root: str, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
            loader: spool.torch.DataLoader) -> int:
    """Loads the latest committed checkpoint, if any; returns its step (0 when none)."""
    step = latest_step(root)
    if step is None:
        return 0
    state = checkpoint_state(model, optimizer, loader, 0)  # the shapes DCP loads into
    dcp.load(state, storage_reader=StorageReader(root, step=step))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    loader.load_state_dict(json.loads(state["data"]))
    return int(state["step"])


def main() -> int:
    args = arguments()
    dist.init_process_group("gloo")
    rank, world_size = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(args.seed)  # the same initial model on every rank
    model = DistributedDataParallel(torch.nn.Sequential(
        torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10)))
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate, momentum=0.9)
    # Rank and world size come from torch.distributed; each rank's batch is
    # global_batch_size / world_size records of the job's global batch.
    dataset = spool.torch.StreamingDataset(args.data, features=FEATURES, seed=args.seed,
                                           partitions=args.partitions, global_batch_size=args.global_batch_size)
    loader = spool.torch.DataLoader(dataset, num_workers=args.num_workers)

    step = restore(args.checkpoints, model, optimizer, loader)
    if step and rank == 0:
        print(f"restored step {step} model {model_digest(model)} (epoch {dataset.epoch}, on {world_size} ranks)",
              flush=True)
    trace: Optional[TextIO] = None
    if args.trace:
        os.makedirs(args.trace, exist_ok=True)
        trace = open(os.path.join(args.trace, f"rank-{rank}.txt"), "a", buffering=1)  # a line per step

    started = time.monotonic()
    for epoch in range(dataset.epoch, args.epochs):
        dataset.set_epoch(epoch)  # keeps a restored place in this epoch
        for batch in loader:
            labels = batch["label"]
            optimizer.zero_grad()
            # Summed over the rank's records, divided by the global batch:
            # a rank whose partitions ran out (an empty batch at the end of
            # the epoch) still takes the step, as DDP needs every rank to.
            loss = torch.nn.functional.cross_entropy(model(pixels_of(batch)), labels, reduction="sum")
            (loss * world_size / args.global_batch_size).backward()  # DDP averages over ranks
            optimizer.step()
            step += 1
            if trace is not None:
                trace.write(" ".join([str(step)] + [str(int(i)) for i in batch["id"]]) + "\n")
            if args.step_delay_ms:
                time.sleep(args.step_delay_ms / 1000)
            if step % args.save_every == 0:
                if rank == 0:
                    # Printed before the save: a run killed right after the
                    # commit has still told which model that step holds.
                    print(f"saving step {step} model {model_digest(model)} (epoch {epoch})", flush=True)
                # Every rank, the same step: committed once all ranks' files are stored.
                dcp.save(checkpoint_state(model, optimizer, loader, step),
                         storage_writer=StorageWriter(args.checkpoints, step=step, keep_last=args.keep_last))
                if rank == 0:
                    print(f"committed step {step}", flush=True)
    if trace is not None:
        trace.close()
    if rank == 0:
        print(f"done: step {step}, epoch {args.epochs} of {args.epochs} on {world_size} ranks, "
              f"model {model_digest(model)} ({time.monotonic() - started:.1f} s)", flush=True)
    # Tear down in order while the interpreter is whole: every rank done, the
    # DDP wrapper (its reducer holds the process group) gone, then the group.
    dist.barrier()
    del model, optimizer, loader
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    code = main()
    # Everything this job writes is stored by now (checkpoints committed,
    # traces closed). Leave without the interpreter's finalization: gloo's
    # worker threads can still be joinable when torch's objects are destroyed
    # there, which aborts the process ("terminate called without an active
    # exception") after a successful run and fails the job under torchrun.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
