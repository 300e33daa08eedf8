#!/usr/bin/env python3
"""Security checks of the spool command against the Ceph RGW of the ceph_rgw
fixture (its AWS_* environment names the endpoint and keys):

- `spool cp -r` and `spool sync` from a bucket whose keys hold "..", empty
  segments, "." and backslashes, or into a folder holding symlinks, never
  write outside the destination folder;
- the secret key and a session token never appear in anything spool prints
  (debug logging on, --json or not, successes and failures) or in any file
  it writes;
- TLS verification is on by default: an HTTPS endpoint with a self-signed
  certificate fails with a message about the certificate, and works with
  --ca-bundle.

  cli_security_test.py --spool PATH --proxy tests/faults/fault_proxy.py
Standard library only (plus the curl and openssl commands).
"""

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

SPOOL = None
PROXY = None
ENDPOINT = os.environ.get("AWS_ENDPOINT_URL", "")
BUCKET = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
ACCESS_KEY = os.environ.get("AWS_ACCESS_KEY_ID", "")
SECRET_KEY = os.environ.get("AWS_SECRET_ACCESS_KEY", "")


def raw_put(key, data):
    """PUTs `key` exactly as written (curl --path-as-is keeps '..' and '//')."""
    result = subprocess.run(
        ["curl", "-s", "--path-as-is", "-o", "/dev/null", "-w", "%{http_code}", "-X", "PUT",
         "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{ACCESS_KEY}:{SECRET_KEY}",
         "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD", "--data-binary", data,
         f"{ENDPOINT}/{BUCKET}/{key}"], capture_output=True, text=True, check=True)
    if result.stdout != "200":
        raise AssertionError(f"PUT {key} answered HTTP {result.stdout}")


def spool(*args, env=None, check=False):
    result = subprocess.run([SPOOL, *args], capture_output=True, text=True, env=env or os.environ.copy(),
                            timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"spool {' '.join(args)} failed ({result.returncode}): {result.stderr}")
    return result


def files_under(folder):
    found = set()
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            found.add(os.path.relpath(os.path.join(root, name), folder))
    return found


class PathTraversalTest(unittest.TestCase):
    def setUp(self):
        self.prefix = f"security-{uuid.uuid4().hex[:12]}"
        self.top = tempfile.mkdtemp(prefix="spool-security-")
        # The destination sits three folders deep so that "../../.." from
        # inside it still lands inside `top`, where the test can see it.
        self.dest = os.path.join(self.top, "a", "b", "dest")
        os.makedirs(self.dest)

    def tearDown(self):
        shutil.rmtree(self.top, ignore_errors=True)
        spool("rm", "-r", f"s3://{BUCKET}/{self.prefix}/")

    def outside(self):
        """Everything under top that is not the destination or its parents."""
        return {p for p in files_under(self.top)
                if p not in ("a", os.path.join("a", "b")) and not p.startswith(os.path.join("a", "b", "dest"))}

    def test_crafted_keys_never_leave_the_destination(self):
        src = f"{self.prefix}/src"
        raw_put(f"{src}/ok/file.txt", "fine")
        raw_put(f"{src}/../escape-1.txt", "evil")
        raw_put(f"{src}/../../escape-2.txt", "evil")
        raw_put(f"{src}/ok/../../../../escape-3.txt", "evil")
        raw_put(f"{src}/ok/../../../../../../../../../tmp/spool-escape-{self.prefix}.txt", "evil")
        raw_put(f"{src}//absolute.txt", "inside")
        raw_put(f"{src}/./dot.txt", "inside")
        raw_put(f"{src}/a%5C..%5C..%5Cbackslash.txt", "literal name")  # a\..\..\backslash.txt
        result = spool("cp", "-r", f"s3://{BUCKET}/{src}/", self.dest + "/")
        self.assertEqual(self.outside(), set(), f"spool cp -r wrote outside {self.dest}: {result.stderr}")
        self.assertFalse(os.path.exists(f"/tmp/spool-escape-{self.prefix}.txt"))
        with open(os.path.join(self.dest, "ok", "file.txt")) as f:
            self.assertEqual(f.read(), "fine")
        # Empty and "." segments are dropped, as paths drop them: "src//absolute.txt"
        # and "src/./dot.txt" land inside, read by their keys as written.
        for name in ("absolute.txt", "dot.txt"):
            with open(os.path.join(self.dest, name)) as f:
                self.assertEqual(f.read(), "inside")
        self.assertNotIn("SignatureDoesNotMatch", result.stderr)
        # The unsafe keys are named in the error, and the run says it failed.
        self.assertNotEqual(result.returncode, 0, "refused keys must make the copy fail")
        self.assertIn("escape-1.txt", result.stderr)
        # On Linux a backslash is part of a file name, not a separator.
        for name in files_under(self.dest):
            self.assertFalse(name.startswith(".."), name)

    def test_sync_with_crafted_keys_never_leaves_the_destination(self):
        src = f"{self.prefix}/src"
        raw_put(f"{src}/ok/file.txt", "fine")
        raw_put(f"{src}/../sync-escape-1.txt", "evil")
        raw_put(f"{src}/ok/../../../../sync-escape-2.txt", "evil")
        raw_put(f"{src}//sync-absolute.txt", "evil")
        result = spool("sync", f"s3://{BUCKET}/{src}/", self.dest + "/")
        self.assertEqual(self.outside(), set(), f"spool sync wrote outside {self.dest}: {result.stderr}")
        # sync refuses the whole run before copying anything.
        self.assertNotEqual(result.returncode, 0, "refused keys must make the sync fail")
        self.assertIn("escape", result.stderr)

    def test_symlinks_in_the_destination_are_not_followed(self):
        src = f"{self.prefix}/src"
        raw_put(f"{src}/model/weights.bin", "weights")
        raw_put(f"{src}/top.bin", "top")
        outside = os.path.join(self.top, "outside")
        os.makedirs(outside)
        os.symlink(outside, os.path.join(self.dest, "model"))
        os.symlink(os.path.join(outside, "top-link"), os.path.join(self.dest, "top.bin"))
        result = spool("cp", "-r", f"s3://{BUCKET}/{src}/", self.dest + "/")
        self.assertEqual(os.listdir(outside), [],
                         f"spool cp -r wrote through a symlink in the destination: {result.stderr}")


