#!/usr/bin/env python3
"""spool's metrics as users meet them, against the Ceph RGW of the ceph_rgw
fixture: `spool cp --stats [--json]`, the SPOOL_METRICS_FILE textfile, and the
SPOOL_METRICS_PORT endpoint of a training job (samples/train_loop), each read
with the Prometheus project's parser (prometheus-client, in .venv/).

  cli_metrics_test.py --spool PATH --train-loop PATH
"""
import argparse
import json
import os
import random
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
import uuid

from prometheus_client.parser import text_string_to_metric_families

SPOOL = TRAIN_LOOP = ""
BUCKET = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
MIB = 1 << 20


def families(text):
    """{family name: family} of a Prometheus text exposition (raises if it does not parse)."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample(parsed, family, name, **labels):
    for s in parsed[family].samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample {name}{labels} in {family}")


def stats_json(stderr):
    lines = [line for line in stderr.splitlines() if line.startswith('{"stats":')]
    assert len(lines) == 1, f"expected one stats line on stderr, got: {stderr!r}"
    return json.loads(lines[0])["stats"]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class CliStats(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-metrics-")
        self.prefix = f"s3://{BUCKET}/metrics-{uuid.uuid4().hex[:12]}"
        self.source = os.path.join(self.dir, "forty")
        with open(self.source, "wb") as f:
            f.write(random.Random(7).randbytes(40 * MIB))

    def tearDown(self):
        subprocess.run([SPOOL, "rm", "-r", self.prefix + "/"], capture_output=True)
        shutil.rmtree(self.dir, ignore_errors=True)

    def spool(self, *args, **env):
        result = subprocess.run([SPOOL, *args], capture_output=True, text=True, env={**os.environ, **env},
                                timeout=300)
        self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def test_a_copy_counts_its_parts_and_bytes_exactly(self):
        textfile = os.path.join(self.dir, "spool.prom")
        up = self.spool("cp", self.source, self.prefix + "/forty", "--stats", "--json", SPOOL_METRICS_FILE=textfile)
        stats = stats_json(up.stderr)
        # 40 MiB in parts of 8 MiB: 5 part uploads, every byte once; the
        # multipart upload's start and completion.
        self.assertEqual(stats["ops"]["part_upload"]["requests"], 5, stats)
        self.assertEqual(stats["ops"]["part_upload"]["bytes_sent"], 40 * MIB, stats)
        self.assertEqual(stats["ops"]["multipart"]["requests"], 2, stats)
        self.assertEqual(stats["retries"], 0, stats)
        self.assertEqual(stats["errors"], 0, stats)
        self.assertEqual(stats["ops"]["part_upload"]["latency_seconds"]["count"], 5, stats)

        # The textfile says the same, and parses.
        with open(textfile) as f:
            parsed = families(f.read())
        self.assertEqual(parsed["spool_requests"].type, "counter")
        self.assertEqual(sample(parsed, "spool_requests", "spool_requests_total", owner="cli", op="part_upload"), 5)
        self.assertEqual(sample(parsed, "spool_request_sent_bytes", "spool_request_sent_bytes_total", owner="cli",
                                op="part_upload"), 40 * MIB)
        self.assertEqual(parsed["spool_request_duration_seconds"].type, "histogram")
        self.assertEqual(sample(parsed, "spool_request_duration_seconds", "spool_request_duration_seconds_count",
                                owner="cli", op="part_upload"), 5)
        self.assertFalse(os.path.exists(textfile + ".tmp"))

        target = os.path.join(self.dir, "back")
        down = self.spool("cp", self.prefix + "/forty", target, "--stats")
        self.assertIn("spool stats:", down.stderr)
        self.assertRegex(down.stderr, r"received 40(\.0)? MiB")
        with open(target, "rb") as a, open(self.source, "rb") as b:
            self.assertEqual(a.read(), b.read())

    def test_stats_json_goes_to_stderr_and_keeps_stdout_clean(self):
        self.spool("cp", self.source, self.prefix + "/x")
        listed = self.spool("ls", self.prefix + "/", "--json", "--stats")
        for line in listed.stdout.splitlines():
            self.assertNotIn('"stats"', line)
        self.assertGreaterEqual(stats_json(listed.stderr)["ops"]["list"]["requests"], 1)


class TrainingJobEndpoint(unittest.TestCase):
    """A training job serves its loader's and checkpoint manager's metrics while it runs."""

    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-train-metrics-")
        rng = random.Random(3)
        csv = os.path.join(self.dir, "train.csv")
        with open(csv, "w") as f:
            f.write(",".join([f"p{i}" for i in range(64)] + ["label"]) + "\n")
            for _ in range(600):
                f.write(",".join(str(rng.randrange(17)) for _ in range(64)) + f",{rng.randrange(10)}\n")
        subprocess.run([SPOOL, "convert", csv, os.path.join(self.dir, "data/train"), "--shards", "4"], check=True,
                       capture_output=True)

    def tearDown(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def test_the_metrics_port_answers_during_training(self):
        port = free_port()
        env = {**os.environ, "SPOOL_METRICS_PORT": str(port), "SPOOL_METRICS_ADDRESS": "127.0.0.1"}
        job = subprocess.Popen(
            [TRAIN_LOOP, "--data", os.path.join(self.dir, "data/train.manifest.json"),
             "--checkpoints", os.path.join(self.dir, "ckpt"), "--workdir", os.path.join(self.dir, "work"),
             "--steps", "400", "--save-every", "20", "--log-every", "10", "--step-delay-ms", "20",
             "--preemption-grace", "0"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
        try:
            parsed, deadline = None, time.time() + 60
            while time.time() < deadline:
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as response:
                        self.assertEqual(response.headers["Content-Type"], "text/plain; version=0.0.4; charset=utf-8")
                        parsed = families(response.read().decode())
                    if sample(parsed, "spool_checkpoint_saves", "spool_checkpoint_saves_total") >= 2:
                        break
                except (OSError, KeyError, AssertionError):
                    pass
                self.assertIsNone(job.poll(), "the training job ended before its metrics could be read")
                time.sleep(0.2)
            self.assertIsNotNone(parsed, "the metrics port never answered")
            self.assertGreater(sample(parsed, "spool_loader_records", "spool_loader_records_total"), 0)
            self.assertGreaterEqual(sample(parsed, "spool_checkpoint_saves", "spool_checkpoint_saves_total"), 2)
            self.assertEqual(parsed["spool_loader_next_seconds"].type, "histogram")
            self.assertGreater(sample(parsed, "spool_loader_next_seconds", "spool_loader_next_seconds_count"), 0)
            self.assertEqual(parsed["spool_checkpoint_blocked_seconds"].type, "histogram")
            self.assertGreater(sample(parsed, "spool_loader_memory_budget_bytes", "spool_loader_memory_budget_bytes"),
                               0)
            self.assertEqual(sample(parsed, "spool_build_info", "spool_build_info"), 1)
        finally:
            job.terminate()
            out, _ = job.communicate(timeout=60)
        self.assertIn("input wait", out)
        self.assertIn("checkpoint blocked", out)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--train-loop", required=True)
    args, rest = parser.parse_known_args()
    SPOOL, TRAIN_LOOP = args.spool, args.train_loop
    if not os.environ.get("AWS_ENDPOINT_URL"):
        sys.exit("run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL and the keys")
    unittest.main(argv=[sys.argv[0], *rest])
