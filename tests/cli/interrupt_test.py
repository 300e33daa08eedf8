#!/usr/bin/env python3
"""Ctrl-C and SIGTERM during long spool commands, against the Ceph RGW of the
ceph_rgw fixture (its AWS_* environment names the endpoint and keys).

Each case runs the real spool binary on ~500 MiB (convert: 300 MiB of CSV),
waits until the transfer has visibly started (an upload listed by the
server, downloaded bytes on disk) and, for uploads, about a second has
passed, sends SIGINT or SIGTERM, and checks what the command promises
(cli/interrupts.h):

- it exits with 128 + signal (130 / 143) within 2 s of the signal, and
  stderr is one line, "spool: interrupted by SIGINT: <what it left>";
- `spool cp` of a local file to S3 leaves no incomplete multipart upload
  (as the AWS CLI lists them) and no object at the destination key;
- `spool cp` of an object to a local folder leaves the folder empty: no
  file at the destination, no temporary file beside it;
- `spool ckpt save` leaves the step uncommitted (`spool ckpt list` does not
  show it), no multipart upload and no object under the step's folder;
- `spool ckpt restore` into a folder that holds a file leaves that folder
  exactly as it was, and no temporary folder beside it;
- a second SIGINT right after the first exits at once with 130;
- `spool sync` to S3 leaves no multipart upload, and `spool convert` of a
  large CSV to S3 writes no dataset manifest and leaves no shard behind.

  interrupt_test.py --spool PATH
Standard library only, plus the AWS CLI (/usr/bin/aws) to look at the
server independently of spool and curl to poll it cheaply while a command
runs. Everything written goes under
s3://$SPOOL_S3_TEST_BUCKET/interrupt-test/<random>/ and is deleted at the
end; scratch files go under /tmp.
"""

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import uuid
import xml.etree.ElementTree as ElementTree

SPOOL = None
AWS = "/usr/bin/aws"  # another aws (pyenv shims) may come first on PATH
ENDPOINT = os.environ.get("AWS_ENDPOINT_URL", "")
BUCKET = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
# One run's keys: concurrent runs (or a crashed earlier one) never meet.
PREFIX = f"interrupt-test/{uuid.uuid4().hex[:12]}"

MIB = 1 << 20
BIG = 500 * MIB
# What the issue requires: the command is gone within 2 s of the signal.
STOP_LIMIT = 2.0
# How long a transfer may take to start before the signal is sent anyway. On a
# loaded 2-core machine the server can be slow to answer the first request.
START_DEADLINE = 60.0
# The scenario: the signal comes about a second into the transfer.
SIGNAL_AFTER = 1.0

SCRATCH = None  # a folder under /tmp holding the big local files
BIG_FILE = None  # 500 MiB of random bytes
CKPT_FOLDER = None  # 500 MiB of random bytes in four files


def url(key):
    return f"s3://{BUCKET}/{key}"


