#!/usr/bin/env python3
"""`spool cp` of a large file killed with SIGKILL mid-upload, then run again:
the second run sends only what the server lacks and the object comes out
byte for byte; a changed source starts cleanly; --no-resume ignores the
state. Through the fault proxy (tests/faults/fault_proxy.py), which holds
back the uploads after the first few parts so the kill lands mid-way, and
counts what each run sends.

  resume_test.py --spool PATH --proxy PATH --backend s3|gs

s3: the Ceph RGW of the ceph_rgw fixture (AWS_* environment); gs: the
project's GCS server of the gcs_server fixture (SPOOL_GCS_SERVER_DIR).
Only the standard library.
"""
import argparse
import glob
import hashlib
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))
from fault_proxy_client import FaultProxyProcess  # noqa: E402

SPOOL = PROXY = BACKEND = ""
MIB = 1 << 20
SIZE = 200 * MIB
KEPT = 3  # parts (S3) or chunks (GCS) that reach the server before the kill
CHUNK = 16 * MIB  # the GCS store's resumable chunk
PIECES = 0  # 200 MiB in S3 parts of 8 MiB (s3::DefaultPartSize) or GCS chunks of 16 MiB: set in main


class Proxy(FaultProxyProcess):
    def __init__(self, upstream, folder):
        super().__init__(PROXY, upstream, folder)


def is_piece(entry):
    """A part (S3) or a chunk with bytes (GCS); GCS status queries are logged the same way."""
    if entry["method"] != "PUT":
        return False
    return "partNumber=" in entry["target"] if BACKEND == "s3" else "upload_id=" in entry["target"]


