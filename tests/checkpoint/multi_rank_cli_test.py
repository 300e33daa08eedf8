#!/usr/bin/env python3
"""A checkpoint saved by 4 processes, one per rank, through
`spool ckpt save --rank R --world-size 4`, on local files or on the Ceph RGW
of the ceph_rgw fixture.

1. Steps 10, 20, 30: the 4 ranks save each step at the same time (started in
   a different order each step). Every rank exits 0; `ckpt list --json`
   shows each step with world_size 4; `ckpt verify` checks every rank;
   `ckpt restore --rank R` gives rank R's folder byte for byte, and a plain
   `ckpt restore` every rank's under rank-0000R/. Steps 30 and 40 are saved
   with --rank-prefix-fanout 2: their ranks' files are under 2 folders, and
   list, verify, restore and gc work on them without the option.
2. Step 40: rank 2 is SIGKILLed while it uploads a large file. Rank 0 gives
   up after --part-timeout naming rank 2, step 40 is not listed, 30 stays
   latest, and `ckpt gc --older-than 0s` removes what the others uploaded.

  multi_rank_cli_test.py --spool PATH --store local|s3

Standard library only; scratch files under /tmp; on s3 everything goes
under s3://$SPOOL_S3_TEST_BUCKET/multi-rank-cli-test/<random>/ and is
deleted at the end.
"""

import argparse
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid

WORLD = 4
FANOUT = 2  # --rank-prefix-fanout of steps 30 and 40
FANNED_OUT = re.compile(r"^([0-9a-f]{2,})/rank-\d{5}/")  # a rank's file under a fan-out label, in a step folder


class Failure(Exception):
    pass


def check(condition, message):
    if not condition:
        raise Failure(message)