def aws(*args):
    """Runs `aws ARGS` against the fixture's endpoint; returns parsed JSON."""
    result = subprocess.run([AWS, "--endpoint-url", ENDPOINT, "--output", "json", *args], capture_output=True,
                            text=True, stdin=subprocess.DEVNULL, timeout=120)
    if result.returncode != 0:
        raise AssertionError(f"aws {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return json.loads(result.stdout) if result.stdout.strip() else {}


def multipart_uploads(prefix):
    """The incomplete multipart uploads under `prefix`, as (key, upload id)."""
    listed = aws("s3api", "list-multipart-uploads", "--bucket", BUCKET, "--prefix", prefix)
    return [(upload["Key"], upload["UploadId"]) for upload in listed.get("Uploads") or []]


def listed_now(prefix, uploads):
    """Whether the server lists anything under `prefix`: incomplete multipart
    uploads when `uploads`, else objects. For polling while a transfer runs:
    one signed curl request takes tens of milliseconds, where the AWS CLI (a
    Python start-up) can take seconds on a busy machine, longer than the
    upload it waits for. The query parameters are in SigV4's canonical
    order, which curl's signer expects."""
    parameters = {"prefix": prefix, "uploads": ""} if uploads else {"prefix": prefix, "list-type": "2", "max-keys": "1"}
    query = "&".join(f"{name}={urllib.parse.quote(value, safe='')}" for name, value in sorted(parameters.items()))
    result = subprocess.run(
        ["curl", "-s", "--max-time", "10", "--aws-sigv4", "aws:amz:us-east-1:s3",
         "--user", f"{os.environ['AWS_ACCESS_KEY_ID']}:{os.environ['AWS_SECRET_ACCESS_KEY']}",
         "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", f"{ENDPOINT}/{BUCKET}?{query}"],
        capture_output=True, stdin=subprocess.DEVNULL)
    try:
        root = ElementTree.fromstring(result.stdout)
    except ElementTree.ParseError:
        return False  # no answer this time: keep polling
    entry = "}Upload" if uploads else "}Contents"
    return any(element.tag.endswith(entry) for element in root)


def upload_in_progress(prefix):
    return listed_now(prefix, uploads=True)


def objects(prefix):
    """The keys of the objects under `prefix`."""
    listed = aws("s3api", "list-objects-v2", "--bucket", BUCKET, "--prefix", prefix)
    return [entry["Key"] for entry in listed.get("Contents") or []]


def remove_prefix(prefix):
    """Deletes the objects under `prefix` and aborts its incomplete uploads
    (a failed case may leave one; the server's memory is small)."""
    for key, upload_id in multipart_uploads(prefix):
        aws("s3api", "abort-multipart-upload", "--bucket", BUCKET, "--key", key, "--upload-id", upload_id)
    spool("rm", "-r", url(prefix + "/"))


def spool(*args, check=False):
    result = subprocess.run([SPOOL, *args], capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=600)
    if check and result.returncode != 0:
        raise AssertionError(f"spool {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def write_random(path, size):
    """`size` random bytes (random, so no layer can compress them away)."""
    with open(path, "wb") as f:
        for _ in range(size // (8 * MIB)):
            f.write(os.urandom(8 * MIB))
        f.write(os.urandom(size % (8 * MIB)))


def landed(folder, name_starts="", at_least=16 * MIB):
    """True once the files below `folder` (below its entries whose names
    start with name_starts) hold `at_least` bytes on disk: a download is well
    under way, with a partial file of substance to clean up. Downloads write
    parts at their offsets into a file of the final size, so the size says
    nothing; the allocated blocks do."""
    total = 0
    try:
        names = [name for name in os.listdir(folder) if name.startswith(name_starts)]
    except FileNotFoundError:
        return False
    for name in names:
        path = os.path.join(folder, name)
        files = [path]
        if os.path.isdir(path):
            files = [os.path.join(root, file) for root, _, found in os.walk(path) for file in found]
        for file in files:
            try:
                total += os.stat(file).st_blocks * 512
            except FileNotFoundError:
                pass  # renamed or removed meanwhile
    return total >= at_least


def snapshot(folder):
    """Every file below `folder` with its contents, and every folder."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder) + "/"] = None
        for name in files:
            with open(os.path.join(root, name), "rb") as f:
                found[os.path.relpath(os.path.join(root, name), folder)] = f.read()
    return found


class Outcome:
    def __init__(self, returncode, seconds, stderr):
        self.returncode = returncode
        self.seconds = seconds  # from the (last) signal to the exit
        self.stderr = stderr


def interrupt(args, signum, started, signal_after=SIGNAL_AFTER, second_signal_after=None):
    """Runs `spool ARGS`, waits until `started()` is true and `signal_after`
    seconds have passed (or START_DEADLINE, then signals anyway), sends
    `signum` (twice when second_signal_after is given) and waits for the
    exit."""
    with tempfile.TemporaryFile() as err:
        # A file, not a pipe: nobody reads while the command runs.
        begin = time.monotonic()
        process = subprocess.Popen([SPOOL, *args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
        try:
            seen = False
            while process.poll() is None and time.monotonic() - begin < START_DEADLINE:
                seen = seen or started()
                if seen and time.monotonic() - begin >= signal_after:
                    break
                time.sleep(0.05)
            if process.poll() is not None:
                err.seek(0)
                raise AssertionError(f"spool {' '.join(args)} ended (exit {process.returncode}) before it could be "
                                     f"interrupted; the case tests nothing: {err.read().decode(errors='replace')}")
            first_signal = signalled = time.monotonic()
            process.send_signal(signum)
            if second_signal_after is not None:
                time.sleep(second_signal_after)
                signalled = time.monotonic()
                process.send_signal(signum)
            try:
                process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                raise AssertionError(f"spool {' '.join(args)} still runs 60 s after {signal.Signals(signum).name}")
            seconds = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        err.seek(0)
        outcome = Outcome(process.returncode, seconds, err.read().decode(errors="replace"))
    print(f"  spool {' '.join(args[:2])}: {signal.Signals(signum).name} {first_signal - begin:.2f} s after the start "
          f"({'transfer seen' if seen else 'transfer NOT seen'}), exit {outcome.returncode} "
          f"{outcome.seconds:.2f} s after the {'second ' if second_signal_after is not None else ''}signal; "
          f"stderr: {outcome.stderr.strip()!r}", file=sys.stderr, flush=True)
    return outcome


class InterruptTestCase(unittest.TestCase):
    """Each property is a subtest, so one run reports every broken promise
    (a command killed outright fails its exit code and also shows what it
    left behind)."""

    def assert_interrupted(self, outcome, signum):
        """Exit code, bounded shutdown and the one line on stderr."""
        name = signal.Signals(signum).name
        with self.subTest("exit code"):
            self.assertEqual(outcome.returncode, 128 + signum,
                             f"exit code after {name} (negative: killed by the signal, not handled); "
                             f"stderr: {outcome.stderr!r}")
        with self.subTest("stopped in time"):
            self.assertLessEqual(outcome.seconds, STOP_LIMIT,
                                 f"spool took {outcome.seconds:.2f} s to stop after {name}")
        with self.subTest("one line on stderr"):
            lines = outcome.stderr.splitlines()
            self.assertEqual(len(lines), 1, f"stderr should be one line saying what was left: {outcome.stderr!r}")
            self.assertTrue(lines[0].startswith(f"spool: interrupted by {name}: "), lines[0])

    def expect_no_uploads(self, prefix):
        with self.subTest("no incomplete multipart upload"):
            self.assertEqual(multipart_uploads(prefix), [], f"incomplete multipart uploads were left under {prefix}")


class UploadTest(InterruptTestCase):
    """spool cp FILE s3://...: the multipart upload is aborted."""

    def setUp(self):
        self.key = f"{PREFIX}/upload/big"

    def tearDown(self):
        remove_prefix(f"{PREFIX}/upload")

    def check(self, signum):
        outcome = interrupt(["cp", BIG_FILE, url(self.key)], signum,
                            started=lambda: upload_in_progress(self.key))
        self.assert_interrupted(outcome, signum)
        self.expect_no_uploads(f"{PREFIX}/upload/")
        with self.subTest("no object"):
            self.assertNotIn(self.key, objects(f"{PREFIX}/upload/"), "the interrupted upload became an object")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)

    def test_second_sigint_exits_at_once(self):
        # The first SIGINT starts the orderly stop (aborting the upload takes
        # a request); the second, 50 ms later, must not wait for it. Exiting
        # at once may leave the upload incomplete: tearDown aborts it.
        outcome = interrupt(["cp", BIG_FILE, url(self.key)], signal.SIGINT,
                            started=lambda: upload_in_progress(self.key), second_signal_after=0.05)
        self.assertEqual(outcome.returncode, 130, f"exit code after two SIGINTs; stderr: {outcome.stderr!r}")
        self.assertLessEqual(outcome.seconds, 1.0,
                             f"spool took {outcome.seconds:.2f} s to exit after the second SIGINT")


class DownloadTest(InterruptTestCase):
    """spool cp s3://... FOLDER/big: the partial file is removed."""

    @classmethod
    def setUpClass(cls):
        cls.key = f"{PREFIX}/download/big"
        spool("cp", BIG_FILE, url(cls.key), check=True)

    @classmethod
    def tearDownClass(cls):
        remove_prefix(f"{PREFIX}/download")

    def setUp(self):
        self.folder = tempfile.mkdtemp(prefix="spool-interrupt-download-", dir=SCRATCH)

    def check(self, signum):
        # A download from the local server takes a few seconds: signal once
        # 16 MiB have reached the temporary file rather than after a fixed
        # second, which a quiet machine might not leave.
        outcome = interrupt(["cp", url(self.key), os.path.join(self.folder, "big")], signum,
                            started=lambda: landed(self.folder), signal_after=0.0)
        self.assert_interrupted(outcome, signum)
        with self.subTest("nothing partial left"):
            self.assertEqual(os.listdir(self.folder), [], "the destination folder should be left empty")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)


class CheckpointSaveTest(InterruptTestCase):
    """spool ckpt save: the step stays uncommitted and its files are removed."""

    def setUp(self):
        self.root = f"{PREFIX}/save/ckpt"

    def tearDown(self):
        remove_prefix(f"{PREFIX}/save")

    def check(self, signum):
        outcome = interrupt(["ckpt", "save", url(self.root), "--step", "5", CKPT_FOLDER], signum,
                            started=lambda: upload_in_progress(self.root + "/"))
        self.assert_interrupted(outcome, signum)
        with self.subTest("step not committed"):
            listed = spool("--json", "ckpt", "list", url(self.root), check=True)
            steps = [json.loads(line)["step"] for line in listed.stdout.splitlines() if line.strip()]
            self.assertNotIn(5, steps, "the interrupted step was committed")
        self.expect_no_uploads(self.root + "/")
        with self.subTest("no object"):
            self.assertEqual(objects(self.root + "/"), [], "the interrupted save left objects behind")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)


