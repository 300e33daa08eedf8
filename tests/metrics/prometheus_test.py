#!/usr/bin/env python3
"""A real Prometheus server (Debian's `prometheus`) scrapes a running training
job (samples/train_loop, reading its dataset from and saving its checkpoints
to the Ceph RGW of the ceph_rgw fixture) on SPOOL_METRICS_PORT, and its HTTP
API answers for spool's series and for every query of the Grafana dashboard
in samples/grafana/. Prometheus runs on 127.0.0.1 with a generated config,
a 1 s scrape interval and a temporary storage folder, and is stopped at the
end.

  prometheus_test.py --spool PATH --train-loop PATH --prometheus PATH --dashboard PATH
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
import urllib.parse
import urllib.request
import uuid

SPOOL = TRAIN_LOOP = PROMETHEUS = DASHBOARD = ""
BUCKET = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
SCRAPE = "1s"
# What Grafana puts in place of $__rate_interval: at least 4 scrapes.
RATE_INTERVAL = "10s"

# The series a scrape of a training job must give Prometheus, each a query
# that must return at least one sample with a value above `minimum`. A new
# series (the retry quota and throttling of issue #36 items 1-2) is one line.
SERIES = [
    ("requests", 'sum(spool_requests_total{owner="loader"})', 1),
    ("checkpoint requests", 'sum(spool_requests_total{owner="checkpoint"})', 1),
    ("retries", "sum(spool_request_retries_total)", None),
    ("throttles", "sum(spool_request_throttles_total)", None),
    ("request latency", "sum(spool_request_duration_seconds_count)", 1),
    ("input wait", "spool_loader_input_wait_seconds_total", None),
    ("records", "spool_loader_records_total", 1),
    ("checkpoint saves", "spool_checkpoint_saves_total", 1),
    ("checkpoint blocked", "spool_checkpoint_blocked_seconds_count", 1),
    ("checkpoint upload", "spool_checkpoint_upload_seconds_count", 1),
    ("build info", "spool_build_info", None),
    ("retry quota", "spool_retry_quota_tokens", 1),
    ("concurrency limit", "spool_concurrency_limit", 1),
    ("requests in flight", "spool_requests_in_flight", None),
    ("throttled responses", "spool_throttled_responses_total", None),
]

# Dashboard queries whose series do not exist yet: they must come back empty
# (so this list stays true), each with the issue item that adds its series.
EXPECTED_EMPTY = {
}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def dashboard_queries(path):
    """(panel title, expr) of every target of every panel, rows included."""
    with open(path) as f:
        dashboard = json.load(f)
    queries = []

    def walk(panels):
        for panel in panels:
            walk(panel.get("panels", []))
            for target in panel.get("targets", []):
                queries.append((panel["title"], target["expr"]))

    walk(dashboard["panels"])
    return queries


class PrometheusScrapesATrainingJob(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-prometheus-")
        self.processes = []
        self.root = f"s3://{BUCKET}/prometheus-{uuid.uuid4().hex[:12]}"
        rng = random.Random(5)
        csv = os.path.join(self.dir, "train.csv")
        with open(csv, "w") as f:
            f.write(",".join([f"p{i}" for i in range(64)] + ["label"]) + "\n")
            for _ in range(400):
                f.write(",".join(str(rng.randrange(17)) for _ in range(64)) + f",{rng.randrange(10)}\n")
        subprocess.run([SPOOL, "convert", csv, self.root + "/data/train", "--shards", "4"], check=True,
                       capture_output=True, timeout=120)

    def tearDown(self):
        for process in reversed(self.processes):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        subprocess.run([SPOOL, "rm", "-r", self.root + "/"], capture_output=True, timeout=120)
        shutil.rmtree(self.dir, ignore_errors=True)

    def start(self, args, **env):
        log = open(os.path.join(self.dir, os.path.basename(args[0]) + ".log"), "w")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT, env={**os.environ, **env})
        log.close()
        self.processes.append(process)
        return process

    def log_of(self, name):
        with open(os.path.join(self.dir, name + ".log")) as f:
            return f.read()[-3000:]

    def query(self, expr):
        """The result vector of an instant query (raises on an API error)."""
        url = f"{self.api}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        with urllib.request.urlopen(url, timeout=10) as response:
            answer = json.load(response)
        self.assertEqual(answer["status"], "success", f"{expr}: {answer}")
        return answer["data"]["result"]

    def test_prometheus_scrapes_the_series_and_the_dashboard_queries_return_data(self):
        metrics_port = free_port()
        job = self.start([TRAIN_LOOP, "--data", self.root + "/data/train.manifest.json",
                          "--checkpoints", self.root + "/ckpt", "--workdir", os.path.join(self.dir, "work"),
                          "--steps", "1000000", "--save-every", "10", "--log-every", "50", "--step-delay-ms", "20",
                          "--preemption-grace", "0"],
                         SPOOL_METRICS_PORT=str(metrics_port), SPOOL_METRICS_ADDRESS="127.0.0.1")

        api_port = free_port()
        config = os.path.join(self.dir, "prometheus.yml")
        with open(config, "w") as f:
            f.write(f"global:\n  scrape_interval: {SCRAPE}\n  evaluation_interval: {SCRAPE}\n"
                    f"scrape_configs:\n  - job_name: spool\n    static_configs:\n"
                    f"      - targets: ['127.0.0.1:{metrics_port}']\n")
        self.api = f"http://127.0.0.1:{api_port}"
        server = self.start([PROMETHEUS, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{api_port}",
                             f"--storage.tsdb.path={os.path.join(self.dir, 'tsdb')}", "--log.level=warn"])

        # Wait until every series has data (and the rates have a few scrapes).
        missing, deadline = SERIES, time.time() + 45
        while missing and time.time() < deadline:
            self.assertIsNone(job.poll(), "the training job ended:\n" + self.log_of("train_loop"))
            self.assertIsNone(server.poll(), "prometheus ended:\n" + self.log_of("prometheus"))
            time.sleep(1)
            try:
                missing = [s for s in missing if not self.has_data(*s[1:])]
            except OSError:
                continue  # not listening yet
        self.assertEqual([name for name, _, _ in missing], [],
                         "series without data; prometheus said:\n" + self.log_of("prometheus"))
        up = self.query('up{job="spool"}')
        self.assertEqual([float(r["value"][1]) for r in up], [1.0])
        time.sleep(4)  # a few more scrapes: every rate() window below then holds several samples

        queries = dashboard_queries(DASHBOARD)
        self.assertGreaterEqual(len(queries), 8)
        for title, expr in queries:
            with self.subTest(panel=title, expr=expr):
                result = self.query(expr.replace("$__rate_interval", RATE_INTERVAL))
                if expr in EXPECTED_EMPTY:
                    self.assertEqual(result, [], f"now has data: take it out of EXPECTED_EMPTY ({EXPECTED_EMPTY[expr]})")
                else:
                    self.assertNotEqual(result, [], f"the panel '{title}' would show no data")
        for expr in EXPECTED_EMPTY:
            self.assertIn(expr, [e for _, e in queries], "EXPECTED_EMPTY names a query the dashboard lacks")

    def has_data(self, expr, minimum):
        result = self.query(expr)
        if not result:
            return False
        return minimum is None or any(float(r["value"][1]) >= minimum for r in result)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--train-loop", required=True)
    parser.add_argument("--prometheus", required=True)
    parser.add_argument("--dashboard", required=True)
    args, rest = parser.parse_known_args()
    SPOOL, TRAIN_LOOP, PROMETHEUS, DASHBOARD = args.spool, args.train_loop, args.prometheus, args.dashboard
    if not shutil.which(PROMETHEUS):
        sys.exit(f"no Prometheus server at {PROMETHEUS}: install Debian's prometheus package (scripts/setup)")
    if not os.environ.get("AWS_ENDPOINT_URL"):
        sys.exit("run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL and the keys")
    unittest.main(argv=[sys.argv[0], *rest])
