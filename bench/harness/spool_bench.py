#!/usr/bin/env python3
"""Runs spool beside the tools users would pick instead, on the same S3 server
in the same run, and writes the table.

Normally started by scripts/bench, which installs the peers, builds spool,
starts the server and sets the environment this program reads:

  SPOOL_BENCH_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (the server),
  SPOOL_BENCH_BUCKET (created here if missing), SPOOL_BENCH_BUILD (build dir),
  SPOOL_BENCH_GCS_ENDPOINT (the local GCS server, for the gcs case),
  SPOOL_BENCH_TLS_ENDPOINT and SPOOL_BENCH_CA (the same S3 server behind a TLS
  terminator, and the certificate to trust: the S3 transfer cases then run
  over HTTP and over HTTPS).

Every case runs each tool alternately (A B C A B C ...): one warm-up round,
then the measured rounds. Each run is one process; its wall time, peak RSS
and client CPU (user+sys of the process and its children) come from GNU
time. Medians, min-max spread and the ratio spool/peer (speed,
so > 1 means spool is faster) go to bench/results/<timestamp>.json and .md
and bench/results/latest.md (latest-quick.md, latest-<cases>.md for quick or
partial runs).
"""
import argparse
import datetime
import importlib.util
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

MiB = 1 << 20
GiB = 1 << 30


# ---------------------------------------------------------------- running


def on_tmpfs(path):
    """Whether `path` (or the folder it will be made in) lies on a tmpfs, by the longest mount point above it."""
    path = os.path.realpath(path)
    best, fstype = "", ""
    with open("/proc/mounts") as mounts:
        for line in mounts:
            point, kind = line.split()[1:3]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                best, fstype = point, kind
    return fstype == "tmpfs"


class Run:
    def __init__(self, seconds, rss_kib, cpu_seconds, rc, out):
        self.seconds, self.rss_kib, self.cpu_seconds, self.rc, self.out = seconds, rss_kib, cpu_seconds, rc, out


def run_timed(cmd, env, shell=False):
    """Runs cmd; returns wall seconds, peak RSS (KiB), CPU seconds and output
    (stdout+stderr).

    Peak RSS and CPU come from GNU time, which forks the command itself: a
    child of this (much larger) Python process would inherit its high-water
    mark. CPU is user+sys of the command and every child it waited for (the
    parallel curls of a ranged download, the AWS CLI's interpreter).
    """
    if shell:
        cmd = ["bash", "-c", cmd]
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile(mode="r") as rss:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o", rss.name, *cmd], env=env, stdout=out,
                              stderr=subprocess.STDOUT)
        seconds = time.monotonic() - start
        out.seek(0)
        text = out.read().decode(errors="replace")
        fields = rss.read().split()
    # The last line is ours; a command killed by a signal gets a line before it.
    try:
        rss_kib, cpu = int(fields[-3]), float(fields[-2]) + float(fields[-1])
    except (IndexError, ValueError):
        rss_kib, cpu = 0, 0.0
    return Run(seconds, rss_kib, cpu, proc.returncode, text)


def run_checked(cmd, env, what, shell=False):
    r = run_timed(cmd, env, shell)
    if r.rc != 0:
        sys.exit(f"bench: {what} failed (exit {r.rc}): {r.out.strip()[-2000:]}")
    return r


def spread(values):
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


# ---------------------------------------------------------------- tools