class CheckpointRestoreTest(InterruptTestCase):
    """spool ckpt restore: the target folder is left exactly as it was."""

    @classmethod
    def setUpClass(cls):
        cls.root = f"{PREFIX}/restore/ckpt"
        spool("ckpt", "save", url(cls.root), "--step", "1", CKPT_FOLDER, check=True)

    @classmethod
    def tearDownClass(cls):
        remove_prefix(f"{PREFIX}/restore")

    def setUp(self):
        self.parent = tempfile.mkdtemp(prefix="spool-interrupt-restore-", dir=SCRATCH)
        self.target = os.path.join(self.parent, "model")
        os.makedirs(os.path.join(self.target, "sub"))
        with open(os.path.join(self.target, "previous.txt"), "wb") as f:
            f.write(b"the checkpoint restored before\n")
        with open(os.path.join(self.target, "sub", "notes.bin"), "wb") as f:
            f.write(os.urandom(4096))

    def check(self, signum):
        before = snapshot(self.target)
        # Restore downloads into ".model.spool-restore-XXXXXX" beside the
        # target; like a download, signal once 16 MiB have landed there.
        outcome = interrupt(["ckpt", "restore", url(self.root), self.target, "--replace"], signum,
                            started=lambda: landed(self.parent, ".model.spool-restore-"), signal_after=0.0)
        self.assert_interrupted(outcome, signum)
        with self.subTest("nothing beside the target"):
            self.assertEqual(sorted(os.listdir(self.parent)), ["model"], "the restore left something beside the target")
        with self.subTest("target unchanged"):
            after = snapshot(self.target)
            self.assertEqual(sorted(after), sorted(before), "the target folder's files changed")
            self.assertTrue(after == before, "a file in the target folder changed")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)