class CredentialLeakTest(unittest.TestCase):
    """Runs a full set of commands with debug logging and greps everything."""

    TOKEN = "IQoJb3JpZ2luX2VjEXAMPLEsessionTOKENspoolsecurity0123456789"
    WRONG_SECRET = "wrongsecretkeyspoolsecurity000000000000000"

    def setUp(self):
        self.prefix = f"security-{uuid.uuid4().hex[:12]}"
        self.work = tempfile.mkdtemp(prefix="spool-leak-")
        self.home = os.path.join(self.work, "home")
        os.makedirs(self.home)
        self.outputs = []

    def tearDown(self):
        shutil.rmtree(self.work, ignore_errors=True)
        spool("rm", "-r", f"s3://{BUCKET}/{self.prefix}/")

    def env(self, **extra):
        env = os.environ.copy()
        env.update(SPOOL_LOG="debug", HOME=self.home, TMPDIR=self.work)
        env.update(extra)
        return env

    def run_all(self, env, expect_success):
        local = os.path.join(self.work, "local")
        os.makedirs(os.path.join(local, "tree", "sub"), exist_ok=True)
        with open(os.path.join(local, "small.txt"), "w") as f:
            f.write("hello\n")
        with open(os.path.join(local, "tree", "sub", "x.bin"), "wb") as f:
            f.write(os.urandom(9 << 20))  # multipart
        url = f"s3://{BUCKET}/{self.prefix}"
        commands = [
            ["cp", os.path.join(local, "small.txt"), f"{url}/small.txt"],
            ["cp", "-r", os.path.join(local, "tree"), f"{url}/tree/"],
            ["ls", f"{url}/"], ["ls", "-r", "-l", f"{url}/"], ["--json", "ls", "-r", f"{url}/"],
            ["stat", f"{url}/small.txt"], ["--json", "stat", f"{url}/small.txt"],
            ["cat", f"{url}/small.txt"], ["cat", "--range", "0-2", f"{url}/small.txt"],
            ["cp", f"{url}/small.txt", os.path.join(self.work, "down", "small.txt")],
            ["cp", "-r", f"{url}/tree/", os.path.join(self.work, "down", "tree") + "/"],
            ["stat", f"{url}/missing"], ["--json", "stat", f"{url}/missing"], ["cat", f"{url}/missing"],
            ["ls", f"s3://no-such-bucket-{self.prefix}/"],
            ["rm", f"{url}/small.txt"], ["rm", "-r", f"{url}/tree/"],
        ]
        succeeded = 0
        for args in commands:
            result = spool(*args, env=env)
            self.outputs.append((args, result.stdout + result.stderr))
            succeeded += result.returncode == 0
        if expect_success:
            self.assertGreaterEqual(succeeded, 12, "the commands should mostly work: " +
                                    "\n".join(out for _, out in self.outputs[-5:]))
        return self.outputs

    def assert_nowhere(self, secret, what):
        for args, output in self.outputs:
            self.assertNotIn(secret, output, f"{what} printed by spool {' '.join(args)}")
        for root, _, files in os.walk(self.work):
            for name in files:
                path = os.path.join(root, name)
                if os.path.getsize(path) > 64 << 20:
                    continue
                with open(path, "rb") as f:
                    self.assertNotIn(secret.encode(), f.read(), f"{what} written to {path}")

    def test_secret_key_never_appears(self):
        self.run_all(self.env(), expect_success=True)
        debug_lines = sum(out.count("\n") for _, out in self.outputs)
        self.assertGreater(debug_lines, 20, "debug logging produced nothing to check")
        self.assert_nowhere(SECRET_KEY, "the secret access key")

    def test_wrong_secret_and_session_token_never_appear(self):
        self.run_all(self.env(AWS_SECRET_ACCESS_KEY=self.WRONG_SECRET), expect_success=False)
        self.run_all(self.env(AWS_SESSION_TOKEN=self.TOKEN), expect_success=False)
        self.assert_nowhere(self.WRONG_SECRET, "a (wrong) secret access key")
        self.assert_nowhere(self.TOKEN, "the session token")
        # The failures say what failed, not just that something did.
        failures = [out for args, out in self.outputs if "SignatureDoesNotMatch" in out or "denied" in out.lower()
                    or "InvalidAccessKeyId" in out or "403" in out]
        self.assertTrue(failures, "no command reported the authentication failure")


class TlsTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="spool-tls-")
        state = os.path.join(self.dir, "proxy.json")
        upstream = ENDPOINT.split("://", 1)[1]
        self.proxy = subprocess.Popen(
            [sys.executable, PROXY, "--upstream", upstream, "--state-file", state, "--exit-on-stdin-eof",
             "--tls-dir", self.dir], stdin=subprocess.PIPE)
        deadline = time.time() + 30
        while not os.path.exists(state):
            self.assertIsNone(self.proxy.poll(), "the TLS proxy exited")
            self.assertLess(time.time(), deadline, "the TLS proxy did not start")
            time.sleep(0.05)
        with open(state) as f:
            self.https = f"https://127.0.0.1:{json.load(f)['port']}"
        self.key = f"security-{uuid.uuid4().hex[:12]}/tls.txt"
        raw_put(self.key, "over tls")

    def tearDown(self):
        self.proxy.stdin.close()
        self.proxy.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)
        spool("rm", f"s3://{BUCKET}/{self.key}")

    def test_self_signed_certificate_fails_clearly_by_default(self):
        env = os.environ.copy()
        for name in ("AWS_CA_BUNDLE", "CURL_CA_BUNDLE", "SSL_CERT_FILE"):
            env.pop(name, None)
        result = spool("--endpoint-url", self.https, "cat", f"s3://{BUCKET}/{self.key}", env=env)
        self.assertNotEqual(result.returncode, 0, "a self-signed certificate was accepted")
        self.assertEqual(len(result.stderr.strip().splitlines()), 1, result.stderr)
        self.assertIn("certificate", result.stderr.lower(), result.stderr)
        self.assertIn("127.0.0.1", result.stderr, result.stderr)

    def test_ca_bundle_makes_it_work(self):
        result = spool("--endpoint-url", self.https, "--ca-bundle", os.path.join(self.dir, "cert.pem"),
                       "cat", f"s3://{BUCKET}/{self.key}")
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(result.stdout, "over tls")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--proxy", required=True)
    args, rest = parser.parse_known_args()
    SPOOL, PROXY = args.spool, args.proxy
    if not ENDPOINT or not SECRET_KEY:
        sys.exit("run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL and the keys")
    unittest.main(argv=[sys.argv[0], "-v", *rest])
