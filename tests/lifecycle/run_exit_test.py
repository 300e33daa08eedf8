#!/usr/bin/env python3
"""Runs exit_harness many times per scenario and fails unless every run
ends with the exit code it was given (see exit_harness.cc for the scenarios).

  run_exit_test.py --harness PATH --store local|s3|gs [--runs 100] [--jobs 2]
                   [--timeout 60] [--scenarios a,b,...]

Stores: local (a temporary folder), s3 (the Ceph RGW of the ceph_rgw fixture:
AWS_* and SPOOL_S3_TEST_BUCKET in the environment), gs (the local GCS server
of the gcs_server fixture: SPOOL_GCS_SERVER_DIR names its folder). The test
works under a folder of its own and deletes it afterwards.

Each run gets its own exit code (100..199), so a run cannot pass by ending
with a fixed code by accident. A run fails when it ends with another code,
dies from a signal, outlives its timeout, or prints a sanitizer report. The
harness itself turns an ending that took seconds (exit gave up waiting for a
stuck task) into exit code 4. After each scenario, no S3 multipart upload may
be left pending under its scratch folder: whether the owner was destroyed or
the process exited, every upload is completed or aborted.
SPOOL_LIFECYCLE_RUNS overrides the default run count. Standard library only.
"""

import argparse
import concurrent.futures
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SCENARIOS = [
    "loader-return",
    "loader-exit",
    "loader-mid-epoch",
    "loader-mid-epoch-exit",
    "save-async-return",
    "save-async-exit",
    "destroy-in-flight",
]

# How long (ms) a run lets its work go on before ending, spread evenly over
# the runs of a scenario so that the ends land in every phase of the work
# (a save's first request, its part uploads, its commit). Others end at once.
DELAY_SPREAD_MS = {
    "loader-mid-epoch": 100,
    "loader-mid-epoch-exit": 100,
    "save-async-return": 400,
    "save-async-exit": 400,
}

# Exit codes of the harness itself (anything else is not its doing).
HARNESS_CODES = {2: "bad arguments", 3: "a scenario step or check failed",
                 4: "ending took too long: exit gave up on a stuck task"}

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "WARNING: ThreadSanitizer",
                   "runtime error:")


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--harness", required=True)
    parser.add_argument("--store", required=True, choices=["local", "s3", "gs"])
    parser.add_argument("--runs", type=int, default=int(os.environ.get("SPOOL_LIFECYCLE_RUNS", "100")))
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--timeout", type=float, default=60, help="seconds one run may take")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    return parser.parse_args()


def test_root(store, unique):
    """The root URL, the environment for the harness, and a local folder to
    remove at the end (local store only)."""
    env = dict(os.environ, SPOOL_LOG="info")  # what was cancelled, for failed runs' stderr
    if store == "local":
        folder = tempfile.mkdtemp(prefix="spool-lifecycle-")
        return os.path.join(folder, "root"), env, folder
    if store == "s3":
        bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
        return f"s3://{bucket}/lifecycle-test/{unique}", env, None
    # The emulator convention: this endpoint and no credentials.
    with open(os.path.join(os.environ["SPOOL_GCS_SERVER_DIR"], "port")) as f:
        port = int(f.read())
    env["STORAGE_EMULATOR_HOST"] = f"http://127.0.0.1:{port}"
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GCE_METADATA_HOST"):
        env.pop(name, None)
    return f"gs://spool-lifecycle-test/lifecycle-test/{unique}", env, None


def describe(returncode):
    if returncode is None:
        return "timed out"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit code {returncode}" + (f" ({HARNESS_CODES[returncode]})" if returncode in HARNESS_CODES else "")