class SyncTest(InterruptTestCase):
    """spool sync FOLDER s3://...: no multipart upload is left."""

    def setUp(self):
        self.prefix = f"{PREFIX}/sync"

    def tearDown(self):
        remove_prefix(self.prefix)

    def check(self, signum):
        outcome = interrupt(["sync", CKPT_FOLDER, url(self.prefix + "/")], signum,
                            started=lambda: upload_in_progress(self.prefix + "/"))
        self.assert_interrupted(outcome, signum)
        # Files that finished before the signal may stay (sync is not atomic);
        # none may be left half uploaded.
        self.expect_no_uploads(self.prefix + "/")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)


class ConvertTest(InterruptTestCase):
    """spool convert big.csv s3://...: no manifest, no shard left."""

    @classmethod
    def setUpClass(cls):
        # ~300 MiB of CSV: one random block of rows written over and over
        # (repeated rows are fine; the command only has to be busy).
        cls.csv = os.path.join(SCRATCH, "table.csv")
        rows = []
        for i in range(20000):
            rows.append(f"{i},{int.from_bytes(os.urandom(4), 'little') / 7.0:.6f},{os.urandom(24).hex()}\n")
        block = "".join(rows).encode()
        with open(cls.csv, "wb") as f:
            f.write(b"id,value,text\n")
            while f.tell() < 300 * MIB:
                f.write(block)

    @classmethod
    def tearDownClass(cls):
        os.remove(cls.csv)

    def setUp(self):
        self.prefix = f"{PREFIX}/convert"

    def tearDown(self):
        remove_prefix(self.prefix)

    def check(self, signum):
        destination = f"{self.prefix}/train"
        # Small shards, so some are complete (and must be removed) when the
        # signal comes; a schema, so the command does not first read the
        # whole file to infer the column types.
        outcome = interrupt(["convert", self.csv, url(destination), "--schema", "id:int64,value:float,text:bytes",
                             "--shard-size", "16MiB"], signum,
                            started=lambda: (listed_now(self.prefix + "/", uploads=True) or
                                             listed_now(self.prefix + "/", uploads=False)))
        self.assert_interrupted(outcome, signum)
        left = objects(self.prefix + "/")
        with self.subTest("no manifest"):
            self.assertNotIn(f"{destination}.manifest.json", left, "the interrupted conversion wrote its manifest")
        with self.subTest("no shard"):
            self.assertEqual(left, [], "the interrupted conversion left shards behind")
        self.expect_no_uploads(self.prefix + "/")

    def test_sigint(self):
        self.check(signal.SIGINT)

    def test_sigterm(self):
        self.check(signal.SIGTERM)


def setUpModule():
    global SCRATCH, BIG_FILE, CKPT_FOLDER
    SCRATCH = tempfile.mkdtemp(prefix="spool-interrupt-", dir="/tmp")
    BIG_FILE = os.path.join(SCRATCH, "big.bin")
    write_random(BIG_FILE, BIG)
    CKPT_FOLDER = os.path.join(SCRATCH, "checkpoint")
    os.makedirs(os.path.join(CKPT_FOLDER, "optimizer"))
    for name in ("model-00001.bin", "model-00002.bin", "model-00003.bin", "optimizer/state.bin"):
        write_random(os.path.join(CKPT_FOLDER, name), BIG // 4)


def tearDownModule():
    if SCRATCH:
        shutil.rmtree(SCRATCH, ignore_errors=True)
    remove_prefix(PREFIX)


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    args, rest = parser.parse_known_args()
    SPOOL = os.path.abspath(args.spool)
    if not ENDPOINT:
        sys.exit("AWS_ENDPOINT_URL is not set: run under ctest (the ceph_rgw fixture's environment)")
    unittest.main(argv=[sys.argv[0], *rest], verbosity=2)
