"""A job's many processes behind a throttling server (issue: retry storms at
scale): DataLoader workers of several ranks reading one dataset, and the
ranks of a job saving one checkpoint step, through the fault proxy's
throttle rule (tests/faults/fault_proxy.py: a token bucket per key prefix,
the rest answered with S3's 503 SlowDown) in front of Ceph RGW.

Asserted: every process succeeds, every record is delivered exactly once,
the checkpoint commits and restores byte for byte, the server did throttle
(else the test proved nothing), and the requests sent stay within 3x those
needed (retries bounded by the retry quota and the adaptive concurrency
limit of core/throttle.h). Not asserted: time (no timing assertions).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import spool

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests" / "faults"))
from fault_proxy_client import FaultProxyProcess  # noqa: E402

PROXY = Path(__file__).resolve().parents[2] / "tests" / "faults" / "fault_proxy.py"
CLIENT = Path(__file__).resolve().parent / "throttled_clients.py"
pytestmark = pytest.mark.s3

RECORDS, SHARDS, RANKS, WORKERS = 960, 48, 4, 2


@pytest.fixture
def proxy(tmp_path: Path):
    upstream = os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1]
    process = FaultProxyProcess(str(PROXY), upstream, str(tmp_path))
    try:
        yield process
    finally:
        process.close()


def _run_all(commands: list[list[str]], env: dict[str, str]) -> list[str]:
    """Starts every client at once and returns their outputs (each must exit 0)."""
    processes = [subprocess.Popen([sys.executable, str(CLIENT), *command], env=env, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for command in commands]
    outputs = []
    for command, process in zip(commands, processes):
        out, err = process.communicate(timeout=600)
        assert process.returncode == 0, f"{' '.join(command)}: {err}"
        outputs.append(out)
    return outputs


def _gets(proxy: FaultProxyProcess, prefix: str) -> int:
    return sum(e["method"] == "GET" and prefix in e["target"] for e in proxy.log())


def test_loader_workers_of_several_ranks_read_every_record_once(s3_prefix: str, proxy: FaultProxyProcess) -> None:
    with spool.ShardedWriter(f"{s3_prefix}/train", shards=SHARDS) as writer:
        for i in range(RECORDS):
            writer.write(spool.encode_example({"label": i, "pad": b"x" * 2000}))
    manifest = writer.manifest.url
    env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url}
    commands = [["load", manifest, str(rank), str(RANKS), str(WORKERS)] for rank in range(RANKS)]
    key_prefix = s3_prefix.split("/", 3)[3]

    # Unthrottled: the GETs the job needs.
    _run_all(commands, env)
    needed = _gets(proxy, key_prefix)
    proxy.call("DELETE", "/log")

    proxy.call("POST", "/rules", {"kind": "throttle", "rate": 20, "method": "GET", "flavor": "s3"})
    outputs = _run_all(commands, env)
    labels = sorted(label for out in outputs for label in json.loads(out))
    assert labels == list(range(RECORDS)), "each record exactly once over the ranks and workers"
    rule = proxy.call("GET", "/rules")[0]
    assert rule["throttled"] > 0, "the server never throttled: raise the load or lower the rate"
    sent = _gets(proxy, key_prefix)
    print(f"loader: {sent} GETs sent for {needed} needed, {rule['throttled']} throttled")
    assert sent <= 3 * needed, f"{sent} GETs sent for {needed} needed: retries were not bounded"


def test_ranks_saving_one_step_commit_under_throttling(s3_prefix: str, proxy: FaultProxyProcess,
                                                       tmp_path: Path) -> None:
    ranks, files = 6, 8
    root = f"{s3_prefix}/ckpt"
    env = {**os.environ, "AWS_ENDPOINT_URL": proxy.url}
    proxy.call("POST", "/rules", {"kind": "throttle", "rate": 8, "method": "PUT", "flavor": "s3"})
    _run_all([["save", root, str(rank), str(ranks), str(files)] for rank in range(ranks)], env)
    rule = proxy.call("GET", "/rules")[0]
    assert rule["throttled"] > 0, "the server never throttled: raise the load or lower the rate"
    puts = sum(e["method"] == "PUT" for e in proxy.log())
    print(f"checkpoint: {puts} PUTs sent, {rule['admitted']} admitted, {rule['throttled']} throttled")
    assert puts <= 3 * (rule["admitted"]), f"{puts} PUTs sent for {rule['admitted']} stored"

    sys.path.insert(0, str(CLIENT.parent))
    from throttled_clients import _file_bytes
    with spool.CheckpointManager(root) as manager:  # straight to the server
        assert manager.latest() == 1
        for rank in range(ranks):
            folder = tmp_path / f"rank-{rank}"
            manager.restore(folder, rank=rank)
            for i in range(files):
                assert (folder / f"shard-{i}.bin").read_bytes() == _file_bytes(rank, i), f"rank {rank} file {i}"
