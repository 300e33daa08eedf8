"""A job's many processes behind a throttling server (issue #36: throttling at
scale): DataLoader workers of several ranks reading one dataset, and the
ranks of a job saving one checkpoint step, through the fault proxy's
throttle rule (tests/faults/fault_proxy.py: a token bucket on the dataset's
prefix, one for all of the checkpoint step's PUTs; the rest answered with
S3's 503 SlowDown) in front of Ceph RGW.

Printed (tests/faults/throttle_figures.py, the CLI throttling test's format):
clients failed, goodput (the server's admitted rate / R, whole run and
steady state), requests sent / needed, Jain's index over the clients'
completion times. Asserted: every process succeeds, every record is
delivered exactly once, the checkpoint commits and restores byte for byte,
the server did throttle (else the test proved nothing), and the requests
sent stay within a loose bound of those needed (retries bounded by the retry
quota and the adaptive concurrency limit of core/throttle.h). Not asserted:
time, goodput and fairness (bench/throttling_loader_ranks.sh collects them).

Sizes come from the environment so that the bench can run 16 to 64
processes: SPOOL_THROTTLE_LOADER_RANKS x SPOOL_THROTTLE_LOADER_WORKERS
(8 x 2), SPOOL_THROTTLE_CKPT_RANKS (16); SPOOL_THROTTLE_REPORT appends
each run's figures as a JSON line.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

import pytest

import spool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "faults"))
import throttle_figures  # noqa: E402
from fault_proxy_client import FaultProxyProcess  # noqa: E402

PROXY = Path(__file__).resolve().parents[2] / "tests" / "faults" / "fault_proxy.py"
CLIENT = Path(__file__).resolve().parent / "throttled_clients.py"
pytestmark = [pytest.mark.s3, pytest.mark.throttling]

RANKS = int(os.environ.get("SPOOL_THROTTLE_LOADER_RANKS", "8"))
WORKERS = int(os.environ.get("SPOOL_THROTTLE_LOADER_WORKERS", "2"))
CKPT_RANKS = int(os.environ.get("SPOOL_THROTTLE_CKPT_RANKS", "16"))
REPORT = os.environ.get("SPOOL_THROTTLE_REPORT", "")
# Each worker process reads 48 small shards and each rank saves 64 files: enough
# requests per process for its limiter to find its share of R (a client with 4
# requests in all only ever sends its first burst). Records are small: the
# limit is on requests. R is 60 requests/s, as in the CLI test: the proxy's
# bucket holds R/10 tokens, and at R = 16 its 1.6 tokens refuse about a third
# of the requests of independent clients sending R in all, whatever each does.
SHARDS = 48 * RANKS * WORKERS
RECORDS = 4 * SHARDS
LOADER_RATE, CKPT_RATE, CKPT_FILES = 60.0, 60.0, 64


@pytest.fixture
def proxy(tmp_path: Path):
    upstream = os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1]
    process = FaultProxyProcess(str(PROXY), upstream, str(tmp_path))
    try:
        yield process
    finally:
        process.close()


def _run_all(commands: list[list[str]], env: dict[str, str]) -> tuple[list[str], list[float], float]:
    """Starts every client at once; returns their outputs, each one's completion
    time since the start, and the start (time.monotonic()). Each must exit 0."""
    # The clients start together once all have imported (throttled_clients.wait_for_the_others).
    with tempfile.TemporaryDirectory(prefix="spool-throttle-start-") as barrier:
        env = {**env, "SPOOL_THROTTLE_BARRIER": f"{barrier}:{len(commands)}"}
        start = time.monotonic()
        processes = [subprocess.Popen([sys.executable, str(CLIENT), *command], env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, text=True) for command in commands]
        results: list[tuple[str, str]] = [("", "")] * len(processes)
        finished = [0.0] * len(processes)

        def wait(i: int) -> None:
            results[i] = processes[i].communicate(timeout=600)
            finished[i] = time.monotonic() - start

        waiters = [threading.Thread(target=wait, args=(i,)) for i in range(len(processes))]
        for waiter in waiters:
            waiter.start()
        for waiter in waiters:
            waiter.join()
    failures = [f"{' '.join(command)}: {err}" for command, process, (_, err) in zip(commands, processes, results)
                if process.returncode != 0]
    assert not failures, f"{len(failures)} of {len(commands)} clients failed:\n" + "\n".join(failures)
    return [out for out, _ in results], finished, start


def _report(title: str, figures: dict) -> None:
    print(f"\nthrottling ({title}")
    throttle_figures.print_figures(figures)
    throttle_figures.append_report(REPORT, figures)


def test_loader_workers_of_several_ranks_read_every_record_once(s3_prefix: str, proxy: FaultProxyProcess) -> None:
    with spool.ShardedWriter(f"{s3_prefix}/train", shards=SHARDS) as writer:
        for i in range(RECORDS):
            writer.write(spool.encode_example({"label": i, "pad": b"x" * 2000}))
    manifest = writer.manifest.url
    env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url}
    commands = [["load", manifest, str(rank), str(RANKS), str(WORKERS)] for rank in range(RANKS)]
    key_prefix = s3_prefix.split("/", 3)[3]

    def counted(entry: dict) -> bool:
        return entry["method"] == "GET" and key_prefix in entry["target"]

    # Unthrottled: the GETs the job needs.
    _run_all(commands, env)
    needed = sum(counted(e) for e in proxy.log())
    proxy.call("DELETE", "/log")

    proxy.call("POST", "/rules", {"kind": "throttle", "rate": LOADER_RATE, "method": "GET", "flavor": "s3"})
    outputs, finished, start = _run_all(commands, env)
    labels = sorted(label for out in outputs for label in json.loads(out))
    assert labels == list(range(RECORDS)), "each record exactly once over the ranks and workers"
    rule = proxy.call("GET", "/rules")[0]
    figures = throttle_figures.figures(label="loader", clients=RANKS * WORKERS, rate=LOADER_RATE, rule=rule,
                                       log=proxy.log(), start=start, finished=finished, failed=0, needed=needed,
                                       counted=counted)
    _report(f"loader): {RANKS} ranks x {WORKERS} DataLoader workers, {SHARDS} shards, "
            f"R = {LOADER_RATE:g} GET/s per prefix; Jain over the {RANKS} ranks", figures)
    assert rule["throttled"] > 0, "the server never throttled: raise the load or lower the rate"
    assert figures["sent"] <= 3 * needed, f"{figures['sent']} GETs sent for {needed} needed: retries were not bounded"


def test_ranks_saving_one_step_commit_under_throttling(s3_prefix: str, proxy: FaultProxyProcess,
                                                       tmp_path: Path) -> None:
    root = f"{s3_prefix}/ckpt"
    # The ranks share an attempt, as under torchrun: without one, rank 0
    # ignores parts older than its start marker (docs/checkpoints.md), and
    # with 32 ranks a rank's whole save can finish while rank 0's marker
    # PUT is still being throttled.
    env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url, "TORCHELASTIC_RUN_ID": uuid.uuid4().hex,
           "TORCHELASTIC_RESTART_COUNT": "0"}
    # One token bucket for every PUT of the step (each rank's files sit in a
    # folder of their own): the prefix a new checkpoint root starts in on S3.
    proxy.call("POST", "/rules", {"kind": "throttle", "rate": CKPT_RATE, "method": "PUT", "flavor": "s3",
                                  "scope": "rule"})
    _, finished, start = _run_all([["save", root, str(rank), str(CKPT_RANKS), str(CKPT_FILES)]
                                   for rank in range(CKPT_RANKS)], env)
    rule = proxy.call("GET", "/rules")[0]
    # Needed: one PUT per object stored (those the server admitted).
    figures = throttle_figures.figures(label="checkpoint", clients=CKPT_RANKS, rate=CKPT_RATE, rule=rule,
                                       log=proxy.log(), start=start, finished=finished, failed=0,
                                       needed=rule["admitted"], counted=lambda e: e["method"] == "PUT",
                                       method="PUT")
    _report(f"checkpoint): {CKPT_RANKS} ranks x {CKPT_FILES} files saving one step, "
            f"R = {CKPT_RATE:g} PUT/s per prefix; needed = PUTs admitted", figures)
    assert rule["throttled"] > 0, "the server never throttled: raise the load or lower the rate"
    assert figures["sent"] <= 3 * rule["admitted"], f"{figures['sent']} PUTs sent for {rule['admitted']} stored"

    sys.path.insert(0, str(CLIENT.parent))
    from throttled_clients import _file_bytes
    with spool.CheckpointManager(root) as manager:  # straight to the server
        assert manager.latest() == 1
        for rank in range(CKPT_RANKS):
            folder = tmp_path / f"rank-{rank}"
            manager.restore(folder, rank=rank)
            for i in range(CKPT_FILES):
                assert (folder / f"shard-{i}.bin").read_bytes() == _file_bytes(rank, i), f"rank {rank} file {i}"
