#!/usr/bin/env python3
"""Objects that another tool wrote carry no CRC32C of spool's, yet `spool cp`
verifies them against the checksum their server keeps: a byte flipped on the
wire (the fault proxy's flip rule, tests/faults/fault_proxy.py, so the server
never sees it) fails the copy with DataLoss, exit 3, and leaves no file.

  foreign_objects_test.py --spool PATH --proxy PATH --server rgw|moto

rgw: the Ceph RGW of the ceph_rgw fixture (AWS_* environment). The AWS CLI
(Debian's /usr/bin/aws) uploads in one PUT; Ceph RGW 16 keeps no flexible
checksum, so the only one is the single-part ETag, the object's MD5.
moto: moto's S3 server (moto_server beside this Python), started here on a
free loopback port; boto3 uploads with ChecksumAlgorithm="SHA256", which moto
keeps and returns as x-amz-checksum-sha256.
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "faults"))
from fault_proxy_client import FaultProxyProcess  # noqa: E402

SPOOL = PROXY = SERVER = ""
MIB = 1 << 20
FLIP = {"kind": "flip", "method": "GET", "count": 1}


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def on(server):
    """Runs the test only against `server` (--server)."""
    def mark(test):
        test.server = server
        return test
    return mark


class Moto:
    """moto_server on a free loopback port, stopped by close()."""

    def __init__(self, folder):
        self.port = free_port()
        server = os.path.join(os.path.dirname(sys.executable), "moto_server")
        self.log = open(os.path.join(folder, "moto.log"), "wb")
        self.process = subprocess.Popen([server, "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.time() + 60
        while True:
            try:
                urllib.request.urlopen(self.url + "/moto-api/", timeout=5).read()
                return
            except OSError:
                if self.process.poll() is not None or time.time() > deadline:
                    self.close()
                    raise RuntimeError("moto_server did not start")
                time.sleep(0.1)

    def close(self):
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()


class ForeignObjects(unittest.TestCase):
    def setUp(self):
        if getattr(getattr(self, self._testMethodName), "server", SERVER) != SERVER:
            self.skipTest("for the other --server")
        self.dir = tempfile.mkdtemp(prefix="spool-foreign-")
        self.moto = None
        if SERVER == "rgw":
            self.endpoint = os.environ["AWS_ENDPOINT_URL"]
            self.bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
            self.server_env = dict(os.environ)
        else:
            self.moto = Moto(self.dir)
            self.endpoint = self.moto.url
            self.bucket = "spool-foreign"
            self.server_env = {**os.environ, "AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "testing",
                               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1",
                               "AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": "/dev/null",
                               "AWS_SHARED_CREDENTIALS_FILE": "/dev/null"}
        self.proxy = FaultProxyProcess(PROXY, self.endpoint.split("://", 1)[1], self.dir)
        self.env = {**self.server_env, "AWS_ENDPOINT_URL": self.proxy.url}
        self.prefix = f"foreign-{uuid.uuid4().hex[:12]}/"
        self.keys = []

    def tearDown(self):
        for key in self.keys:
            self.spool("rm", self.url(key), check=False)
        self.proxy.close()
        if self.moto:
            self.moto.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, key):
        return f"s3://{self.bucket}/{self.prefix}{key}"

    def spool(self, *args, check=True):
        result = subprocess.run([SPOOL, *args], capture_output=True, text=True, env=self.env, timeout=300)
        if check:
            self.assertEqual(result.returncode, 0, result.stderr)
        return result

    def source(self, name, size, seed):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(random.Random(seed).randbytes(size))
        return path

    def aws(self, *args):
        """The AWS CLI, straight to the server (not through the proxy)."""
        command = ["/usr/bin/aws", "--endpoint-url", self.endpoint, *args]
        result = subprocess.run(command, capture_output=True, text=True, env=self.server_env, timeout=300)
        self.assertEqual(result.returncode, 0, f"{command}: {result.stderr}")

    def left_in(self, folder, name):
        """What a failed download left beside `name`: the file or its temporary."""
        return [entry for entry in os.listdir(folder) if name in entry]

    def check_copy_is_verified(self, key, source, algorithm, source_phrase):
        url = self.url(key)
        out = os.path.join(self.dir, "out")
        os.mkdir(out)
        # Through the proxy, untouched: the copy succeeds, byte for byte.
        target = os.path.join(out, "clean")
        self.spool("cp", url, target, "-q")
        with open(source, "rb") as a, open(target, "rb") as b:
            self.assertTrue(a.read() == b.read(), "the copy differs from the source")

        self.proxy.reset()
        self.proxy.call("POST", "/rules", FLIP)
        target = os.path.join(out, "flipped")
        result = self.spool("cp", url, target, "-q", check=False)
        applied = [entry for entry in self.proxy.log() if entry.get("fault")]
        self.proxy.reset()
        self.assertEqual(len(applied), 1, "the proxy flipped no byte")
        self.assertEqual(result.returncode, 3, f"a flipped byte was not noticed: {result.stderr}")
        self.assertIn(url, result.stderr)
        self.assertIn(f"have {algorithm} ", result.stderr)
        self.assertIn("read it again", result.stderr)
        self.assertEqual(self.left_in(out, "flipped"), [], "the failed download left a file behind")

        # spool cat of the whole object is refused the same way.
        self.proxy.call("POST", "/rules", FLIP)
        result = subprocess.run([SPOOL, "cat", url], capture_output=True, env=self.env, timeout=300)
        self.proxy.reset()
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn(algorithm.encode(), result.stderr)

        # spool stat names the checksum.
        stat = self.spool("stat", url).stdout
        self.assertIn(f"verified by: {source_phrase}", stat)
        info = json.loads(self.spool("stat", "--json", url).stdout)
        self.assertEqual(info["verified_by"]["algorithm"], algorithm.lower().replace("-", ""), info)

    @on("rgw")
    def test_an_aws_cli_single_put_is_verified_by_its_etag(self):
        """The user's case: `aws s3 cp` of a small file (one PUT), read through a flipping proxy."""
        source = self.source("small.bin", 3 * MIB + 5, 1)
        key = "small.bin"
        self.keys.append(key)
        self.aws("s3", "cp", source, self.url(key), "--only-show-errors")
        self.check_copy_is_verified(key, source, "MD5", "md5 (single-part ETag)")

    @on("rgw")
    def test_a_large_single_put_is_verified_after_its_parts_are_written(self):
        """One PUT of 40 MiB (s3api put-object): spool downloads it in parallel parts, then hashes the file."""
        source = self.source("large.bin", 40 * MIB + 3, 2)
        key = "large.bin"
        self.keys.append(key)
        self.aws("s3api", "put-object", "--bucket", self.bucket, "--key", self.prefix + key, "--body", source)
        self.check_copy_is_verified(key, source, "MD5", "md5 (single-part ETag)")

    @on("moto")
    def test_a_full_object_sha256_is_verified(self):
        import boto3  # beside moto in the project's virtual environment

        client = boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                              aws_access_key_id="testing", aws_secret_access_key="testing")
        client.create_bucket(Bucket=self.bucket)
        source = self.source("sha.bin", 2 * MIB + 1, 3)
        key = "sha.bin"
        self.keys.append(key)
        with open(source, "rb") as f:
            client.put_object(Bucket=self.bucket, Key=self.prefix + key, Body=f.read(), ChecksumAlgorithm="SHA256")
        head = client.head_object(Bucket=self.bucket, Key=self.prefix + key, ChecksumMode="ENABLED")
        self.assertIn("ChecksumSHA256", head)
        self.assertNotIn("ChecksumCRC32C", head)
        self.check_copy_is_verified(key, source, "SHA-256", "sha256 (the server's x-amz-checksum-sha256)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    parser.add_argument("--proxy", required=True)
    parser.add_argument("--server", choices=["rgw", "moto"], required=True)
    args, rest = parser.parse_known_args()
    SPOOL, PROXY, SERVER = args.spool, args.proxy, args.server
    if SERVER == "rgw" and not os.environ.get("AWS_ENDPOINT_URL"):
        sys.exit("run through ctest: the ceph_rgw fixture sets AWS_ENDPOINT_URL and the keys")
    unittest.main(argv=[sys.argv[0], *rest])
