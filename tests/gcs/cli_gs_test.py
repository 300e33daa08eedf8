#!/usr/bin/env python3
"""`spool ls/stat/cat/cp/rm` on gs:// URLs, pointed at the local GCS server
with STORAGE_EMULATOR_HOST only (as a user would point it at an emulator).

  cli_gs_test.py SPOOL_BINARY      (SPOOL_GCS_SERVER_DIR names the fixture's folder)
"""

import json
import os
import subprocess
import sys
import tempfile
import unittest
import urllib.request

SPOOL = sys.argv.pop(1) if len(sys.argv) > 1 else "spool"


def server_port():
    with open(os.path.join(os.environ["SPOOL_GCS_SERVER_DIR"], "port")) as f:
        return int(f.read())


class SpoolOnGcs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.endpoint = f"http://127.0.0.1:{server_port()}"
        cls.env = dict(os.environ, STORAGE_EMULATOR_HOST=f"127.0.0.1:{server_port()}")
        for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST"):
            cls.env.pop(name, None)
        cls.bucket = f"cli-{os.getpid()}"
        request = urllib.request.Request(f"{cls.endpoint}/storage/v1/b?project=p", method="POST",
                                         data=json.dumps({"name": cls.bucket}).encode())
        urllib.request.urlopen(request).read()

    def spool(self, *args, check=True):
        result = subprocess.run([SPOOL, *args], env=self.env, capture_output=True, timeout=300)
        if check:
            self.assertEqual(result.returncode, 0, result.stderr.decode())
        return result

    def test_objects_round_trip(self):
        url = f"gs://{self.bucket}"
        with tempfile.TemporaryDirectory() as tmp:
            small, big = os.path.join(tmp, "small.txt"), os.path.join(tmp, "big.bin")
            with open(small, "w") as f:
                f.write("hello from spool\n")
            with open(big, "wb") as f:
                f.write(os.urandom(20 * 1024 * 1024 + 17))  # a resumable upload
            self.spool("cp", small, f"{url}/docs/small.txt")
            self.spool("cp", big, f"{url}/data/big.bin")

            listing = self.spool("ls", f"{url}/").stdout.decode().split()
            self.assertEqual(sorted(listing), [f"{url}/data/", f"{url}/docs/"])
            recursive = self.spool("ls", "-r", f"{url}/").stdout.decode().split()
            self.assertEqual(sorted(recursive), [f"{url}/data/big.bin", f"{url}/docs/small.txt"])

            stat = self.spool("stat", f"{url}/data/big.bin").stdout.decode()
            self.assertIn(str(20 * 1024 * 1024 + 17), stat)
            self.assertIn("crc32c", stat)
            self.assertEqual(self.spool("cat", f"{url}/docs/small.txt").stdout, b"hello from spool\n")

            copy = os.path.join(tmp, "copy.bin")
            self.spool("cp", f"{url}/data/big.bin", copy)
            with open(big, "rb") as a, open(copy, "rb") as b:
                self.assertTrue(a.read() == b.read())

            self.spool("rm", f"{url}/docs/small.txt")
            missing = self.spool("stat", f"{url}/docs/small.txt", check=False)
            self.assertNotEqual(missing.returncode, 0)
            self.assertIn(b"gs://", missing.stderr)
            self.assertIn(b"notFound", missing.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
