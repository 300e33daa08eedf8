#!/usr/bin/env python3
"""Which downloads are made durable, counted with strace: `spool cp` and
`spool sync` do not fsync what they download unless given --fsync (as the
AWS CLI and rclone do not), and then fsync each file before its rename and
its folder after; `spool ckpt restore` always fsyncs every file it restores
and the folder it swaps in. Local files stand in for the bucket: a local
destination takes the same download path whatever the source.

  durable_download_test.py --spool PATH

Only the standard library and strace (scripts/setup installs it).
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

SPOOL = ""


def fsynced_paths(args, cwd):
    """Runs spool under strace; returns the path of every fsync'd descriptor."""
    with tempfile.NamedTemporaryFile("r", suffix=".strace") as log:
        run = subprocess.run(["strace", "-f", "-y", "-qq", "-e", "trace=fsync,fdatasync", "-o", log.name,
                              SPOOL, "--quiet"] + args, cwd=cwd, capture_output=True, text=True)
        if run.returncode != 0:
            raise AssertionError(f"spool {' '.join(args)} failed: {run.stderr.strip()}")
        # e.g. `1234  fsync(6</tmp/x/.a.bin.spool-tmp-1f2e>) = 0`, or split by another
        # thread into `fsync(6</tmp/...> <unfinished ...>` and a `resumed` line
        return [m.group(1) for m in re.finditer(r"f(?:data)?sync\(\d+<([^>]*)>", log.read())]


class DurableDownloadTest(unittest.TestCase):
    def setUp(self):
        self.root = tempfile.mkdtemp(prefix="spool-durable-")
        self.source = os.path.join(self.root, "source")
        os.makedirs(os.path.join(self.source, "sub"))
        self.files = {"a.bin": os.urandom(3 << 20), "sub/b.bin": os.urandom(1000), "sub/c.bin": b""}
        for name, body in self.files.items():
            with open(os.path.join(self.source, name), "wb") as f:
                f.write(body)

    def tearDown(self):
        shutil.rmtree(self.root)

    def assert_copied(self, folder):
        for name, body in self.files.items():
            with open(os.path.join(folder, name), "rb") as f:
                self.assertEqual(f.read(), body, name)

    def assert_durable(self, synced, folder):
        """Each file fsync'd under its temporary name, then its folder."""
        for name in self.files:
            target = os.path.join(folder, name)
            temporary = [p for p in synced if os.path.dirname(p) == os.path.dirname(target)
                         and os.path.basename(p).startswith("." + os.path.basename(target) + ".spool-tmp-")]
            self.assertEqual(len(temporary), 1, f"{name} was not fsync'd once before its rename: {synced}")
            self.assertIn(os.path.dirname(target), synced, f"the folder of {name} was not fsync'd: {synced}")

    def test_cp_is_not_durable_by_default(self):
        out = os.path.join(self.root, "out")
        self.assertEqual(fsynced_paths(["cp", "-r", self.source + "/", out + "/"], self.root), [])
        self.assert_copied(out)

    def test_cp_fsync_makes_every_file_and_folder_durable(self):
        out = os.path.join(self.root, "out")
        self.assert_durable(fsynced_paths(["cp", "-r", "--fsync", self.source + "/", out + "/"], self.root), out)
        self.assert_copied(out)
        one = os.path.join(self.root, "one.bin")
        synced = fsynced_paths(["cp", "--fsync", os.path.join(self.source, "a.bin"), "one.bin"], self.root)
        self.assertIn(self.root, synced, "a relative destination's folder was not fsync'd")

    def test_sync_fsync(self):
        out = os.path.join(self.root, "out")
        self.assertEqual(fsynced_paths(["sync", self.source, out], self.root), [])
        shutil.rmtree(out)
        self.assert_durable(fsynced_paths(["sync", "--fsync", self.source, out], self.root), out)
        self.assert_copied(out)

    def test_ckpt_restore_is_always_durable(self):
        store = os.path.join(self.root, "ckpt")
        subprocess.run([SPOOL, "--quiet", "ckpt", "save", "--step", "7", store, self.source], check=True)
        restored = os.path.join(self.root, "restored")
        synced = fsynced_paths(["ckpt", "restore", store, restored], self.root)
        self.assert_copied(restored)
        for name in self.files:
            self.assertTrue(any(os.path.basename(p).startswith("." + os.path.basename(name) + ".spool-tmp-")
                                for p in synced), f"{name} was not fsync'd: {synced}")
        self.assertIn(self.root, synced, "the swap of the restored folder into place was not fsync'd")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--spool", required=True)
    args, rest = parser.parse_known_args()
    SPOOL = os.path.abspath(args.spool)
    if shutil.which("strace") is None:
        sys.exit("durable_download_test.py needs strace (scripts/setup installs it)")
    unittest.main(argv=[sys.argv[0]] + rest)