def run_once(harness, scenario, root, env, code, delay_ms, timeout):
    """(outcome or None when the run passed, seconds, stderr, command)."""
    command = [harness, "--scenario", scenario, "--url", root, "--exit-code", str(code), "--delay-ms", str(delay_ms)]
    start = time.monotonic()
    try:
        result = subprocess.run(command, env=env, capture_output=True, text=True, errors="replace", timeout=timeout)
        returncode, stderr = result.returncode, result.stderr
    except subprocess.TimeoutExpired as expired:
        returncode = None
        stderr = expired.stderr.decode(errors="replace") if isinstance(expired.stderr, bytes) else expired.stderr or ""
    except OSError as error:  # e.g. the harness being rebuilt under us
        return f"could not start: {error}", time.monotonic() - start, "", command
    seconds = time.monotonic() - start
    outcome = None
    if returncode != code:
        outcome = describe(returncode)
    elif any(mark in stderr for mark in SANITIZER_MARKS):
        outcome = "sanitizer report"
    return outcome, seconds, stderr, command


def run_scenario(args, scenario, root, env):
    """Runs one scenario args.runs times; returns the failures."""
    durations, failures = [], []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(args.jobs, 1)) as pool:
        spread = DELAY_SPREAD_MS.get(scenario, 0)
        futures = [pool.submit(run_once, args.harness, scenario, root, env, 100 + i % 100, spread * i // args.runs,
                               args.timeout) for i in range(args.runs)]
        for future in futures:
            outcome, seconds, stderr, command = future.result()
            durations.append(seconds)
            if outcome is not None:
                failures.append((outcome, stderr, command))
    passed = args.runs - len(failures)
    print(f"{scenario:24} {passed:4}/{args.runs} passed   mean {sum(durations) / len(durations):.2f} s, "
          f"max {max(durations):.2f} s", flush=True)
    counts = {}
    for outcome, _, _ in failures:
        counts[outcome] = counts.get(outcome, 0) + 1
    for outcome, count in sorted(counts.items(), key=lambda item: -item[1]):
        print(f"    {count:4} x {outcome}")
    for outcome, stderr, command in failures[:2]:  # enough to see why
        print(f"    --- {outcome}: {' '.join(command)}")
        for line in stderr.strip().splitlines()[-25:]:
            print("      " + line)
    return failures


def main():
    args = parse_args()
    scenarios = [name for name in args.scenarios.split(",") if name]
    unique = f"{os.getpid()}-{random.randrange(1 << 30)}"
    root, env, local_folder = test_root(args.store, unique)
    print(f"lifecycle exit test on {root}: {args.runs} runs per scenario, {args.jobs} at a time", flush=True)

    def harness(scenario, timeout, url=root):
        command = [args.harness, "--scenario", scenario, "--url", url, "--exit-code", "0"]
        try:
            return subprocess.run(command, env=env, capture_output=True, text=True, errors="replace", timeout=timeout)
        except OSError as error:
            return subprocess.CompletedProcess(command, 127, "", f"could not start: {error}")

    start = time.monotonic()
    failed = 0
    try:
        setup = harness("setup", 300)
        if setup.returncode != 0:
            print(f"setup failed ({describe(setup.returncode)}):\n{setup.stderr}")
            return 1
        for scenario in scenarios:
            failed += len(run_scenario(args, scenario, root, env))
            # Every upload a run started must have been completed or aborted,
            # by its owner's destructor or at exit (S3 only; OK elsewhere).
            pending = harness("no-pending-uploads", 120, url=f"{root}/scratch/{scenario}")
            if pending.returncode != 0:
                failed += 1
                print(f"    left behind: {pending.stderr.strip()}")
    finally:
        try:
            cleanup = harness("cleanup", 300)
            cleaned = cleanup.returncode == 0
            print(cleanup.stdout.strip() or f"cleanup failed ({describe(cleanup.returncode)}):\n{cleanup.stderr}")
        except subprocess.TimeoutExpired as error:
            cleaned = False
            print(f"cleanup failed: {error}")
        if local_folder:
            shutil.rmtree(local_folder, ignore_errors=True)
    print(f"{failed} failures in {args.runs * len(scenarios)} runs, {time.monotonic() - start:.0f} s")
    return 1 if failed or not cleaned else 0


if __name__ == "__main__":
    sys.exit(main())