def rank_files(step, rank):
    """What rank `rank` saves at `step`: deterministic bytes, one empty file."""
    seed = f"{step}-{rank}".encode()
    block = (seed * (4096 // len(seed) + 1))[:4096]
    return {
        "model.bin": block * (16 + rank) + seed,
        f"optimizer/rank-{rank}.bin": block[: 100 + step + rank],
        "empty": b"",
    }


def write_folder(folder, files):
    shutil.rmtree(folder, ignore_errors=True)
    for path, data in files.items():
        full = os.path.join(folder, path)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(data)


def read_folder(folder):
    """Every file below `folder` but the marker a restore leaves at its top."""
    tree = {}
    for base, _, names in os.walk(folder):
        for name in names:
            if base == folder and name == ".spool-restore":
                continue
            full = os.path.join(base, name)
            with open(full, "rb") as f:
                tree[os.path.relpath(full, folder)] = f.read()
    return tree


class Runner:
    def __init__(self, spool, root, scratch):
        self.spool, self.root, self.scratch = spool, root, scratch

    def run(self, *args, ok=True):
        done = subprocess.run([self.spool, *args], capture_output=True, text=True, timeout=600)
        if ok:
            check(done.returncode == 0,
                  f"spool {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done

    def save_command(self, step, rank, folder, timeout=120):
        fanout = ["--rank-prefix-fanout", str(FANOUT)] if step >= 30 else []
        return [self.spool, "ckpt", "save", self.root, "--step", str(step), "--rank", str(rank),
                "--world-size", str(WORLD), "--attempt", "run-1", "--part-timeout", str(timeout), *fanout, folder]

    def listed(self):
        out = self.run("ckpt", "list", "--json", self.root).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    def keys(self):
        return self.run("ls", "-r", self.root + "/").stdout.split()


def save_steps(runner):
    for step in (10, 20, 30):
        order = list(range(WORLD)) if step != 20 else list(reversed(range(WORLD)))
        processes = {}
        for rank in order:
            folder = os.path.join(runner.scratch, f"rank-{rank}")
            write_folder(folder, rank_files(step, rank))
            processes[rank] = subprocess.Popen(runner.save_command(step, rank, folder), stdout=subprocess.PIPE,
                                               stderr=subprocess.STDOUT, text=True)
        for rank, process in processes.items():
            output, _ = process.communicate(timeout=300)
            check(process.returncode == 0, f"step {step} rank {rank} failed ({process.returncode}):\n{output}")
        print(f"step {step}: 4 processes saved their parts (started in order {order}); rank 0 committed")

    # Steps 10 and 20 keep every rank's files directly in the step folder;
    # step 30's ranks are spread over FANOUT folders above their rank folders.
    for step, folders in ((20, 0), (30, FANOUT)):
        step_folder = f"step-{step:012d}/"
        below = [key.split(step_folder, 1)[1] for key in runner.keys() if step_folder in key]
        labels = {m.group(1) for m in map(FANNED_OUT.match, below) if m}
        check(len(labels) == folders, f"step {step}'s files lie under {sorted(labels)}: {below}")
        check(sum(bool(FANNED_OUT.match(name)) for name in below) == (3 * WORLD if folders else 0),
              f"step {step}'s files: {below}")
    listed = runner.listed()
    check([m["step"] for m in listed] == [10, 20, 30], f"ckpt list shows {listed}")
    check(all(m["world_size"] == WORLD and m["files"] == 3 * WORLD for m in listed), f"ckpt list shows {listed}")
    verified = runner.run("ckpt", "verify", runner.root).stdout
    check(verified.count("ok step") == 3, f"ckpt verify said:\n{verified}")

    for step in (10, 20, 30):
        for rank in range(WORLD):
            target = os.path.join(runner.scratch, "restored", f"{step}-{rank}")
            runner.run("ckpt", "restore", runner.root, target, "--step", str(step), "--rank", str(rank))
            check(read_folder(target) == rank_files(step, rank), f"step {step} rank {rank} restored other bytes")
    target = os.path.join(runner.scratch, "restored", "all")
    runner.run("ckpt", "restore", runner.root, target)
    expected = {f"rank-{rank:05d}/{path}": data for rank in range(WORLD) for path, data in rank_files(30, rank).items()}
    check(read_folder(target) == expected, "ckpt restore (every rank) restored other files")
    print("steps 10, 20, 30: listed with world size 4, verified, every rank restored byte for byte")


def killed_rank(runner):
    step = 40
    processes = {}
    for rank in range(WORLD):
        folder = os.path.join(runner.scratch, f"rank-{rank}")
        files = rank_files(step, rank)
        if rank == 2:
            files["big.bin"] = os.urandom(128 << 20)
        write_folder(folder, files)
    for rank in range(WORLD):
        folder = os.path.join(runner.scratch, f"rank-{rank}")
        processes[rank] = subprocess.Popen(runner.save_command(step, rank, folder, timeout=5),
                                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(0.3)
    processes[2].send_signal(signal.SIGKILL)
    outputs = {}
    for rank, process in processes.items():
        outputs[rank], _ = process.communicate(timeout=300)
    part = f"step-{step:012d}/parts/rank-00002.json"
    if any(key.endswith(part) for key in runner.keys()):
        print("rank 2 wrote its part before SIGKILL; nothing to check (run again on a slower machine)")
        return
    check(processes[2].returncode == -signal.SIGKILL, f"rank 2 exited with {processes[2].returncode}")
    check(processes[0].returncode != 0, f"rank 0 committed step {step} without rank 2:\n{outputs[0]}")
    check("rank 2 of 4 did not finish their part within 5 s" in outputs[0],
          f"rank 0 does not name the missing rank:\n{outputs[0]}")
    listed = runner.listed()
    check([m["step"] for m in listed] == [10, 20, 30], f"after the kill, ckpt list shows {listed}")
    left = [key for key in runner.keys() if f"step-{step:012d}/" in key]
    check(left, "the other ranks' parts of step 40 are gone before gc")
    gc = runner.run("ckpt", "gc", runner.root, "--older-than", "0s").stdout
    left = [key for key in runner.keys() if f"step-{step:012d}/" in key]
    check(not left, f"ckpt gc left {left}:\n{gc}")
    check([m["step"] for m in runner.listed()] == [10, 20, 30], "ckpt gc touched a committed step")
    # Rank 2 died inside its 128 MiB upload: the multipart upload (S3) or the
    # temporary file (local) it left is not an object, but gc aborts it too.
    pending = runner.run("gc-uploads", runner.root + "/", "--older-than", "0s", "--dry-run").stdout
    check("would abort 0 incomplete uploads" in pending, f"ckpt gc left incomplete uploads:\n{pending}\n{gc}")
    print(f"step 40: rank 2 SIGKILLed mid-upload; rank 0 gave up naming it, step 30 stays latest, "
          f"gc removed the leftovers ({gc.strip().splitlines()[-1]})")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spool", required=True)
    parser.add_argument("--store", choices=("local", "s3"), default="local")
    options = parser.parse_args()
    scratch = tempfile.mkdtemp(prefix="spool-multi-rank-cli-test-")
    if options.store == "s3":
        bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
        root = f"s3://{bucket}/multi-rank-cli-test/{uuid.uuid4().hex[:12]}"
    else:
        root = os.path.join(scratch, "store", "ckpt")
        os.makedirs(root)
    runner = Runner(options.spool, root, scratch)
    try:
        save_steps(runner)
        killed_rank(runner)
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAILED ({options.store}): {e}")
        return 1
    finally:
        if options.store == "s3":
            subprocess.run([options.spool, "rm", "-r", root + "/"], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"PASSED ({options.store})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
