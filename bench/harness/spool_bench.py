#!/usr/bin/env python3
"""Runs spool beside the tools users would pick instead, on the same S3 server
in the same run, and writes the table.

Normally started by scripts/bench, which installs the peers, builds spool,
starts the server and sets the environment this program reads:

  SPOOL_BENCH_ENDPOINT, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (the server),
  SPOOL_BENCH_BUCKET (created here if missing), SPOOL_BENCH_BUILD (build dir),
  SPOOL_BENCH_GCS_ENDPOINT (the local GCS server, for the gcs case).

Every case runs each tool alternately (A B C A B C ...): one warm-up round,
then the measured rounds. Each run is one process; its wall time and peak RSS
come from os.wait4. Medians, min-max spread and the ratio spool/peer (speed,
so > 1 means spool is faster) go to bench/results/<timestamp>.json and .md
and bench/results/latest.md (latest-quick.md, latest-<cases>.md for quick or
partial runs).
"""
import argparse
import datetime
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


class Run:
    def __init__(self, seconds, rss_kib, rc, out):
        self.seconds, self.rss_kib, self.rc, self.out = seconds, rss_kib, rc, out


def run_timed(cmd, env, shell=False):
    """Runs cmd; returns wall seconds, peak RSS (KiB) and output (stdout+stderr).

    Peak RSS comes from GNU time, which forks the command itself: a child of
    this (much larger) Python process would inherit its high-water mark.
    """
    if shell:
        cmd = ["bash", "-c", cmd]
    with tempfile.TemporaryFile() as out, tempfile.NamedTemporaryFile(mode="r") as rss:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name, *cmd], env=env, stdout=out,
                              stderr=subprocess.STDOUT)
        seconds = time.monotonic() - start
        out.seek(0)
        text = out.read().decode(errors="replace")
        lines = rss.read().split()
    rss_kib = int(lines[-1]) if lines and lines[-1].isdigit() else 0
    return Run(seconds, rss_kib, proc.returncode, text)


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

    def __init__(self, args):
        self.args = args
        self.build = os.path.abspath(args.build_dir)
        self.spool = os.path.join(self.build, "cli", "spool")
        self.endpoint = os.environ.get("SPOOL_BENCH_ENDPOINT", "http://127.0.0.1:48480")
        self.gcs_endpoint = os.environ.get("SPOOL_BENCH_GCS_ENDPOINT", "")
        self.bucket = os.environ.get("SPOOL_BENCH_BUCKET", "spool-bench")
        self.key = os.environ.get("AWS_ACCESS_KEY_ID", "CEPHTESTACCESSKEY001")
        self.secret = os.environ.get("AWS_SECRET_ACCESS_KEY", "cephtestsecretkey0000000000000000000000001")
        self.work = args.work
        self.part_mib = args.part_mib
        self.streams = args.streams
        self.aws_config = os.path.join(self.work, "aws-config")
        self.s3cmd_config = os.path.join(self.work, "s3cmd.cfg")
        if not args.dry_run:
            self.write_peer_configs()
        base = dict(os.environ)
        base.update(AWS_ACCESS_KEY_ID=self.key, AWS_SECRET_ACCESS_KEY=self.secret, AWS_REGION="us-east-1",
                    AWS_DEFAULT_REGION="us-east-1", AWS_EC2_METADATA_DISABLED="true",
                    AWS_ENDPOINT_URL=self.endpoint)
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
            f.write(f"[default]\nhost_base = {host}\nhost_bucket = {host}\nuse_https = False\n"
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
                      "(uploads), AWS_CA_BUNDLE unset",
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
        return ["rclone", "-q", "--s3-upload-concurrency", str(n), "--s3-chunk-size", f"{self.part_mib}M",
                "--multi-thread-streams", str(n), "--multi-thread-cutoff", f"{self.part_mib}M",
                "--transfers", str(4 * n), "--checkers", str(4 * n), *args]

    def rclone_path(self, key):
        return f"bench:{self.bucket}/{key}"

    def s3cmd_cmd(self, *args):
        return ["s3cmd", "-c", self.s3cmd_config, "--no-progress", *args]

    def curl_base(self):
        return ["curl", "-s", "-f", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user", f"{self.key}:{self.secret}",
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
                    f"{self.nbytes / run.seconds / MiB:8.1f} MiB/s  RSS {run.rss_kib / 1024:7.1f} MiB")
                if r >= warmup:
                    results[tool].append(run)
        rows = {}
        for tool, runs in results.items():
            secs = [x.seconds for x in runs]
            rows[tool] = {"seconds": spread(secs),
                          "mib_per_s": spread([self.nbytes / s / MiB for s in secs]),
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
    flt = f"^BM_(Memcpy/100000|Crc32c/100000|Read/record:100000/gzip:[01]/local:1/|Write/record:100000/gzip:{write}/local:1)"
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
        log(f"  loader round {r + 1}: local {local_rps:.0f} records/s, s3 {s3_rps:.0f} records/s, "
            f"s3 peak RSS {rss:.0f} MiB (budget {budget:.0f} MiB)")
        runs.append((local_rps, s3_rps, rss, budget))
    shutil.rmtree(local, ignore_errors=True)
    return {"records": records, "record_bytes": 102400,
            "local_records_per_s": spread([x[0] for x in runs]), "s3_records_per_s": spread([x[1] for x in runs]),
            "ratio_s3_local": statistics.median(x[1] / x[0] for x in runs),
            "peak_rss_mib": max(x[2] for x in runs), "budget_mib": runs[0][3]}


def async_case(env, args, log):
    binary = os.path.join(env.build, "bench", "checkpoint", "checkpoint_bench")
    work = os.path.join(env.work, "ckpt-bench")
    os.makedirs(work, exist_ok=True)
    size = "128MiB" if args.quick else "512MiB"
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
    size = "256MiB" if args.quick else "2GiB"
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

TRANSFER_GOALS = {"object": {"aws": 1.5, "rclone": 1.2, "curl": 0.9},
                  "small": {"aws": 1.5, "rclone": 1.2},
                  "checkpoint": {"aws": 1.2},
                  # The issue sets no goal for GCS: its rows are ratios only (the server is the
                  # project's Python test server, which bounds every tool).
                  "gcs": {}}


def evaluate(results):
    goals = []
    for row in results.get("transfers", []):
        spool_s = row["tools"]["spool"]["seconds"]["median"]
        row["ratios"] = {}
        for tool, data in row["tools"].items():
            if tool == "spool":
                continue
            ratio = data["seconds"]["median"] / spool_s
            row["ratios"][tool] = ratio
            goal = TRANSFER_GOALS[row["kind"]].get(tool)
            if goal is not None:
                goals.append({"goal": f"{row['case']} {row['direction']}: spool >= {goal}x {tool}",
                              "value": f"{ratio:.2f}x", "met": ratio >= goal})
    rec = results.get("records")
    if rec:
        memcpy = rec.get("Memcpy/100000")
        for name, rate in rec.items():
            if name.startswith("Read/") and "gzip:0" in name:
                goals.append({"goal": f"records {name}: >= 0.5x memcpy ({memcpy:.0f} MiB/s)",
                              "value": f"{rate / memcpy:.2f}x ({rate:.0f} MiB/s)", "met": rate >= 0.5 * memcpy})
    loader = results.get("loader")
    if loader:
        goals.append({"goal": "loader: S3 records/s >= 0.9x local disk", "value": f"{loader['ratio_s3_local']:.2f}x",
                      "met": loader["ratio_s3_local"] >= 0.9})
        limit = loader["budget_mib"] + 64
        goals.append({"goal": f"loader: peak RSS <= budget + 64 MiB ({limit:.0f} MiB)",
                      "value": f"{loader['peak_rss_mib']:.0f} MiB", "met": loader["peak_rss_mib"] <= limit})
    a = results.get("async_checkpoint")
    if a:
        goals.append({"goal": "async checkpoint: blocking <= 0.1x sync Save", "value": f"{a['ratio']:.4f}x",
                      "met": a["ratio"] <= 0.1})
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
             + servers_line(results), "",
             "Versions: " + "; ".join(f"{k} `{m[k]}`" for k in ("spool", "aws", "rclone", "s3cmd", "curl")), "",
             "Transfer cases, tools alternating, each round starting with the next tool (A B C, B C A, ...): "
             f"one object (S3 and GCS) {results['warmup']} warm-up round(s) "
             f"then {results['rounds']} measured; small objects and checkpoint {results['small_warmup']} warm-up "
             f"then {results['small_rounds']} measured. Median MiB/s with min-max over the rounds; ratio = spool speed / peer "
             "speed (> 1: spool faster); peak RSS of the process (for aws/rclone/s3cmd the CLI process itself).", ""]
    if results.get("transfers"):
        lines += ["| case | direction | tool | MiB/s median | min-max | peak RSS MiB | spool/peer |",
                  "|---|---|---|---:|---:|---:|---:|"]
        for row in results["transfers"]:
            for tool, data in row["tools"].items():
                s = data["mib_per_s"]
                ratio = "" if tool == "spool" else f"{row['ratios'][tool]:.2f}x"
                lines.append(f"| {row['case']} | {row['direction']} | {tool} | {s['median']:.1f} | "
                             f"{s['min']:.1f}-{s['max']:.1f} | {data['peak_rss_mib']:.0f} | {ratio} |")
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
    if results.get("async_checkpoint"):
        a = results["async_checkpoint"]
        lines += [f"Async checkpoint ({a['size']}, 20 files, to S3): synchronous Save blocks the loop "
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

ALL_CASES = ("object", "small", "checkpoint", "records", "loader", "async", "ranks", "gcs")


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
    for peer in ("/usr/bin/aws", "rclone", "s3cmd", "curl"):
        print(f"peer {peer}: {shutil.which(peer) or 'missing (scripts/bench installs it)'}")
    print(f"plan: cases {','.join(args.cases)}; {args.rounds} rounds after {args.warmup} warm-up; "
          f"endpoint {env.endpoint}, bucket {env.bucket}, work {env.work}")
    return 1 if failed else 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build-dir", required=True, help="spool build folder (Release)")
    p.add_argument("--quick", action="store_true", help="smaller data, fewer rounds: under 3 minutes")
    p.add_argument("--full", action="store_true",
                   help="the reference run: 1 warm-up and 5 measured rounds of every case (about 35 minutes)")
    p.add_argument("--dry-run", action="store_true", help="parse, print the plan, check the binaries start")
    p.add_argument("--cases", default=",".join(ALL_CASES),
                   help="comma-separated subset of " + ",".join(ALL_CASES))
    p.add_argument("--rounds", type=int, help="measured rounds per case (default 2, full 5, quick 1)")
    p.add_argument("--small-rounds", type=int, help="rounds for the small-object and checkpoint cases")
    p.add_argument("--warmup", type=int, help="warm-up rounds per case (default 1, quick 0)")
    p.add_argument("--small-warmup", type=int, help="warm-up rounds for the small-object and checkpoint cases")
    p.add_argument("--part-mib", type=int, default=16, help="part size given to the peers")
    p.add_argument("--streams", type=int, default=8, help="parallel streams given to the peers")
    p.add_argument("--work", default="/dev/shm/spool-bench", help="data and downloads (tmpfs: measure the network)")
    p.add_argument("--results", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "results"))
    p.add_argument("--note", action="append", default=[], help="a line for the Notes section")
    args = p.parse_args()
    args.cases = args.cases.split(",")
    if args.quick and args.full:
        p.error("--quick and --full: choose one")
    # --full: every case one warm-up round, then 5 measured, tools alternating: about 35 minutes on
    # 2 cores at full size (the 10,000-object case alone moves 1.2 GiB per tool and round at the
    # speed of the slowest peer). The default keeps the full sizes with 2 measured rounds of the
    # one-object cases and 1 of the small-object and checkpoint cases, no warm-up for those: under
    # 20 minutes. --quick also shrinks the data.
    default_rounds, default_small_rounds, default_small_warmup = (5, 5, 1) if args.full else (2, 1, 0)
    if args.quick:
        default_rounds, default_small_rounds, default_small_warmup = (1, 1, 0)
    args.rounds = args.rounds or default_rounds
    args.warmup = (0 if args.quick else 1) if args.warmup is None else args.warmup
    args.small_rounds = args.small_rounds or default_small_rounds
    args.small_warmup = default_small_warmup if args.small_warmup is None else args.small_warmup
    env = Env(args)
    if args.dry_run:
        return dry_run(env, args)

    started = time.monotonic()

    def log(text):
        print(f"[{time.monotonic() - started:6.1f}s] {text}", flush=True)

    results = {"timestamp": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
               "quick": args.quick, "full": args.full, "cases": args.cases, "rounds": args.rounds, "small_rounds": args.small_rounds,
               "warmup": args.warmup, "small_warmup": args.small_warmup, "machine": versions(env),
               "settings": env.settings(), "notes": args.note}
    wanted_transfers = [c for c in args.cases if c in TRANSFER_GOALS]
    if wanted_transfers:
        log("generating data")
        sizes = {"object": (128 * MiB) if args.quick else GiB, "small": 500 if args.quick else 10000,
                 "checkpoint": (128 * MiB) if args.quick else 2 * GiB, "gcs": (64 * MiB) if args.quick else 256 * MiB}
        data = make_data(env, wanted_transfers, sizes)
        log("uploading the download sources")
        upload_sources(env, data)
        results["transfers"] = []
        for kind, case in transfer_cases(env, data):
            log(f"case: {case.name}, {case.direction}")
            one_object = kind in ("object", "gcs")
            rounds, warmup = (args.rounds, args.warmup) if one_object else (args.small_rounds, args.small_warmup)
            rows = case.run(env, rounds, warmup, log)
            results["transfers"].append({"kind": kind, "case": case.name, "direction": case.direction,
                                         "bytes": case.nbytes, "rounds": rounds, "warmup": warmup,
                                         "tools": rows})
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
    save(results, args, started, done=True)
    log(f"done; results in {os.path.normpath(args.results)}")
    return 0


def save(results, args, started, done):
    """Writes the results so far: an interrupted run still leaves the cases it finished."""
    results["elapsed_s"] = round(time.monotonic() - started, 1)
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