class Resume(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-resume-")
        self.cache = os.path.join(self.dir, "cache")
        self.source = os.path.join(self.dir, "model.bin")
        self.write_source(1)
        if BACKEND == "s3":
            upstream = os.environ["AWS_ENDPOINT_URL"].split("://", 1)[1]
            self.proxy = Proxy(upstream, self.dir)
            self.env = {**os.environ, "AWS_ENDPOINT_URL": self.proxy.url, "XDG_CACHE_HOME": self.cache}
            bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
        else:
            with open(os.path.join(os.environ["SPOOL_GCS_SERVER_DIR"], "port")) as f:
                upstream = f"127.0.0.1:{int(f.read())}"
            self.proxy = Proxy(upstream, self.dir)
            self.env = {**os.environ, "STORAGE_EMULATOR_HOST": self.proxy.url, "XDG_CACHE_HOME": self.cache}
            bucket = "spool-resume"
            self.spool("mb", f"gs://{bucket}", check=False)
        self.url = f"{BACKEND}://{bucket}/resume-{uuid.uuid4().hex[:12]}/model.bin"

    def tearDown(self):
        self.spool("rm", self.url, check=False)
        if BACKEND == "s3":
            self.spool("gc-uploads", self.url.rsplit("/", 1)[0] + "/", "--older-than", "0s", check=False)
        self.proxy.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def write_source(self, seed):
        with open(self.source, "wb") as f:
            f.write(random.Random(seed).randbytes(SIZE))

    def spool(self, *args, check=True):
        result = subprocess.run([SPOOL, *args], capture_output=True, text=True, env=self.env, timeout=600)
        if check:
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def state_files(self):
        return glob.glob(os.path.join(self.cache, "spool", "uploads", "*.state"))

    def hold_back_after(self, kept):
        """Lets `kept` parts or chunks through, then stalls every later one."""
        rule = {"kind": "stall_request", "method": "PUT", "bytes": 0, "seconds": 120, "skip": kept, "count": 10000}
        if BACKEND == "s3":
            rule["query"] = "partNumber"
        else:
            rule["query"] = "upload_id"
            rule["headers"] = {"Content-Range": "^bytes [0-9]"}
        self.proxy.call("POST", "/rules", rule)

    def killed_upload(self, *flags, command=None):
        """Starts `spool cp` (or `command`), kills it with SIGKILL once KEPT pieces are on the server."""
        self.proxy.reset()
        self.hold_back_after(KEPT)
        command = command or ["cp", self.source, self.url, "-q", *flags]
        job = subprocess.Popen([SPOOL, *command], env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 120
        while True:
            done = [e for e in self.proxy.log() if is_piece(e) and e["status"] in (200, 308)]
            if len(done) >= KEPT:
                break
            self.assertIsNone(job.poll(), "spool cp ended before it could be killed")
            self.assertLess(time.time(), deadline, "the first pieces never arrived")
            time.sleep(0.05)
        time.sleep(0.3)  # the state file is written as each piece completes
        job.send_signal(signal.SIGKILL)
        job.wait(timeout=30)
        job.stderr.close()
        self.proxy.reset()

    def session_committed(self, state_text):
        """How many bytes the GCS session in the state file holds (asked through the proxy)."""
        token = next(line.split("=", 1)[1] for line in state_text.splitlines() if line.startswith("token="))
        session = token.split(" ", 1)[1]
        request = urllib.request.Request(session, data=b"", method="PUT", headers={"Content-Range": "bytes */*"})
        try:
            urllib.request.urlopen(request, timeout=30)
            self.fail("the session answered 2xx: it was finalized")
        except urllib.error.HTTPError as answer:
            self.assertEqual(answer.code, 308)
            held = answer.headers.get("Range")
        self.proxy.call("DELETE", "/log")
        return 0 if not held else int(held.rsplit("-", 1)[1]) + 1

    def pieces_sent(self):
        """Parts or chunks of model.bin the server took (not, say, the checkpoint manager's
        conditional-write probe). A request the client retried (its first attempt failed, or its
        answer was lost on a loaded machine) counts once: S3 parts by their number, and for both
        only requests the server answered without an error."""
        taken = [e for e in self.proxy.log()
                 if is_piece(e) and "model.bin" in e["target"] and e["status"] is not None and e["status"] < 400]
        if BACKEND == "s3":
            return len({re.search(r"partNumber=(\d+)", e["target"]).group(1) for e in taken})
        return len(taken)

    def digest_of_object(self):
        target = os.path.join(self.dir, "downloaded")
        self.spool("cp", self.url, target, "-q")
        with open(target, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
        os.remove(target)
        return digest

    def digest_of_source(self):
        with open(self.source, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()

    def test_a_killed_upload_continues_with_only_what_is_missing(self):
        self.killed_upload()
        states = self.state_files()
        self.assertEqual(len(states), 1, "a killed upload keeps its state")
        folder = os.path.dirname(states[0])
        self.assertEqual(stat.S_IMODE(os.stat(folder).st_mode), 0o700)
        self.assertEqual(stat.S_IMODE(os.stat(states[0]).st_mode), 0o600)
        with open(states[0]) as f:
            kept = f.read()
        self.assertNotIn(os.environ.get("AWS_SECRET_ACCESS_KEY", "no secret"), kept)

        if BACKEND == "gs":
            committed = self.session_committed(kept)
            self.assertGreaterEqual(committed, CHUNK, "the killed upload kept nothing")
        self.spool("cp", self.source, self.url, "-q")
        sent = self.pieces_sent()
        if BACKEND == "s3":
            self.assertEqual(sent, PIECES - KEPT, "the second run sends only the missing parts")
        else:
            # Two status queries (where the session stands; the continued
            # session checks it again before trusting it), then the chunks it lacks.
            missing = -(-(SIZE - committed) // CHUNK)
            self.assertEqual(sent, 2 + missing, "the second run sends only the missing chunks")
        self.assertEqual(self.digest_of_object(), self.digest_of_source())
        self.assertEqual(self.state_files(), [], "a committed upload leaves no state")
        if BACKEND == "s3":
            left = self.spool("gc-uploads", self.url.rsplit("/", 1)[0] + "/", "--older-than", "0s", "--dry-run",
                              "--json").stdout
            self.assertNotIn("would_abort", left, "no multipart upload is left behind")

    def test_a_changed_source_starts_cleanly(self):
        self.killed_upload()
        self.write_source(2)  # same size, other bytes, a new mtime
        self.spool("cp", self.source, self.url, "-q")
        self.assertEqual(self.pieces_sent(), PIECES, "a changed file is uploaded whole")
        self.assertEqual(self.digest_of_object(), self.digest_of_source())
        self.assertEqual(self.state_files(), [])
        if BACKEND == "s3":
            left = self.spool("gc-uploads", self.url.rsplit("/", 1)[0] + "/", "--older-than", "0s", "--dry-run",
                              "--json").stdout
            self.assertNotIn("would_abort", left, "the stale upload was aborted")

    def test_a_checkpoint_step_saved_again_after_a_kill_continues(self):
        folder = os.path.join(self.dir, "step")
        os.makedirs(folder)
        os.rename(self.source, os.path.join(folder, "model.bin"))
        self.source = os.path.join(folder, "model.bin")
        root = self.url.rsplit("/", 1)[0] + "/ckpt"
        save = ["ckpt", "save", root, "--step", "100", folder, "-q"]
        self.killed_upload(command=save)
        states = self.state_files()
        self.assertEqual(len(states), 1)
        if BACKEND == "gs":
            with open(states[0]) as f:
                committed = self.session_committed(f.read())
        self.spool(*save)
        sent = self.pieces_sent()
        if BACKEND == "s3":
            self.assertEqual(sent, PIECES - KEPT, "the step's file sends only its missing parts")
        else:
            self.assertEqual(sent, 2 + -(-(SIZE - committed) // CHUNK), "the step's file sends only its missing chunks")
        restored = os.path.join(self.dir, "restored")
        self.spool("ckpt", "restore", root, restored, "-q")
        with open(os.path.join(restored, "model.bin"), "rb") as f:
            self.assertEqual(hashlib.sha256(f.read()).hexdigest(), self.digest_of_source())
        self.assertEqual(self.state_files(), [])
        self.spool("rm", "-r", root + "/", check=False)

    def test_no_resume_uploads_whole_and_keeps_no_state(self):
        self.killed_upload("--no-resume")
        self.assertEqual(self.state_files(), [], "--no-resume keeps no state")
        self.spool("cp", self.source, self.url, "-q", "--no-resume")
        self.assertEqual(self.pieces_sent(), PIECES)
        self.assertEqual(self.digest_of_object(), self.digest_of_source())


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--backend", choices=["s3", "gs"], required=True)
    args, rest = parser.parse_known_args()
    SPOOL, PROXY, BACKEND = args.spool, args.proxy, args.backend
    PIECES = 25 if BACKEND == "s3" else 13
    if BACKEND == "s3" and not os.environ.get("AWS_ENDPOINT_URL"):
        sys.exit("run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL and the keys")
    if BACKEND == "gs" and not os.environ.get("SPOOL_GCS_SERVER_DIR"):
        sys.exit("run through ctest: the gcs_server fixture sets SPOOL_GCS_SERVER_DIR")
    unittest.main(argv=[sys.argv[0], *rest])
