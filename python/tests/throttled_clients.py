"""One client process of test_throttling.py: a rank reading a dataset through
torch DataLoader workers, or a rank saving its part of a checkpoint step.
Run as a script (the endpoint comes from the environment the test gives it):

  throttled_clients.py load MANIFEST RANK WORLD WORKERS   prints the labels as JSON
  throttled_clients.py save ROOT RANK WORLD FILES          saves step 1

With SPOOL_THROTTLE_BARRIER=FOLDER:COUNT, each waits after its imports
until COUNT clients have said so in FOLDER, then starts.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import spool


def wait_for_the_others() -> None:
    """Starts every client together, as the ranks of a job reach a step
    (or an epoch) together after a collective. Without it, the seconds over
    which 16-32 processes finish importing torch on a busy machine would
    stagger their ends, and that spread would be measured as the limiter's
    tail."""
    barrier = os.environ.get("SPOOL_THROTTLE_BARRIER")
    if not barrier:
        return
    folder, count = barrier.rsplit(":", 1)
    Path(folder, f"ready-{os.getpid()}").touch()
    deadline = time.monotonic() + 300
    while (ready := len(os.listdir(folder))) < int(count):
        if time.monotonic() > deadline:
            sys.exit(f"only {ready} of {count} clients started within 300 s")
        time.sleep(0.01)


def load(manifest: str, rank: int, world: int, workers: int) -> None:
    import spool.torch  # only here: saving ranks need no torch, so 64 of them fit in memory

    wait_for_the_others()
    dataset = spool.torch.StreamingDataset(manifest, features={"label": "int64"}, batch_size=16, seed=3,
                                           rank=rank, world_size=world)
    loader = spool.torch.DataLoader(dataset, num_workers=workers)
    labels = [int(label) for batch in loader for label in batch["label"]]
    print(json.dumps(labels))


def save(root: str, rank: int, world: int, files: int) -> None:
    payload = {f"shard-{i}.bin": _file_bytes(rank, i) for i in range(files)}
    wait_for_the_others()
    with spool.CheckpointManager(root, rank=rank, world_size=world, part_timeout_seconds=300) as manager:
        manager.save(1, payload, {"rank": str(rank)})


def _file_bytes(rank: int, i: int) -> bytes:
    return bytes([rank, i]) * (16 * 1024)


if __name__ == "__main__":
    command, target, rank, world, count = sys.argv[1:6]
    (load if command == "load" else save)(target, int(rank), int(world), int(count))
