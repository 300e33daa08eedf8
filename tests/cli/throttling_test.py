#!/usr/bin/env python3
"""Many `spool cp -r` processes downloading the same objects through a
throttling server: every client finishes with the right data, and retries
stay bounded (core/throttle.h: the retry quota and the adaptive concurrency
limit).

The fault proxy (tests/faults/fault_proxy.py, its "throttle" rule) sits
between the clients and the Ceph RGW of the ceph_rgw fixture and admits at
most RATE GETs per second per key prefix, answering the rest with S3's
503 SlowDown. CLIENTS processes each copy the same OBJECTS objects of 64 KiB.

Printed (not asserted: no timing assertions): the server's admitted rate
against RATE (goodput: over the whole run, first to last admitted GET, and
in the steady state while every client still runs), total GETs against the GETs needed, throttled
answers, and Jain's fairness index over the clients' completion times.
Asserted: every client exits 0, every file is byte-identical, and the GETs
sent stay within 2x of those needed (a loose bound; the throttled ones
included).

  throttling_test.py --spool PATH --proxy PATH [--clients 16 --objects 200 --rate 60]
                     [--backend s3|gs] [--client spool|aws-standard|aws-adaptive] [--report FILE]

s3: the Ceph RGW of the ceph_rgw fixture (AWS_* environment); gs: the
project's GCS server of the gcs_server fixture (SPOOL_GCS_SERVER_DIR), with
the proxy answering 429 rateLimitExceeded JSON.

With --client aws-*, the AWS CLI downloads instead (AWS_RETRY_MODE standard
or adaptive) and nothing is asserted: bench/throttling.sh's baseline.

Only the standard library.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))
from fault_proxy_client import FaultProxyProcess  # noqa: E402
import throttle_figures  # noqa: E402

SPOOL = PROXY = REPORT = ""
BACKEND = "s3"  # or gs: the project's GCS server (SPOOL_GCS_SERVER_DIR)
CLIENT = "spool"  # or aws-standard, aws-adaptive (bench/throttling.sh)
CLIENTS, OBJECTS, RATE = 16, 200, 60.0
OBJECT_SIZE = 64 * 1024


def is_object_get(entry, prefix):
    """A GET of one object's bytes (not a listing) under `prefix`."""
    if entry["method"] != "GET":
        return False
    if BACKEND == "gs":  # /download/storage/v1/b/B/o/<prefix>%2F<name>?alt=media (name URL-encoded)
        return f"{prefix}%2F" in entry["target"] and "alt=media" in entry["target"]
    return f"/{prefix}/" in entry["target"] and "list-type" not in entry["target"]