class Env:
    """The server, the binaries and each peer's tuning."""

    def __init__(self, args, endpoint=None, ca=None):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.spool = os.path.join(self.build, "cli", "spool")
        self.endpoint = endpoint or os.environ.get("SPOOL_BENCH_ENDPOINT", "http://127.0.0.1:48480")
        self.scheme = self.endpoint.split("://", 1)[0]
        self.ca = ca  # the certificate an https endpoint presents, trusted by every tool
        self.tls_endpoint = os.environ.get("SPOOL_BENCH_TLS_ENDPOINT", "")
        self.gcs_endpoint = os.environ.get("SPOOL_BENCH_GCS_ENDPOINT", "")
        self.bucket = os.environ.get("SPOOL_BENCH_BUCKET", "spool-bench")
        self.key = os.environ.get("AWS_ACCESS_KEY_ID", "CEPHTESTACCESSKEY001")
        self.secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "cephtestsecretkey0000000000000000000000001")
        self.work = args.work
        self.settle = (0 if on_tmpfs(args.work) else 2) if args.settle is None else args.settle
        self.part_mib = args.part_mib
        self.streams = args.streams
        self.aws_config = os.path.join(self.work, "aws-config")
        self.s3cmd_config = os.path.join(self.work, f"s3cmd-{self.scheme}.cfg")
        if not args.dry_run:
            self.write_peer_configs()
        base = dict(os.environ)
        base.update(AWS_ACCESS_KEY_ID=self.key, AWS_SECRET_ACCESS_KEY=self.secret, AWS_REGION="us-east-1",
                    AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                    AWS_ENDPOINT_URL=self.endpoint)
        base.pop("AWS_CA_BUNDLE", None)
        if ca:
            base["AWS_CA_BUNDLE"] = ca  # spool and the AWS CLI both read it
        if self.gcs_endpoint:
            # An emulator endpoint: spool talks to it anonymously, as Google's libraries do.
            base["STORAGE_EMULATOR_HOST"] = self.gcs_endpoint
        self.env = base
        self.aws_env = dict(base, AWS_CONFIG_FILE=self.aws_config, AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        self.rclone_env = {k: v for k, v in base.items() if k != "AWS_CA_BUNDLE"}
        self.rclone_env.update(RCLONE_CONFIG_BENCH_TYPE="s3", RCLONE_CONFIG_BENCH_PROVIDER="Ceph",
                               RCLONE_CONFIG_BENCH_ENV_AUTH="false", RCLONE_CONFIG_BENCH_ACCESS_KEY_ID=self.key,
                               RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY=self.secret,
                               RCLONE_CONFIG_BENCH_ENDPOINT=self.endpoint, RCLONE_CONFIG_BENCH_REGION="us-east-1",
                               RCLONE_CONFIG="/dev/null", RCLONE_CONFIG_GBENCH_TYPE="google cloud storage",
                               RCLONE_CONFIG_GBENCH_ANONYMOUS="true",
                               RCLONE_CONFIG_GBENCH_ENDPOINT=f"{self.gcs_endpoint}/storage/v1/")

    def over_tls(self):
        """The same server and tools through the TLS endpoint, or None when there is none."""
        if not self.tls_endpoint:
            return None
        return Env(self.args, self.tls_endpoint, os.environ["SPOOL_BENCH_CA"])

    def write_peer_configs(self):
        """The AWS CLI and s3cmd read their tuning from files: temporary ones in the work folder."""
        os.makedirs(self.work, exist_ok=True)
        with open(self.aws_config, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n"
                    f"    max_concurrent_requests = {2 * self.streams}\n"
                    f"    multipart_chunksize = {self.part_mib}MB\n"
                    f"    multipart_threshold = {self.part_mib}MB\n"
                    "    max_queue_size = 10000\n")
        host = self.endpoint.split("://", 1)[1]
        with open(self.s3cmd_config, "w") as f:
            # No keys in the file: s3cmd takes them from AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY.
            tls = f"use_https = True\nca_certs_file = {self.ca}\n" if self.ca else "use_https = False\n"
            f.write(f"[default]\nhost_base = {host}\nhost_bucket = {host}\n{tls}"
                    f"bucket_location = us-east-1\nmultipart_chunk_size_mb = {self.part_mib}\n"
                    "signature_v2 = False\nprogress_meter = False\n")

    def s3(self, key):
        return f"s3://{self.bucket}/{key}"

    def gs(self, key):
        return f"gs://{self.bucket}/{key}"

    # Each peer with its documented tuning; the settings are recorded in the results.
    def settings(self):
        return {
            "spool": "defaults (no tuning flags); SPOOL_THREADS / SPOOL_MEMORY_BUDGET unset",
            "aws": f"AWS CLI: max_concurrent_requests={2 * self.streams}, multipart_chunksize={self.part_mib}MB, "
                   f"multipart_threshold={self.part_mib}MB, max_queue_size=10000",
            "rclone": f"--s3-upload-concurrency {self.streams} --s3-chunk-size {self.part_mib}M "
                      f"--multi-thread-streams {self.streams} --multi-thread-cutoff {self.part_mib}M "
                      f"--transfers {4 * self.streams} --checkers {4 * self.streams} --no-check-dest "
                      "(uploads), AWS_CA_BUNDLE unset; over HTTPS --ca-cert with the run's certificate",
            "s3cmd": f"multipart_chunk_size_mb={self.part_mib} (s3cmd moves one part at a time)",
            "curl": f"upload: one PUT (no multipart); download: {self.streams} parallel ranged GETs into "
                    "separate files (no assembly): the server's ceiling; on GCS one uploadType=media POST "
                    "and the same ranged GETs of alt=media",
            "rclone (GCS)": "anonymous against the local endpoint; rclone 1.60's GCS backend has no chunk or "
                            f"upload-concurrency option (one resumable session); downloads --multi-thread-streams "
                            f"{self.streams}",
        }

    def spool_cmd(self, *args):
        return [self.spool, "--endpoint-url", self.endpoint, "--path-style", "-q", *args]

    def spool_gcs_cmd(self, *args):
        """gs:// commands: --endpoint-url would apply to them too; STORAGE_EMULATOR_HOST names the server."""
        return [self.spool, "-q", *args]

    def aws_cmd(self, *args):
        return ["/usr/bin/aws", "--endpoint-url", self.endpoint, "--only-show-errors", "s3", *args]

    def rclone_cmd(self, *args):
        n = self.streams
        tls = ["--ca-cert", self.ca] if self.ca else []
        return ["rclone", "-q", *tls, "--s3-upload-concurrency", str(n), "--s3-chunk-size", f"{self.part_mib}M",
                "--multi-thread-streams", str(n), "--multi-thread-cutoff", f"{self.part_mib}M",
                "--transfers", str(4 * n), "--checkers", str(4 * n), *args]

    def rclone_path(self, key):
        return f"bench:{self.bucket}/{key}"

    def s3cmd_cmd(self, *args):
        return ["s3cmd", "-c", self.s3cmd_config, "--no-progress", *args]

    def curl_base(self):
        tls = ["--cacert", self.ca] if self.ca else []
        return ["curl", "-s", "-f", *tls, "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{self.key}:{self.secret}",
                "-H", "x-amz-content-sha256: UNSIGNED-PAYLOAD"]

    def curl_put(self, path, key):
        return self.curl_base() + ["-T", path, "-o", "/dev/null", f"{self.endpoint}/{self.bucket}/{key}"]

    def curl_ranged_get(self, key, size, out_dir):
        return self.ranged_gets(self.curl_base(), f"{self.endpoint}/{self.bucket}/{key}", size, out_dir)

    # GCS: the JSON API's simple upload and media download, anonymous like the emulator.
    def curl_gcs_put(self, path, key):
        name = urllib.parse.quote(key, safe="")
        return ["curl", "-s", "-f", "-X", "POST", "-T", path, "-H", "Content-Type: application/octet-stream",
                "-o", "/dev/null", f"{self.gcs_endpoint}/upload/storage/v1/b/{self.bucket}/o?uploadType=media&name={name}"]

    def curl_gcs_ranged_get(self, key, size, out_dir):
        url = f"{self.gcs_endpoint}/storage/v1/b/{self.bucket}/o/{urllib.parse.quote(key, safe='')}?alt=media"
        return self.ranged_gets(["curl", "-s", "-f"], url, size, out_dir)

    def ranged_gets(self, curl, url, size, out_dir):
        """A bash line: `streams` ranged GETs of url in parallel, each into its own file."""
        n = self.streams
        step = (size + n - 1) // n
        base = " ".join(f"'{a}'" for a in curl)
        jobs = []
        for i in range(n):
            first, last = i * step, min(size, (i + 1) * step) - 1
            jobs.append(f"{base} -r {first}-{last} -o {out_dir}/part{i} '{url}' & pids+=($!);")
        return " ".join(jobs) + ' for p in "${pids[@]}"; do wait "$p" || exit 1; done'

    def rm_prefix(self, key):
        r = run_timed(self.spool_cmd("rm", "-r", self.s3(key)), self.env)
        if r.rc != 0 and "no such object" not in r.out:
            sys.exit(f"bench: removing {key} failed (exit {r.rc}): {r.out.strip()[-2000:]}")


def versions(env):
    def first_line(cmd):
        try:
            r = subprocess.run(cmd, env=env.rclone_env, capture_output=True, text=True, timeout=60)
            return (r.stdout or r.stderr).strip().splitlines()[0]
        except (OSError, IndexError, subprocess.TimeoutExpired) as e:
            return f"unavailable ({e.__class__.__name__})"
    cpu = "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    ceph = first_line(["radosgw", "--version"])
    return {
        "cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
        "memory_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GiB, 1),
        "spool": first_line([env.spool, "--version"]),
        "aws": first_line(["/usr/bin/aws", "--version"]),
        "rclone": first_line(["rclone", "version"]),
        "s3cmd": first_line(["s3cmd", "--version"]),
        "curl": first_line(["curl", "--version"]),
        "server": f"Ceph RGW ({ceph}), bluestore OSD on a sparse file, same machine",
        "gcs_server": "the project's GCS test server (tests/gcs/server/gcs_server.py, Python, in memory), "
                      "same machine",
    }


# ---------------------------------------------------------------- data


def random_file(path, size):
    with open(path, "wb") as f:
        left = size
        while left:
            chunk = os.urandom(min(left, 16 * MiB))
            f.write(chunk)
            left -= len(chunk)


def make_data(env, kinds, sizes):
    """The local data of the transfer cases in `kinds`, made once per work folder.

    Returns {kind: path}: one file (object, gcs) or a folder (small, checkpoint).
    """
    data = os.path.join(env.work, "data")
    os.makedirs(data, exist_ok=True)
    paths = {}
    for kind in ("object", "gcs"):
        if kind in kinds:
            path = paths[kind] = os.path.join(data, f"big-{sizes[kind]}.bin")
            if not os.path.exists(path) or os.path.getsize(path) != sizes[kind]:
                random_file(path, sizes[kind])
    if "small" in kinds:
        small = paths["small"] = os.path.join(data, f"small-{sizes['small']}")
        if not os.path.isdir(small):
            tmp = small + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            for i in range(sizes["small"]):
                d = os.path.join(tmp, f"d{i // 100:03d}")
                if i % 100 == 0:
                    os.makedirs(d)
                with open(os.path.join(d, f"f{i:05d}.bin"), "wb") as f:
                    f.write(os.urandom(64 * 1024))
            os.rename(tmp, small)
    if "checkpoint" in kinds:
        ckpt = paths["checkpoint"] = os.path.join(data, f"ckpt-{sizes['checkpoint']}")
        if not os.path.isdir(ckpt):
            # Mixed sizes like a sharded model checkpoint: 4 large shards, 16 small files.
            tmp = ckpt + ".tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            files = 20
            weights = [8.0 + i if i < 4 else 1.0 / (1 + i) for i in range(files)]
            total = sum(weights)
            for i, w in enumerate(weights):
                random_file(os.path.join(tmp, f"shard-{i:02d}.bin"), int(sizes["checkpoint"] * w / total))
            os.rename(tmp, ckpt)
    return paths


def tree_bytes(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, files in os.walk(path) for f in files)


# ---------------------------------------------------------------- cases


class Case:
    """One row group: several tools doing the same transfer, alternately."""

    def __init__(self, name, direction, nbytes, tools, expect_bytes=None):
        self.name, self.direction, self.nbytes, self.tools = name, direction, nbytes, tools
        self.expect_bytes = expect_bytes  # for downloads: bytes that must arrive

    def run(self, env, rounds, warmup, log):
        results = {tool: [] for tool, _ in self.tools}
        for r in range(warmup + rounds):
            # Each round starts with the next tool, so that none always runs first after another
            # case's writes (the server's garbage collection and flushes land on whoever is first).
            order = self.tools[r % len(self.tools):] + self.tools[:r % len(self.tools)]
            for tool, step in order:
                prepare, cmd, out_dir, shell = step()
                if prepare:
                    prepare()
                if out_dir:
                    shutil.rmtree(out_dir, ignore_errors=True)
                    os.makedirs(out_dir)
                if env.settle:  # on a disk: the previous run's dirty pages written back, not charged to this one
                    os.sync()
                    time.sleep(env.settle)
                run = run_timed(cmd, env.rclone_env if tool == "rclone" else
                                env.aws_env if tool == "aws" else env.env, shell=shell)
                if run.rc != 0:
                    sys.exit(f"bench: {self.name} {self.direction} with {tool} failed (exit {run.rc}):\n"
                             f"{run.out.strip()[-3000:]}")
                if out_dir and self.expect_bytes is not None:
                    got = tree_bytes(out_dir)
                    if got < self.expect_bytes:
                        sys.exit(f"bench: {self.name} {self.direction} with {tool}: {got} bytes arrived, "
                                 f"expected {self.expect_bytes}")
                if out_dir:
                    shutil.rmtree(out_dir, ignore_errors=True)
                label = "warm-up" if r < warmup else f"round {r - warmup + 1}"
                log(f"  {self.name} {self.direction:8} {tool:7} {label:8} {run.seconds:7.2f} s "
                    f"{self.nbytes / run.seconds / MiB:8.1f} MiB/s  CPU {run.cpu_seconds:6.2f} s  "
                    f"RSS {run.rss_kib / 1024:7.1f} MiB")
                if r >= warmup:
                    results[tool].append(run)
        rows = {}
        for tool, runs in results.items():
            secs = [x.seconds for x in runs]
            cpu = [x.cpu_seconds for x in runs]
            rows[tool] = {"seconds": spread(secs),
                          "mib_per_s": spread([self.nbytes / s / MiB for s in secs]),
                          "cpu_s": spread(cpu),
                          "cpu_s_per_gib": spread([c / (self.nbytes / GiB) for c in cpu]),
                          "peak_rss_mib": max(x.rss_kib for x in runs) / 1024}
        return rows


def transfer_cases(env, data):
    """[(kind, Case)] for each transfer kind in `data` (see make_data), in the issue's order."""
    out = os.path.join(env.work, "out")

    def fixed(cmd, out_dir=None, prepare=None, shell=False):
        return lambda: (prepare, cmd, out_dir, shell)

    cases = []
    # 1. one large object.
    if "object" in data:
        big = data["object"]
        big_size = os.path.getsize(big)
        up = [("spool", fixed(env.spool_cmd("cp", big, env.s3("up/spool/big.bin")))),
              ("aws", fixed(env.aws_cmd("cp", big, env.s3("up/aws/big.bin")))),
              ("rclone", fixed(env.rclone_cmd("copyto", "--no-check-dest", big,
                                              env.rclone_path("up/rclone/big.bin")))),
              ("s3cmd", fixed(env.s3cmd_cmd("put", big, env.s3("up/s3cmd/big.bin")))),
              ("curl", fixed(env.curl_put(big, "up/curl/big.bin")))]
        down = [("spool", fixed(env.spool_cmd("cp", env.s3("src/big.bin"), f"{out}/big.bin"), out)),
                *([("spool --fsync", fixed(env.spool_cmd("cp", "--fsync", env.s3("src/big.bin"), f"{out}/big.bin"),
                                           out))] if env.settle else []),
                ("aws", fixed(env.aws_cmd("cp", env.s3("src/big.bin"), f"{out}/big.bin"), out)),
                ("rclone", fixed(env.rclone_cmd("copyto", env.rclone_path("src/big.bin"), f"{out}/big.bin"), out)),
                ("s3cmd", fixed(env.s3cmd_cmd("get", "--force", env.s3("src/big.bin"), f"{out}/big.bin"), out)),
                ("curl", fixed(env.curl_ranged_get("src/big.bin", big_size, out), out, shell=True))]
        label = f"1 object of {big_size // MiB} MiB"
        cases.append(("object", Case(label, "upload", big_size, up)))
        cases.append(("object", Case(label, "download", big_size, down, big_size)))

    # 2. many small objects (a directory tree).
    if "small" in data:
        small = data["small"]
        small_bytes, n_small = tree_bytes(small), sum(len(f) for _, _, f in os.walk(small))
        up = [("spool", fixed(env.spool_cmd("cp", "-r", small + "/", env.s3("up/spool/small/")))),
              ("aws", fixed(env.aws_cmd("cp", "--recursive", small, env.s3("up/aws/small/")))),
              ("rclone", fixed(env.rclone_cmd("copy", "--no-check-dest", small,
                                              env.rclone_path("up/rclone/small"))))]
        down = [("spool", fixed(env.spool_cmd("cp", "-r", env.s3("src/small/"), out + "/"), out)),
                ("aws", fixed(env.aws_cmd("cp", "--recursive", env.s3("src/small/"), out), out)),
                ("rclone", fixed(env.rclone_cmd("copy", env.rclone_path("src/small"), out), out))]
        label = f"{n_small} objects of 64 KiB"
        cases.append(("small", Case(label, "upload", small_bytes, up)))
        cases.append(("small", Case(label, "download", small_bytes, down, small_bytes)))

    # 3. a checkpoint folder: spool ckpt save/restore (manifest, CRC32C per file) vs plain copies.
    if "checkpoint" in data:
        ckpt = data["checkpoint"]
        ckpt_bytes = tree_bytes(ckpt)

        def clear(key):
            return lambda: env.rm_prefix(key)
        ckpt_step = iter(range(1, 1 << 30))
        up = [("spool", lambda: (clear("up/spool/ckpt/"), env.spool_cmd("ckpt", "save", env.s3("up/spool/ckpt"),
                                                                        "--step", str(next(ckpt_step)), ckpt),
                                 None, False)),
              ("aws", fixed(env.aws_cmd("cp", "--recursive", ckpt, env.s3("up/aws/ckpt/")), None,
                            clear("up/aws/ckpt/"))),
              ("rclone", fixed(env.rclone_cmd("copy", ckpt, env.rclone_path("up/rclone/ckpt")), None,
                               clear("up/rclone/ckpt/")))]
        restore_dir = os.path.join(env.work, "restore")
        down = [("spool", fixed(env.spool_cmd("ckpt", "restore", env.s3("src/ckpt"), restore_dir), out,
                                lambda: shutil.rmtree(restore_dir, ignore_errors=True))),
                ("aws", fixed(env.aws_cmd("cp", "--recursive", env.s3("src/ckpt/"), out), out)),
                ("rclone", fixed(env.rclone_cmd("copy", env.rclone_path("src/ckpt"), out), out))]
        label = f"checkpoint, {len(os.listdir(ckpt))} files, {ckpt_bytes // MiB} MiB"
        cases.append(("checkpoint", Case(label, "save", ckpt_bytes, up)))
        cases.append(("checkpoint", Case(label, "restore", ckpt_bytes, down)))

    # GCS: one object on the local GCS server; no AWS CLI or s3cmd there, and Debian has no gsutil.
    if "gcs" in data:
        big = data["gcs"]
        size = os.path.getsize(big)
        up = [("spool", fixed(env.spool_gcs_cmd("cp", big, env.gs("up/spool/big.bin")))),
              ("rclone", fixed(env.rclone_cmd("copyto", "--no-check-dest", big, f"gbench:{env.bucket}/up/rclone/big.bin"))),
              ("curl", fixed(env.curl_gcs_put(big, "up/curl/big.bin")))]
        down = [("spool", fixed(env.spool_gcs_cmd("cp", env.gs("src/big.bin"), f"{out}/big.bin"), out)),
                ("rclone", fixed(env.rclone_cmd("copyto", f"gbench:{env.bucket}/src/big.bin", f"{out}/big.bin"), out)),
                ("curl", fixed(env.curl_gcs_ranged_get("src/big.bin", size, out), out, shell=True))]
        label = f"GCS: 1 object of {size // MiB} MiB"
        cases.append(("gcs", Case(label, "upload", size, up)))
        cases.append(("gcs", Case(label, "download", size, down, size)))
    return cases


def upload_sources(env, data):
    """The objects the downloads read, written once by spool (untimed)."""
    if "object" in data:
        run_checked(env.spool_cmd("cp", data["object"], env.s3("src/big.bin")), env.env, "uploading the large object")
    if "small" in data:
        run_checked(env.spool_cmd("cp", "-r", data["small"] + "/", env.s3("src/small/")), env.env,
                    "uploading the small objects")
    if "checkpoint" in data:
        env.rm_prefix("src/ckpt/")  # checkpoints are immutable: a rerun saves step 1 again
        run_checked(env.spool_cmd("ckpt", "save", env.s3("src/ckpt"), "--step", "1", data["checkpoint"]), env.env,
                    "saving the checkpoint")
    if "gcs" in data:
        made = run_timed(env.spool_gcs_cmd("mb", f"gs://{env.bucket}"), env.env)
        if made.rc != 0 and "exists already" not in made.out:
            sys.exit(f"bench: creating gs://{env.bucket} failed (exit {made.rc}): {made.out.strip()[-2000:]}")
        run_checked(env.spool_gcs_cmd("cp", data["gcs"], env.gs("src/big.bin")), env.env, "uploading the GCS object")


def records_case(env, args, log):
    binary = os.path.join(env.build, "bench", "records", "records_bench")
    # GZIP writing runs at deflate's 25-45 MB/s: 1.5 s an iteration, left out of --quick.
    write = "0" if args.quick else "[01]"
    # InflateZlib is the GZIP read's yardstick, Deflater's default level (zlib, TensorFlow's bytes) the fast
    # level's: both per CPU-second. InflateIsal (the decoder the reader uses, alone) shows what is left above it.
    flt = (f"^BM_(Memcpy/100000|Crc32c/100000|Read/record:100000/gzip:[01]/local:1/|Inflate(Zlib|Isal)/100000|"
           f"Write/record:100000/gzip:{write}/local:1|Deflater/100000/-[12])")
    cmd = [binary, f"--benchmark_filter={flt}", "--benchmark_format=json", "--benchmark_out_format=json",
           f"--benchmark_repetitions={args.rounds}", "--benchmark_report_aggregates_only=true",
           f"--benchmark_min_time={0.2 if args.quick else 0.5}"]
    tmpdir = os.path.join(env.work, "records-tmp")
    os.makedirs(tmpdir, exist_ok=True)
    run = run_checked(cmd, dict(env.env, TMPDIR=tmpdir), "records_bench")
    text = run.out[run.out.index("{"):]
    report = json.loads(text[:text.rindex("}") + 1])
    rows = {}
    for b in report["benchmarks"]:
        # One repetition reports the run itself; several report aggregates, of which we take the median.
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        name = b["run_name"].replace("BM_", "").replace("/process_time", "")
        name = name.replace("Deflater/100000/-1", "Deflater/100000/default").replace("Deflater/100000/-2",
                                                                                      "Deflater/100000/fast")
        rows[name] = b["bytes_per_second"] / MiB
    log("  records (MiB/s per CPU-second, median): " + ", ".join(f"{k} {v:.0f}" for k, v in rows.items()))
    return rows


def parse_float(pattern, text, what):
    m = re.search(pattern, text)
    if not m:
        sys.exit(f"bench: no '{what}' in output:\n{text[-3000:]}")
    return float(m.group(1))


def size_mib(text):
    value, unit = text.split()
    return float(value) * {"B": 1 / MiB, "KiB": 1 / 1024, "MiB": 1, "GiB": 1024}[unit]


def loader_case(env, args, log):
    binary = os.path.join(env.build, "bench", "loader", "loader_bench")
    local = os.path.join(env.work, "loader-local")
    records = 256 if args.quick else 4096
    runs = []
    for r in range(1 if args.quick else 2):
        shutil.rmtree(local, ignore_errors=True)
        os.makedirs(local)
        run = run_checked([binary, "--s3", env.s3(f"loader/{r}"), "--local", local, "--records", str(records),
                           "--passes", "1" if args.quick else "3", "--budget", "256MiB"], env.env, "loader_bench")
        local_rps = parse_float(r"\nlocal\s+([\d.]+) records/s", run.out, "local records/s")
        s3_rps = parse_float(r"\ns3\s+([\d.]+) records/s", run.out, "s3 records/s")
        m = re.search(r"\ns3\s+[\d.]+ records/s.*peak RSS ([\d.]+ \w+) \(budget ([\d.]+ \w+)", run.out)
        rss, budget = size_mib(m.group(1)), size_mib(m.group(2))
        # Wall-clock MB/s of the same local shards: plain read() into one reused buffer, one
        # RecordReader thread, the loader (shuffling); and whole-object parallel reads vs the loader on S3.
        plain = parse_float(r"local plain read\(\)[^:]*: ([\d.]+) MB/s", run.out, "plain read MB/s")
        reader = parse_float(r"local one RecordReader thread: ([\d.]+) MB/s", run.out, "RecordReader MB/s")
        loader_local = parse_float(r"local loader: ([\d.]+) MB/s", run.out, "local loader MB/s")
        loader_s3 = parse_float(r"\ns3\s+[\d.]+ records/s\s+([\d.]+) MB/s", run.out, "s3 loader MB/s")
        raw_s3 = parse_float(r"raw whole-object reads.*s3 ([\d.]+) MB/s", run.out, "raw s3 MB/s")
        log(f"  loader round {r + 1}: local {local_rps:.0f} records/s, s3 {s3_rps:.0f} records/s, "
            f"s3 peak RSS {rss:.0f} MiB (budget {budget:.0f} MiB); MB/s: plain read {plain:.0f}, one reader "
            f"{reader:.0f}, loader local {loader_local:.0f}, loader s3 {loader_s3:.0f}, raw s3 {raw_s3:.0f}")
        runs.append({"local_rps": local_rps, "s3_rps": s3_rps, "rss": rss, "budget": budget, "plain": plain,
                     "reader": reader, "loader_local": loader_local, "loader_s3": loader_s3, "raw_s3": raw_s3})
    shutil.rmtree(local, ignore_errors=True)

    def ratio(a, b):
        return spread([x[a] / x[b] for x in runs])
    return {"records": records, "record_bytes": 102400, "rounds": len(runs),
            "local_records_per_s": spread([x["local_rps"] for x in runs]),
            "s3_records_per_s": spread([x["s3_rps"] for x in runs]),
            "ratio_s3_local": statistics.median(x["s3_rps"] / x["local_rps"] for x in runs),
            "mb_per_s": {k: spread([x[k] for x in runs]) for k in ("plain", "reader", "loader_local", "loader_s3",
                                                                    "raw_s3")},
            "reader_vs_plain": ratio("reader", "plain"), "loader_vs_plain": ratio("loader_local", "plain"),
            "loader_s3_vs_raw": ratio("loader_s3", "raw_s3"),
            "peak_rss_mib": max(x["rss"] for x in runs), "budget_mib": runs[0]["budget"]}


def python_case(env, args, log):
    """spool.torch.StreamingDataset vs the C++ loader on the same shards (bench/python/torch_bench.py),
    with the project's virtual environment (.venv/, scripts/setup) and the package of this build."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "torch_bench.py")
    local = os.path.join(env.work, "python-local")
    shutil.rmtree(local, ignore_errors=True)
    os.makedirs(local)
    out = os.path.join(env.work, "python-bench.json")
    python_env = dict(env.env, SPOOL_BENCH_LOCAL=local, PYTHONPATH=os.path.join(env.build, "python"))
    records, rounds, state = (256, 1, 64) if args.quick else (2048, 3, 512) if args.full else (1024, 1, 256)
    venv = os.environ.get("SPOOL_VENV") or os.path.join(os.path.dirname(script), "..", "..", ".venv")
    run_checked([os.path.join(venv, "bin", "python"), script, "--build", env.build, "--s3", env.s3("python"), "--local", local,
                 "--records", str(records), "--rounds", str(rounds), "--state-mib", str(state), "--json", out],
                python_env, "the Python bench")
    shutil.rmtree(local, ignore_errors=True)
    with open(out) as f:
        report = json.load(f)
    report.update(rounds=rounds, state_mib=state)
    log("  python: " + ", ".join(f"{k} {v['median']:.0f} records/s" + (f" ({v['vs_cpp']:.2f}x C++)" if "vs_cpp" in v
                                                                        else "")
                                 for k, v in report["streaming"].items()))
    return report


def _peers_bench():
    """bench/python/peers_bench.py as a module (its top level imports only the standard library)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "peers_bench.py")
    spec = importlib.util.spec_from_file_location("peers_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def peers_args(args):
    """peers_bench.py's sizes for this run: the issue's under --full, fewer rounds and records by default."""
    if args.full:
        return ["--full", "--rounds", "3"]
    if args.quick:
        return ["--rounds", "1", "--records-100k", "200", "--records-1k", "5000", "--state-mib", "64",
                "--tf-records", "10000"]
    return ["--rounds", "1", "--records-100k", "1000", "--records-1k", "20000", "--state-mib", "256",
            "--tf-records", "50000"]


def peers_case(env, args, log):
    """spool's Python package beside s3torchconnector, MosaicML Streaming, WebDataset, boto3, s3fs and
    tf.data (bench/python/peers_bench.py), with the venv and the peers scripts/bench installed into the
    build folder (bench/python/install_peers.sh)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python", "peers_bench.py")
    local = os.path.join(env.work, "peers-local")
    shutil.rmtree(local, ignore_errors=True)
    os.makedirs(local)
    out = os.path.join(env.work, "peers-bench.json")
    peers_env = dict(env.env, S3_ENDPOINT_URL=env.endpoint, SPOOL_CLI=os.path.join(env.build, "cli", "spool"),
                     PYTHONPATH=os.pathsep.join([os.path.join(env.build, "python"),
                                                 os.path.join(env.build, "python-peers")]))
    venv = os.environ.get("SPOOL_VENV") or os.path.join(os.path.dirname(script), "..", "..", ".venv")
    run = run_checked([os.path.join(venv, "bin", "python"), script, "--s3", env.s3("peers"), "--local", local,
                       "--s3fs-site", os.path.join(env.build, "python-s3fs"), "--json", out] + peers_args(args),
                      peers_env, "the Python peers bench")
    for line in run.out.splitlines():  # where the case's time went
        if line.strip().startswith("peers:") and " took " in line:
            log("  " + line.strip())
    shutil.rmtree(local, ignore_errors=True)
    env.rm_prefix("peers/")
    with open(out) as f:
        report = json.load(f)
    for g in report.get("goals", []):
        log(f"  peers: {g['goal']}: {g['value']} ({'met' if g['met'] else 'missed'})")
    return report


def async_case(env, args, log):
    binary = os.path.join(env.build, "bench", "checkpoint", "checkpoint_bench")
    work = os.path.join(env.work, "ckpt-bench")
    os.makedirs(work, exist_ok=True)
    size = "128MiB" if args.quick else "512MiB" if args.full else "256MiB"
    run = run_checked([binary, "--url", env.s3("async-ckpt"), "--size", size, "--files", "20",
                       "--rounds", str(max(args.rounds, 3)), "--work", work], env.env, "checkpoint_bench")
    sync = parse_float(r"synchronous Save blocks\s+([\d.]+) s", run.out, "sync blocking")
    asyn = parse_float(r"SaveAsync blocks\s+([\d.]+) s", run.out, "async blocking")
    log(f"  async checkpoint ({size}): sync Save blocks {sync:.3f} s, SaveAsync blocks {asyn:.4f} s")
    return {"size": size, "sync_blocked_s": sync, "async_blocked_s": asyn, "ratio": asyn / sync}


def ranks_case(env, args, log):
    """One rank saving a checkpoint vs 4 ranks saving a quarter each (ranks_bench)."""
    binary = os.path.join(env.build, "bench", "checkpoint", "ranks_bench")
    work = os.path.join(env.work, "ranks-bench")
    size = "256MiB" if args.quick else "2GiB" if args.full else "1GiB"
    run = run_checked([binary, "--url", env.s3("ranks-ckpt"), "--size", size, "--ranks", "4",
                       "--rounds", str(max(args.rounds, 3)), "--work", work], env.env, "ranks_bench")

    def row(label):
        m = re.search(label + r":\s+committed after\s+([\d.]+) s \(([\d.]+)-([\d.]+)\), loop blocked\s+([\d.]+) s",
                      run.out)
        if not m:
            sys.exit(f"bench: ranks_bench printed no '{label}' row:\n{run.out[-2000:]}")
        return {"commit_s": {"median": float(m.group(1)), "min": float(m.group(2)), "max": float(m.group(3))},
                "blocked_s": float(m.group(4))}
    one, four = row("1 rank"), row("4 ranks")
    log(f"  ranks ({size}): 1 rank commits after {one['commit_s']['median']:.2f} s, "
        f"4 ranks after {four['commit_s']['median']:.2f} s")
    return {"size": size, "one_rank": one, "four_ranks": four,
            "ratio": four["commit_s"]["median"] / one["commit_s"]["median"]}


# ---------------------------------------------------------------- goals and tables

# Speed: spool's speed / the peer's at least this; per (kind, direction, tool), over HTTP and HTTPS alike.
# The second round's goals (1 GiB PUT vs the AWS CLI, GETs vs rclone) and the first round's that still stand.
SPEED_GOALS = {("object", "upload", "aws"): 1.5, ("object", "upload", "rclone"): 1.2,
               ("object", "upload", "curl"): 0.9,
               ("object", "download", "aws"): 1.5, ("object", "download", "rclone"): 1.2,
               ("object", "download", "curl"): 0.9,
               ("small", "upload", "aws"): 1.5, ("small", "upload", "rclone"): 1.2,
               ("small", "download", "aws"): 1.5, ("small", "download", "rclone"): 1.2,
               ("checkpoint", "save", "aws"): 1.2, ("checkpoint", "restore", "aws"): 1.2}
# Client CPU: spool's CPU seconds / the peer's at most this (CPU per GiB; same bytes, so the same ratio).
CPU_GOALS = {("object", "upload", "aws"): 0.4, ("object", "download", "rclone"): 1.0}
# The GCS rows carry no goal: the server is the project's Python test server, which bounds every tool.
TRANSFER_KINDS = ("object", "small", "checkpoint", "gcs")


def evaluate(results):
    goals = []

    def goal(text, value, met):
        goals.append({"goal": text, "value": value, "met": bool(met)})

    for row in results.get("transfers", []):
        spool_row = row["tools"]["spool"]
        row["ratios"], row["cpu_ratios"] = {}, {}
        over = f" over {row.get('scheme', 'http').upper()}"
        for tool, data in row["tools"].items():
            if tool == "spool":
                continue
            ratio = data["seconds"]["median"] / spool_row["seconds"]["median"]
            row["ratios"][tool] = ratio
            key = (row["kind"], row["direction"], tool)
            if key in SPEED_GOALS:
                goal(f"{row['case']} {row['direction']}{over}: spool >= {SPEED_GOALS[key]}x {tool}",
                     f"{ratio:.2f}x", ratio >= SPEED_GOALS[key])
            if "cpu_s" not in data:  # results of runs before client CPU was measured
                continue
            cpu_ratio = spool_row["cpu_s"]["median"] / max(data["cpu_s"]["median"], 1e-9)
            row["cpu_ratios"][tool] = cpu_ratio
            if key in CPU_GOALS:
                goal(f"{row['case']} {row['direction']}{over}: spool's client CPU <= {CPU_GOALS[key]}x {tool}'s",
                     f"{cpu_ratio:.2f}x ({spool_row['cpu_s_per_gib']['median']:.2f} vs "
                     f"{data['cpu_s_per_gib']['median']:.2f} s/GiB)", cpu_ratio <= CPU_GOALS[key])
    rec = results.get("records")
    loader = results.get("loader")
    if loader and "reader_vs_plain" in loader:
        r = loader["reader_vs_plain"]
        goal("records: one RecordReader thread >= 0.3x plain read() of the same page-cached local shards "
             "(wall-clock, 100 KB records)", f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})", r["median"] >= 0.3)
    if rec and "InflateZlib/100000" in rec:
        name = "Read/record:100000/gzip:1/local:1/readahead:1"
        if name in rec:
            ratio = rec[name] / rec["InflateZlib/100000"]
            isal = rec.get("InflateIsal/100000")
            ceiling = (f"; ISA-L's inflate alone {isal / rec['InflateZlib/100000']:.2f}x zlib, the reader "
                       f"{rec[name] / isal:.2f}x of it") if isal else ""
            goal("records: GZIP read >= 2.5x zlib's inflate of the same file (per CPU-second)",
                 f"{ratio:.2f}x ({rec[name]:.0f} vs {rec['InflateZlib/100000']:.0f} MiB/s{ceiling})", ratio >= 2.5)
    if rec and "Deflater/100000/fast" in rec and "Deflater/100000/default" in rec:
        fast, default = rec["Deflater/100000/fast"], rec["Deflater/100000/default"]
        goal("conversion: GZIP writing at the fast level >= 10x the default level's rate per core",
             f"{fast / default:.1f}x ({fast:.0f} vs {default:.0f} MiB/s)", fast >= 10 * default)
    if loader:
        if "loader_vs_plain" in loader:
            r, s3 = loader["loader_vs_plain"], loader["loader_s3_vs_raw"]
            goal("loader: local, shuffling, >= 0.6x plain read() of the same shards (wall-clock)",
                 f"{r['median']:.2f}x ({r['min']:.2f}-{r['max']:.2f})", r["median"] >= 0.6)
            goal("loader: from S3 >= 0.9x raw parallel whole-object reads of the same shards",
                 f"{s3['median']:.2f}x ({s3['min']:.2f}-{s3['max']:.2f})", s3["median"] >= 0.9)
        limit = loader["budget_mib"] + 32
        goal(f"loader: peak RSS <= budget + 32 MiB ({limit:.0f} MiB)", f"{loader['peak_rss_mib']:.0f} MiB",
             loader["peak_rss_mib"] <= limit)
    py = results.get("python")
    if py:
        for name, row in py["streaming"].items():
            if "vs_cpp" in row and "0 workers" in name:
                goal(f"python: {name} >= 0.95x the C++ loader's records/s", f"{row['vs_cpp']:.2f}x",
                     row["vs_cpp"] >= 0.95)
    for g in (results.get("peers") or {}).get("goals", []):
        goal(f"peers: {g['goal']}", g["value"], g["met"])
    a = results.get("async_checkpoint")
    if a:
        goal("async checkpoint: blocking <= 0.1x sync Save", f"{a['ratio']:.4f}x", a["ratio"] <= 0.1)
    if results.get("complete") and not results["quick"] and not results.get("full") and \
            set(results["cases"]) >= set(ALL_CASES):
        minutes = results["elapsed_s"] / 60
        goal("bench: the default run of every case finishes in 20 minutes", f"{minutes:.1f} min", minutes <= 20)
    results["goals"] = goals


def servers_line(results):
    """Which servers the rows ran against; both share the cores with the client."""
    m, kinds = results["machine"], {r["kind"] for r in results.get("transfers", [])}
    parts = []
    if kinds - {"gcs"} or results.get("loader") or results.get("async_checkpoint") or results.get("ranks_checkpoint"):
        parts.append(f"S3 server: {m['server']}.")
    if "gcs" in kinds:
        parts.append(f"GCS rows: {m['gcs_server']}.")
    return " ".join(parts + ["Client and servers share the cores."])


def markdown(results):
    m = results["machine"]
    lines = [f"# spool benchmarks, {results['timestamp']}", "",
             "" if results.get("complete") else "**Incomplete run: only the cases below finished.**\n",
             f"{'Quick run (smaller data, fewer rounds): not the reference figures. ' if results['quick'] else ''}"
             f"{'Default run (fewer rounds; `scripts/bench --full` gives the reference figures). ' if not results['quick'] and not results.get('full') else ''}"
             f"Machine: {m['cpu']}, {m['cores']} cores, {m['memory_gib']} GiB, Linux {m['kernel']}. "
             + servers_line(results) + f" The run took {results['elapsed_s'] / 60:.1f} min.", "",
             "Versions: " + "; ".join(f"{k} `{m[k]}`" for k in ("spool", "aws", "rclone", "s3cmd", "curl")), "",
             "Transfer cases, tools alternating, each round starting with the next tool (A B C, B C A, ...): "
             f"one object (S3 and GCS) {results['warmup']} warm-up round(s) "
             f"then {results['rounds']} measured; small objects and checkpoint {results['small_warmup']} warm-up "
             f"then {results['small_rounds']} measured; over HTTPS no warm-up (the HTTP rounds just warmed the server "
             f"and objects) and at most {results.get('tls_rounds', results['rounds'])} measured. S3 cases over HTTP "
             "to the RGW and over HTTPS through an "
             "nginx TLS terminator in front of it (TLS 1.3, RSA 2048 certificate; nginx's CPU is the server's, not "
             "the client's). Median MiB/s with min-max over the rounds; client CPU = user+sys of the tool's "
             "process and its children per GiB moved, median (min-max); speed ratio = spool speed / peer speed "
             "(> 1: spool faster); CPU ratio = spool's CPU / peer's (< 1: spool spends less); peak RSS of the "
             "process (for aws/rclone/s3cmd the CLI process itself).", ""]
    if results.get("transfers"):
        lines += ["| case | over | direction | tool | rounds | MiB/s median | min-max | client CPU s/GiB | "
                  "peak RSS MiB | spool/peer speed | spool/peer CPU |",
                  "|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|"]
        for row in results["transfers"]:
            for tool, data in row["tools"].items():
                s = data["mib_per_s"]
                ratio = "" if tool == "spool" else f"{row['ratios'][tool]:.2f}x"
                cpu_ratio = f"{row['cpu_ratios'][tool]:.2f}x" if tool in row["cpu_ratios"] else ""
                c = data.get("cpu_s_per_gib")
                cpu = f"{c['median']:.2f} ({c['min']:.2f}-{c['max']:.2f})" if c else ""
                lines.append(f"| {row['case']} | {row.get('scheme', 'http').upper()} | {row['direction']} | {tool} | "
                             f"{s['n']} | {s['median']:.1f} | {s['min']:.1f}-{s['max']:.1f} | {cpu} | "
                             f"{data['peak_rss_mib']:.0f} | {ratio} | {cpu_ratio} |")
        lines.append("")
    if results.get("records"):
        lines += ["Records, 100 KB records, local files, MiB/s of payload per CPU-second (median of "
                  f"{results['rounds']} repetitions):", "", "| benchmark | MiB/s |", "|---|---:|"]
        lines += [f"| {k} | {v:.0f} |" for k, v in results["records"].items()]
        lines.append("")
    if results.get("loader"):
        lo = results["loader"]
        lines += [f"Loader, {lo['records']} records of 100 KB, budget {lo['budget_mib']:.0f} MiB: local "
                  f"{lo['local_records_per_s']['median']:.0f} records/s, S3 {lo['s3_records_per_s']['median']:.0f} "
                  f"records/s (min-max {lo['s3_records_per_s']['min']:.0f}-{lo['s3_records_per_s']['max']:.0f}), "
                  f"peak RSS while reading S3 {lo['peak_rss_mib']:.0f} MiB.", ""]
        if "mb_per_s" in lo:
            names = {"plain": "local: plain read() into one reused 256 KiB buffer",
                     "reader": "local: one RecordReader thread", "loader_local": "local: the loader (shuffling)",
                     "raw_s3": "S3: raw parallel whole-object reads (no loader)", "loader_s3": "S3: the loader"}
            lines += [f"Wall-clock over the same shards, best of 3 passes, median (min-max) of {lo['rounds']} runs:",
                      "", "| reader | MB/s |", "|---|---:|"]
            lines += [f"| {label} | {lo['mb_per_s'][k]['median']:.0f} ({lo['mb_per_s'][k]['min']:.0f}-"
                      f"{lo['mb_per_s'][k]['max']:.0f}) |" for k, label in names.items()]
            lines.append("")
    if results.get("python"):
        py = results["python"]
        lines += [f"Python: {py['records']} records of 100 KB through torch's DataLoader (median records/s of "
                  f"{py['rounds']} rounds, min-max, client CPU s); C++ loader on the same shards (median of as "
                  "many passes, each opening a new loader): local "
                  f"{py['cpp_loader']['local']:.0f}, S3 {py['cpp_loader']['s3']:.0f} records/s.", "",
                  "| case | records/s | min-max | vs C++ loader | client CPU s |", "|---|---:|---:|---:|---:|"]
        for name, r in py["streaming"].items():
            versus = f"{r['vs_cpp']:.2f}x" if "vs_cpp" in r else "-"
            lines.append(f"| {name} | {r['median']:.0f} | {r['min']:.0f}-{r['max']:.0f} | {versus} | "
                         f"{r['cpu_seconds']:.1f} |")
        lines += ["", f"Checkpoint of a {py['state_mib']} MiB state_dict to S3:", "",
                  "| case | MiB/s | min-max | client CPU s |", "|---|---:|---:|---:|"]
        lines += [f"| {name} | {r['median'] / MiB:.0f} | {r['min'] / MiB:.0f}-{r['max'] / MiB:.0f} | "
                  f"{r['cpu_seconds']:.1f} |" for name, r in py["checkpoint"].items()]
        lines.append("")
    if results.get("peers"):
        lines += ["Python peers (bench/python/peers_bench.py; each run its own process, peers alternating; "
                  "CPU = user+sys of the run and the children it waited for):",
                  _peers_bench().markdown(results["peers"]), ""]
    if results.get("async_checkpoint"):
        a = results["async_checkpoint"]
        lines += [f"Async checkpoint ({a['size']}, 20 files, to S3, median of {max(results['rounds'], 3)} rounds): synchronous Save blocks the loop "
                  f"{a['sync_blocked_s']:.3f} s, SaveAsync {a['async_blocked_s']:.4f} s.", ""]
    if results.get("ranks_checkpoint"):
        r = results["ranks_checkpoint"]
        one, four = r["one_rank"], r["four_ranks"]
        lines += [f"Checkpoint of {r['size']} to S3, 1 rank vs 4 ranks of a quarter each (threads of one process, "
                  f"same store): committed after {one['commit_s']['median']:.2f} s "
                  f"({one['commit_s']['min']:.2f}-{one['commit_s']['max']:.2f}) vs "
                  f"{four['commit_s']['median']:.2f} s ({four['commit_s']['min']:.2f}-{four['commit_s']['max']:.2f}), "
                  f"{r['ratio']:.2f}x; the loop is blocked {one['blocked_s']:.4f} s vs {four['blocked_s']:.4f} s "
                  f"(SaveAsync).", ""]
    lines += ["## Goals", ""]
    if results["goals"]:
        lines += ["| goal | measured | met |", "|---|---|---|"]
        lines += [f"| {g['goal']} | {g['value']} | {'yes' if g['met'] else '**no**'} |" for g in results["goals"]]
    else:
        lines.append("No goal applies to the cases of this run.")
    lines += ["", "## Peer settings", ""] + [f"- {k}: {v}" for k, v in results["settings"].items()]
    if results.get("notes"):
        lines += ["", "## Notes", ""] + [f"- {n}" for n in results["notes"]]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- main

ALL_CASES = ("object", "small", "checkpoint", "records", "loader", "async", "ranks", "gcs", "python", "peers")


def dry_run(env, args):
    """Parses, prints the plan and checks that every benchmark binary starts."""
    probes = [([env.spool, "--help"], "cp"),
              ([env.spool, "ckpt", "--help"], "restore"),
              ([os.path.join(env.build, "bench", "records", "records_bench"), "--benchmark_list_tests"], "BM_Read"),
              ([os.path.join(env.build, "bench", "loader", "loader_bench"), "--help"], "usage"),
              # Unknown flags make the benchmark programs print their usage and stop.
              ([os.path.join(env.build, "bench", "checkpoint", "checkpoint_bench"), "--help", "-"], "usage"),
              ([os.path.join(env.build, "bench", "checkpoint", "ranks_bench"), "--help", "-"], "usage")]
    failed = 0
    for cmd, expect in probes:
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            ok = expect in (r.stdout + r.stderr) and r.returncode >= 0
        except (OSError, subprocess.TimeoutExpired) as e:
            ok, r = False, e
        print(f"{'ok  ' if ok else 'FAIL'} {' '.join(cmd)}")
        failed += not ok
    if "peers" in args.cases:
        plan = subprocess.run([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python",
                                                            "peers_bench.py"), "--dry-run"] + peers_args(args),
                              capture_output=True, text=True, timeout=60)
        ok = plan.returncode == 0 and "peers plan: streaming" in plan.stdout
        print(f"{'ok  ' if ok else 'FAIL'} peers_bench.py --dry-run")
        print(plan.stdout.rstrip() or plan.stderr.rstrip())
        failed += not ok
    for peer in ("/usr/bin/aws", "rclone", "s3cmd", "curl"):
        print(f"peer {peer}: {shutil.which(peer) or 'missing (scripts/bench installs it)'}")
    print(f"plan: cases {','.join(args.cases)}; {args.rounds} rounds after {args.warmup} warm-up; "
          f"small objects and checkpoint {args.small_rounds} after {args.small_warmup}; "
          f"over HTTPS at most {args.tls_rounds}, no warm-up; "
          f"endpoint {env.endpoint}, bucket {env.bucket}, work {env.work}"
          + (f" (a disk: sync and {env.settle:g} s before each run)" if env.settle else ""))
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", required=True, help="spool build folder (Release)")
    p.add_argument("--quick", action="store_true", help="smaller data, fewer rounds: under 5 minutes")
    p.add_argument("--full", action="store_true",
                   help="the reference run: full sizes, 5 measured rounds of every case over HTTP (after a warm-up "
                        "for the single objects), 3 over HTTPS (66 minutes on 2 cores on 2026-11-25)")
    p.add_argument("--dry-run", action="store_true", help="parse, print the plan, check the binaries start")
    p.add_argument("--cases", default=",".join(ALL_CASES),
                   help="comma-separated subset of " + ",".join(ALL_CASES))
    p.add_argument("--rounds", type=int, help="measured rounds per case (default 2, full 5, quick 1)")
    p.add_argument("--small-rounds", type=int, help="rounds for the small-object and checkpoint cases")
    p.add_argument("--warmup", type=int, help="warm-up rounds per case (default 1, quick 0)")
    p.add_argument("--small-warmup", type=int, help="warm-up rounds for the small-object and checkpoint cases")
    p.add_argument("--tls-rounds", type=int, help="at most this many measured rounds of each case over HTTPS "
                   "(default: as over HTTP; full 3)")
    p.add_argument("--part-mib", type=int, default=16, help="part size given to the peers")
    p.add_argument("--streams", type=int, default=8, help="parallel streams given to the peers")
    p.add_argument("--work", default="/dev/shm/spool-bench", help="data and downloads (tmpfs: measure the network)")
    p.add_argument("--settle", type=float, help="before each run: sync, then wait this many seconds (default 2 "
                   "when --work is not on tmpfs, 0 on tmpfs); on a disk the 1 GiB download also runs as "
                   "`spool cp --fsync`, a durable download, beside the tools that do not fsync")
    p.add_argument("--results", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
    p.add_argument("--note", action="append", default=[], help="a line for the Notes section")
    args = p.parse_args()
    args.cases = args.cases.split(",")
    if args.quick and args.full:
        p.error("--quick and --full: choose one")
    # --full: 5 measured rounds of every case over HTTP, tools alternating, after one warm-up round for
    # the single objects; 3 over HTTPS (the spread of 3 alternating rounds was enough to separate the
    # tools over HTTPS, and 5 would take the run past two hours: the 10,000-object case alone moves
    # 1.2 GiB per tool and round at the speed of the slowest peer). 66 minutes on 2 cores (2026-11-25).
    # The default: 2 measured rounds of the 1 GiB object, 1 of smaller small-object and checkpoint
    # cases (see the sizes below): about 20 minutes. --quick also shrinks the data.
    # Over HTTPS there is no warm-up round: the same objects and the same server were just warmed by the
    # HTTP rounds, and each round starts every tool as a fresh process anyway.
    default_rounds, default_small_rounds, default_small_warmup = (5, 5, 0) if args.full else (2, 1, 0)
    if args.quick:
        default_rounds, default_small_rounds, default_small_warmup = (1, 1, 0)
    args.rounds = args.rounds or default_rounds
    args.warmup = (0 if args.quick else 1) if args.warmup is None else args.warmup
    args.small_rounds = args.small_rounds or default_small_rounds
    args.small_warmup = default_small_warmup if args.small_warmup is None else args.small_warmup
    args.tls_rounds = args.tls_rounds or (3 if args.full else max(args.rounds, args.small_rounds))
    env = Env(args)
    if args.dry_run:
        return dry_run(env, args)

    started = time.monotonic()

    def log(text):
        print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)

    results = {"timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "quick": args.quick, "full": args.full, "cases": args.cases, "rounds": args.rounds, "small_rounds": args.small_rounds,
               "warmup": args.warmup, "small_warmup": args.small_warmup, "tls_rounds": args.tls_rounds,
               "machine": versions(env),
               "settings": env.settings(), "notes": args.note}
    wanted_transfers = [c for c in args.cases if c in TRANSFER_KINDS]
    if wanted_transfers:
        log("generating data")
        # The default run keeps the 1 GiB object and moves a quarter of --full's small objects and half its
        # checkpoint: every S3 case runs twice (HTTP and HTTPS), and the 10,000 objects alone take the
        # slower peers over a minute and a half a round each way.
        if args.quick:
            sizes = {"object": 128 * MiB, "small": 500, "checkpoint": 128 * MiB, "gcs": 64 * MiB}
        elif args.full:
            sizes = {"object": GiB, "small": 10000, "checkpoint": 2 * GiB, "gcs": 256 * MiB}
        else:
            sizes = {"object": GiB, "small": 2500, "checkpoint": GiB, "gcs": 256 * MiB}
        data = make_data(env, wanted_transfers, sizes)
        log("uploading the download sources")
        upload_sources(env, data)
        results["transfers"] = []
        # The S3 cases over HTTP, then over HTTPS (same server, same objects); GCS over HTTP only.
        tls = env.over_tls()
        s3_data = {k: v for k, v in data.items() if k != "gcs"}
        for over, over_data in [(env, data)] + ([(tls, s3_data)] if tls and s3_data else []):
            for kind, case in transfer_cases(over, over_data):
                log(f"case: {case.name}, {case.direction}, over {over.scheme.upper()}")
                one_object = kind in ("object", "gcs")
                rounds, warmup = (args.rounds, args.warmup) if one_object else (args.small_rounds, args.small_warmup)
                if over.scheme == "https":
                    rounds, warmup = min(rounds, args.tls_rounds), 0
                rows = case.run(over, rounds, warmup, log)
                results["transfers"].append({"kind": kind, "scheme": over.scheme, "case": case.name,
                                             "direction": case.direction, "bytes": case.nbytes, "rounds": rounds,
                                             "warmup": warmup, "tools": rows})
                save(results, args, started, done=False)
        if set(wanted_transfers) - {"gcs"}:
            env.rm_prefix("up/")
    if "records" in args.cases:
        log("case: records")
        results["records"] = records_case(env, args, log)
        save(results, args, started, done=False)
    if "loader" in args.cases:
        log("case: loader")
        results["loader"] = loader_case(env, args, log)
        save(results, args, started, done=False)
    if "async" in args.cases:
        log("case: async checkpoint")
        results["async_checkpoint"] = async_case(env, args, log)
        save(results, args, started, done=False)
    if "ranks" in args.cases:
        log("case: checkpoint by several ranks")
        results["ranks_checkpoint"] = ranks_case(env, args, log)
        save(results, args, started, done=False)
    if "python" in args.cases:
        log("case: python")
        results["python"] = python_case(env, args, log)
        save(results, args, started, done=False)
    if "peers" in args.cases:
        log("case: peers")
        results["peers"] = peers_case(env, args, log)
    save(results, args, started, done=True)
    log(f"done; results in {os.path.normpath(args.results)}")
    return 0


def save(results, args, started, done):
    """Writes the results so far: an interrupted run still leaves the cases it finished."""
    results["elapsed_s"] = round(time.monotonic() - started, 1)
    if os.environ.get("SPOOL_BENCH_STARTED"):
        # scripts/bench's own start (servers included, the one-off build not): what a user waits for.
        results["elapsed_s"] = round(time.time() - float(os.environ["SPOOL_BENCH_STARTED"]), 1)
    results["complete"] = done
    evaluate(results)
    text = markdown(results)
    os.makedirs(args.results, exist_ok=True)
    stamp = results["timestamp"].replace(":", "")
    with open(os.path.join(args.results, f"{stamp}.json"), "w") as f:
        json.dump(results, f, indent=1)
    # latest.md is the newest --full run of every case; default, quick or partial runs get their own.
    variant = (["quick"] if args.quick else [] if args.full else ["default"]) + \
        ([] if set(args.cases) >= set(ALL_CASES) else args.cases)
    for name in (f"{stamp}.md", "-".join(["latest", *variant]) + ".md"):
        with open(os.path.join(args.results, name), "w") as f:
            f.write(text)
    if done:
        print(text)


if __name__ == "__main__":
    sys.exit(main())