class Throttling(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-throttle-")
        if BACKEND == "s3":
            self.bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
            upstream = os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1]
            self.direct_env = dict(os.environ)
        else:
            self.bucket = "spool-throttle"
            with open(os.path.join(os.environ["SPOOL_GCS_SERVER_DIR"], "port")) as f:
                upstream = f"127.0.0.1:{int(f.read())}"
            self.direct_env = {**os.environ, "STORAGE_EMULATOR_HOST": f"http://{upstream}"}
            self.run_spool(["mb", f"gs://{self.bucket}"], self.direct_env, check=False)
        self.prefix = f"throttle-{uuid.uuid4().hex[:12]}"
        self.url = f"{BACKEND}://{self.bucket}/{self.prefix}/"
        source = os.path.join(self.dir, "source")
        os.makedirs(source)
        self.digests = {}
        for i in range(OBJECTS):
            data = os.urandom(OBJECT_SIZE)
            name = f"obj-{i:04d}"
            with open(os.path.join(source, name), "wb") as f:
                f.write(data)
            self.digests[name] = hashlib.sha256(data).hexdigest()
        # Straight to the server: only the downloads go through the proxy.
        self.run_spool(["cp", "-r", source + "/", self.url], self.direct_env)
        self.proxy = FaultProxyProcess(PROXY, upstream, self.dir)
        variable = "AWS_ENDPOINT_URL" if BACKEND == "s3" else "STORAGE_EMULATOR_HOST"
        self.env = {**self.direct_env, variable: self.proxy.url}

    def tearDown(self):
        self.proxy.close()
        self.run_spool(["rm", "-r", self.url], self.direct_env, check=False)
        shutil.rmtree(self.dir, ignore_errors=True)

    def run_spool(self, args, env, check=True):
        result = subprocess.run([SPOOL, *args], capture_output=True, text=True, env=env, timeout=900)
        if check:
            self.assertEqual(result.returncode, 0, f"spool {' '.join(args)}: {result.stderr}")
        return result

    def check_copy(self, folder):
        names = sorted(os.listdir(folder))
        self.assertEqual(names, sorted(self.digests), folder)
        for name in names:
            with open(os.path.join(folder, name), "rb") as f:
                self.assertEqual(hashlib.sha256(f.read()).hexdigest(), self.digests[name], f"{folder}/{name}")

    def client_command(self, folder):
        if CLIENT == "spool":
            return [SPOOL, "cp", "-r", self.url, folder + "/"]
        return ["aws", "s3", "cp", "--recursive", "--only-show-errors", self.url, folder + "/"]

    def client_env(self):
        if CLIENT == "spool":
            return self.env
        # The AWS CLI's retry modes: "standard" (a retry quota) or "adaptive"
        # (plus a client-side rate limiter).
        return {**self.env, "AWS_RETRY_MODE": CLIENT.removeprefix("aws-"), "AWS_EC2_METADATA_DISABLED": "true"}

    def run_clients(self):
        """The throttled run; returns its figures (and the clients' folders and exit codes)."""
        # What one client needs, unthrottled: the GETs a job must send.
        alone = subprocess.run(self.client_command(os.path.join(self.dir, "alone")), env=self.client_env(),
                               capture_output=True, text=True, timeout=900)
        self.assertEqual(alone.returncode, 0, alone.stderr)
        alone_log = self.proxy.log()
        needed_per_client = sum(is_object_get(e, self.prefix) for e in alone_log)
        # Every GET the throttle counts (listings and, on GCS, metadata too):
        # what bounds a perfectly paced job.
        gets_per_client = sum(e["method"] == "GET" for e in alone_log)
        self.assertGreaterEqual(needed_per_client, OBJECTS)
        self.proxy.call("DELETE", "/log")

        # S3 answers 503 SlowDown XML; GCS 429 rateLimitExceeded JSON.
        self.proxy.call("POST", "/rules", {"kind": "throttle", "rate": RATE, "method": "GET",
                                           "flavor": "s3" if BACKEND == "s3" else "gcs"})
        start = time.monotonic()
        clients = []
        for i in range(CLIENTS):
            folder = os.path.join(self.dir, f"client-{i:02d}")
            process = subprocess.Popen(self.client_command(folder), env=self.client_env(),
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            clients.append((folder, process))
        # Each client's own completion time: one waiting thread per client.
        finished = [0.0] * len(clients)
        results = [None] * len(clients)

        def wait(i, folder, process):
            _, stderr = process.communicate(timeout=900)
            finished[i] = time.monotonic() - start
            results[i] = (folder, process.returncode, stderr)

        waiters = [threading.Thread(target=wait, args=(i, *c)) for i, c in enumerate(clients)]
        for waiter in waiters:
            waiter.start()
        for waiter in waiters:
            waiter.join()
        rule = self.proxy.call("GET", "/rules")[0]
        failed = sum(code != 0 for _, code, _ in results)
        figures = throttle_figures.figures(
            label=CLIENT, clients=CLIENTS, rate=RATE, rule=rule, log=self.proxy.log(), start=start,
            finished=finished, failed=failed, needed=needed_per_client * CLIENTS,
            counted=lambda e: is_object_get(e, self.prefix))
        figures.update(client=CLIENT, objects=OBJECTS, paced_seconds=gets_per_client * CLIENTS / RATE)
        print(f"\nthrottling ({CLIENT}): {CLIENTS} clients x {OBJECTS} objects of {OBJECT_SIZE // 1024} KiB, "
              f"R = {RATE:g} GET/s per prefix; a perfectly paced job: {figures['paced_seconds']:.1f} s")
        throttle_figures.print_figures(figures, "503 SlowDown" if BACKEND == "s3" else "429 rateLimitExceeded")
        throttle_figures.append_report(REPORT, figures)
        return figures, results

    def test_concurrent_clients_finish_under_throttling(self):
        figures, results = self.run_clients()
        if CLIENT != "spool":
            return  # a baseline: its figures are the result
        for folder, code, stderr in results:
            self.assertEqual(code, 0, f"{folder}: {stderr}")
            self.check_copy(folder)
        self.assertLessEqual(figures["sent"], 2 * figures["needed"],
                             "the clients' retries more than doubled the requests")


def main():
    global SPOOL, PROXY, CLIENTS, OBJECTS, RATE, CLIENT, REPORT, BACKEND
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--clients", type=int, default=CLIENTS)
    parser.add_argument("--objects", type=int, default=OBJECTS)
    parser.add_argument("--rate", type=float, default=RATE)
    parser.add_argument("--client", choices=["spool", "aws-standard", "aws-adaptive"], default=CLIENT,
                        help="who downloads (the AWS CLI runs are bench/throttling.sh's baseline: not asserted)")
    parser.add_argument("--backend", choices=["s3", "gs"], default=BACKEND)
    parser.add_argument("--report", default="", help="append the figures as a JSON line to this file")
    args, rest = parser.parse_known_args()
    SPOOL, PROXY, CLIENTS, OBJECTS, RATE = args.spool, args.proxy, args.clients, args.objects, args.rate
    CLIENT, REPORT, BACKEND = args.client, args.report, args.backend
    if BACKEND == "gs" and CLIENT != "spool":
        parser.error("the AWS CLI baseline runs against S3 only")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)


if __name__ == "__main__":
    main()
