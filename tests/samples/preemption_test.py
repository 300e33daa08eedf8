#!/usr/bin/env python3
"""samples/train_loop preempted with SIGTERM, end to end, on local files or on
the Ceph RGW of the ceph_rgw fixture.

The dataset is the one scripts/demo makes: Debian's copy of the UCI
handwritten-digits table converted by `spool convert` into 8 indexed training
shards and 2 test shards. Then, each run on a checkpoint root of its own:

1. reference: train_loop runs uninterrupted to STEPS steps; its summary holds
   the digest of every record it trained on, in order.
2. commit: the same job with --step-delay-ms, so it is mid-run, gets SIGTERM
   after step SIGNAL_AFTER_STEP. It must exit with 143 within the deadline
   (grace - margin), print that it committed step S (the next step boundary)
   before the deadline, and `spool ckpt list` must show S as the latest
   step. Restarted with the same arguments, it must restore S and finish
   with the reference's step count, record count, record digest and test
   accuracy.
3. miss: the same with a deadline that has passed when the signal arrives
   (grace 1 s, given as SPOOL_PREEMPTION_GRACE_SECONDS as the Kubernetes
   samples do, margin 1 s). It must exit with 143, say that step S was not
   committed and which step stays latest; `spool ckpt list` must agree and
   not show S (nothing half-written becomes a step), and the restart must
   resume from that earlier step and still match the reference.
4. two ranks: ranks 0 and 1 of 2 (RANK/WORLD_SIZE) run side by side, each
   saving its part of every checkpoint. Uninterrupted, `spool ckpt list`
   shows 2 ranks per step. Both get SIGTERM mid-run and exit with 143; the
   latest committed step (the preemption step when both ranks saved the same
   one, else the last periodic one) is one both restarts resume from, and
   each rank finishes with the step count, record count and record digest of
   its own uninterrupted run.
5. one replica restarts alone (what restartPolicy OnFailure does for a
   crashed pod, docs/kubernetes.md): rank 1 of 2 is killed with SIGKILL
   mid-run and started again while rank 0 goes on. Rank 1 must resume its
   own part of the latest committed step, both ranks must finish with exit
   0 and the record digest of their own uninterrupted runs, and the last
   step must be committed by 2 ranks.

  preemption_test.py --train PATH --spool PATH --store local|s3

Standard library only. On s3, everything goes under
s3://$SPOOL_S3_TEST_BUCKET/preemption-test/<random>/ and is deleted at the
end; scratch files go under /tmp. The digits table is the one scikit-learn
ships (found without importing it), in the virtual environment scripts/setup
makes; run this script with that environment's python.
"""

import argparse
import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid


def digits_table():
    """The path of scikit-learn's digits.csv.gz, or None where it is not installed."""
    spec = importlib.util.find_spec("sklearn")
    if spec is None or not spec.submodule_search_locations:
        return None
    return os.path.join(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz")


DIGITS = digits_table()

STEPS = 300
SAVE_EVERY = 50
# The signal comes mid-run, after a periodic checkpoint (step 100) and well
# before the end.
SIGNAL_AFTER_STEP = 120
STEP_DELAY_MS = 20
GRACE = 30
MARGIN = 5
# How long the job may take to reach SIGNAL_AFTER_STEP on a loaded machine.
START_LIMIT = 120.0

# Launcher variables the loader reads its rank from: the test decides them.
RANK_VARIABLES = ("RANK", "WORLD_SIZE", "LOCAL_RANK", "TF_CONFIG", "OMPI_COMM_WORLD_RANK",
                  "OMPI_COMM_WORLD_SIZE", "JOB_COMPLETION_INDEX", "SPOOL_WORLD_SIZE",
                  "SPOOL_PREEMPTION_GRACE_SECONDS")

STEP_LINE = re.compile(r"^step\s+(\d+)/", re.M)
COMMITTED = re.compile(r"^preemption: SIGTERM received, checkpoint step (\d+) committed in ([0-9.]+) s, "
                       r"([0-9.]+) s before the deadline", re.M)
MISSED = re.compile(r"^preemption: SIGTERM received, checkpoint step (\d+) NOT committed after ([0-9.]+) s "
                    r"\(DeadlineExceeded.*\); the latest committed checkpoint stays (step (\d+)|none)", re.M)
RANK_PART = re.compile(r"^preemption: SIGTERM received, rank 1 wrote its part of checkpoint step (\d+) in", re.M)
RESTORED = re.compile(r"^restored checkpoint step (\d+) ", re.M)
RESTORED_RANK = re.compile(r"^restored checkpoint step (\d+) \(rank (\d+) of (\d+),", re.M)


class Failure(Exception):
    pass


def check(condition, message, log=None):
    if not condition:
        if log is not None:
            message += "\n--- output ---\n" + log
        raise Failure(message)


class Job:
    """Paths and commands of one test run."""

    def __init__(self, train, spool, root, scratch):
        self.train, self.spool, self.root, self.scratch = train, spool, root, scratch
        self.env = {k: v for k, v in os.environ.items() if k not in RANK_VARIABLES}

    def spool_run(self, *args):
        done = subprocess.run([self.spool, *args], env=self.env, capture_output=True, text=True, timeout=300)
        check(done.returncode == 0, f"spool {' '.join(args)} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    def make_dataset(self):
        """As scripts/demo does: the first 1497 rows train, the rest test."""
        header = ",".join(f"p{i}" for i in range(64)) + ",label\n"
        rows = subprocess.run(["zcat", DIGITS], capture_output=True, text=True, check=True).stdout.splitlines(True)
        for name, part in (("train", rows[:1497]), ("test", rows[1497:])):
            with open(os.path.join(self.scratch, f"digits-{name}.csv"), "w") as f:
                f.write(header)
                f.writelines(part)
        self.spool_run("convert", os.path.join(self.scratch, "digits-train.csv"), f"{self.root}/digits/train",
                       "--shards", "8", "--index")
        self.spool_run("convert", os.path.join(self.scratch, "digits-test.csv"), f"{self.root}/digits/test",
                       "--shards", "2")

    def args(self, name):
        return [self.train, "--data", f"{self.root}/digits/train.manifest.json",
                "--eval", f"{self.root}/digits/test.manifest.json",
                "--steps", str(STEPS), "--save-every", str(SAVE_EVERY),
                "--checkpoints", f"{self.root}/{name}/ckpt", "--workdir", os.path.join(self.scratch, name)]

    def committed_steps(self, name):
        listed = self.spool_run("ckpt", "list", f"{self.root}/{name}/ckpt")
        return [int(s) for s in re.findall(r"^step\s+(\d+)\s", listed, re.M)]

    def objects(self, name):
        """Every object key under the run's checkpoint root."""
        return self.spool_run("ls", "-r", f"{self.root}/{name}/ckpt/").split()

    def run_to_end(self, name, extra=()):
        """Runs the job to completion; returns (summary dict, output)."""
        summary = os.path.join(self.scratch, f"{name}-summary-{uuid.uuid4().hex[:6]}.txt")
        done = subprocess.run(self.args(name) + ["--summary", summary, "--log-every", "100", *extra],
                              env=self.env, capture_output=True, text=True, timeout=600)
        output = done.stdout + done.stderr
        check(done.returncode == 0, f"{name}: train_loop failed ({done.returncode})", output)
        with open(summary) as f:
            values = dict(line.strip().split("=", 1) for line in f if "=" in line)
        return values, output

    def run_and_signal(self, name, extra=(), env=None):
        """Starts the job slowed down, sends SIGTERM after SIGNAL_AFTER_STEP;
        returns (exit code, seconds from the signal to the exit, output)."""
        log_path = os.path.join(self.scratch, f"{name}.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                self.args(name) + ["--step-delay-ms", str(STEP_DELAY_MS), "--log-every", "10", *extra],
                env={**self.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT)
        try:
            started = time.monotonic()
            while True:
                with open(log_path) as f:
                    steps = [int(s) for s in STEP_LINE.findall(f.read())]
                if steps and steps[-1] >= SIGNAL_AFTER_STEP:
                    break
                if process.poll() is not None or time.monotonic() - started > START_LIMIT:
                    with open(log_path) as f:
                        raise Failure(f"{name}: train_loop did not reach step {SIGNAL_AFTER_STEP} "
                                      f"(exit code {process.poll()})\n--- output ---\n{f.read()}")
                time.sleep(0.02)
            signalled = time.monotonic()
            process.send_signal(signal.SIGTERM)
            code = process.wait(timeout=GRACE + 30)
            elapsed = time.monotonic() - signalled
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
        with open(log_path) as f:
            output = f.read()
        check(steps[-1] < STEPS, f"{name}: the run finished before the signal; slow it down", output)
        return code, elapsed, steps[-1], output


def same_run(name, reference, resumed, output):
    for key in ("steps", "records", "digest", "accuracy"):
        check(resumed.get(key) == reference.get(key),
              f"{name}: the resumed run's {key} is {resumed.get(key)}, the uninterrupted run's {reference.get(key)}",
              output)


def test_commit(job, reference):
    code, elapsed, seen, output = job.run_and_signal("commit", ["--preemption-grace", str(GRACE),
                                                                "--preemption-margin", str(MARGIN)])
    check(code == 143, f"commit: exit code {code}, expected 143 (128 + SIGTERM)", output)
    found = COMMITTED.search(output)
    check(found is not None, "commit: no line saying which step the preemption save committed", output)
    step, took, spare = int(found.group(1)), float(found.group(2)), float(found.group(3))
    # The next step boundary after the signal: past the last step logged
    # before it, and no later than where the job would have ended.
    check(seen < step < STEPS, f"commit: committed step {step}, expected one after step {seen}", output)
    check(elapsed < GRACE - MARGIN, f"commit: exited {elapsed:.1f} s after SIGTERM, the deadline is "
          f"{GRACE - MARGIN} s", output)
    steps = job.committed_steps("commit")
    check(steps and steps[-1] == step, f"commit: `spool ckpt list` shows {steps}, expected {step} latest", output)

    resumed, resumed_output = job.run_to_end("commit")
    restored = RESTORED.search(resumed_output)
    check(restored is not None and int(restored.group(1)) == step,
          f"commit: the restart did not resume from step {step}", resumed_output)
    same_run("commit", reference, resumed, resumed_output)
    print(f"commit: SIGTERM after step {seen}; step {step} committed in {took:.3f} s, {spare:.3f} s before the "
          f"deadline; exit 143 {elapsed:.2f} s after the signal; the restart resumed from step {step}, "
          f"digest {resumed['digest']} == reference")


def test_miss(job, reference):
    # Grace 1 s - margin 1 s: the deadline is the signal's arrival.
    code, elapsed, seen, output = job.run_and_signal("miss", ["--preemption-margin", "1"],
                                                     env={"SPOOL_PREEMPTION_GRACE_SECONDS": "1"})
    check(code == 143, f"miss: exit code {code}, expected 143 (128 + SIGTERM)", output)
    found = MISSED.search(output)
    check(found is not None, "miss: no line saying the preemption save missed its deadline", output)
    step = int(found.group(1))
    latest = int(found.group(4)) if found.group(4) else None
    check(seen < step < STEPS, f"miss: step {step} was the one to save, expected one after step {seen}", output)
    steps = job.committed_steps("miss")
    check(step not in steps, f"miss: step {step} is listed as committed although it missed: {steps}", output)
    left = [key for key in job.objects("miss") if f"step-{step:012d}/" in key]
    check(not left, f"miss: the uncommitted step {step} left objects behind: {left}", output)
    check((steps[-1] if steps else None) == latest,
          f"miss: the output says step {latest} stays latest, `spool ckpt list` shows {steps}", output)

    resumed, resumed_output = job.run_to_end("miss")
    if latest is not None:
        restored = RESTORED.search(resumed_output)
        check(restored is not None and int(restored.group(1)) == latest,
              f"miss: the restart did not resume from step {latest}", resumed_output)
    same_run("miss", reference, resumed, resumed_output)
    print(f"miss: SIGTERM after step {seen}; step {step} not committed (deadline already passed), latest stays "
          f"{latest}; the restart resumed from it, digest {resumed['digest']} == reference")


def rank_env(rank):
    return {"RANK": str(rank), "WORLD_SIZE": "2"}


def start_ranks(job, name, extra):
    """Starts ranks 0 and 1 of 2 side by side; returns [(process, log path)]."""
    started = []
    for rank in (0, 1):
        log_path = os.path.join(job.scratch, f"{name}-rank{rank}-{uuid.uuid4().hex[:6]}.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(job.args(name) + list(extra), env={**job.env, **rank_env(rank)},
                                       stdout=log, stderr=subprocess.STDOUT)
        started.append((process, log_path))
    return started


def finish_ranks(name, started, timeout):
    """Waits for every rank; returns [(exit code, output)]."""
    results = []
    try:
        for process, log_path in started:
            code = process.wait(timeout=timeout)
            with open(log_path) as f:
                results.append((code, f.read()))
    finally:
        for process, _ in started:
            if process.poll() is None:
                process.kill()
                process.wait()
    return results


def two_ranks_to_end(job, name):
    """Runs both ranks to the end; returns each rank's summary."""
    summaries = [os.path.join(job.scratch, f"{name}-rank{rank}-summary.txt") for rank in (0, 1)]
    started = []
    for rank in (0, 1):
        log_path = os.path.join(job.scratch, f"{name}-rank{rank}-end.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(job.args(name) + ["--summary", summaries[rank], "--log-every", "100"],
                                       env={**job.env, **rank_env(rank)}, stdout=log, stderr=subprocess.STDOUT)
        started.append((process, log_path))
    results = finish_ranks(name, started, 600)
    values = []
    for rank, (code, output) in enumerate(results):
        check(code == 0, f"{name}: rank {rank} failed ({code})", output)
        with open(summaries[rank]) as f:
            values.append(dict(line.strip().split("=", 1) for line in f if "=" in line))
    return values, [output for _, output in results]


def test_two_ranks(job):
    """Returns each rank's uninterrupted summary."""
    reference, _ = two_ranks_to_end(job, "ranks-reference")
    listed = job.spool_run("ckpt", "list", f"{job.root}/ranks-reference/ckpt")
    check(re.search(r"^step\s+300\s.*\s2 ranks\s", listed, re.M) is not None,
          "ranks: `spool ckpt list` does not show step 300 saved by 2 ranks", listed)
    check(reference[0]["digest"] != reference[1]["digest"], "ranks: both ranks trained on the same records")

    started = start_ranks(job, "ranks", ["--step-delay-ms", str(STEP_DELAY_MS), "--log-every", "10",
                                         "--preemption-grace", str(GRACE), "--preemption-margin", str(MARGIN)])
    begin = time.monotonic()
    rank0_log = started[0][1]
    while True:
        with open(rank0_log) as f:
            steps = [int(s) for s in STEP_LINE.findall(f.read())]
        if steps and steps[-1] >= SIGNAL_AFTER_STEP:
            break
        if started[0][0].poll() is not None or time.monotonic() - begin > START_LIMIT:
            finish_ranks("ranks", started, 1)
            with open(rank0_log) as f:
                raise Failure(f"ranks: rank 0 did not reach step {SIGNAL_AFTER_STEP}\n--- output ---\n{f.read()}")
        time.sleep(0.02)
    for process, _ in started:
        process.send_signal(signal.SIGTERM)
    results = finish_ranks("ranks", started, GRACE + 30)
    for rank, (code, output) in enumerate(results):
        check(code == 143, f"ranks: rank {rank} exit code {code}, expected 143 (128 + SIGTERM)", output)
    check(RANK_PART.search(results[1][1]) is not None, "ranks: rank 1 did not save its part", results[1][1])
    committed = job.committed_steps("ranks")
    check(committed and committed[-1] >= SAVE_EVERY, f"ranks: committed steps {committed}", results[0][1])
    latest = committed[-1]

    resumed, outputs = two_ranks_to_end(job, "ranks")
    for rank in (0, 1):
        restored = RESTORED_RANK.search(outputs[rank])
        check(restored is not None and int(restored.group(1)) == latest and int(restored.group(2)) == rank
              and restored.group(3) == "2", f"ranks: rank {rank} did not resume its own part of step {latest}",
              outputs[rank])
        for key in ("steps", "records", "digest"):
            check(resumed[rank].get(key) == reference[rank].get(key),
                  f"ranks: rank {rank}'s resumed {key} is {resumed[rank].get(key)}, its uninterrupted run's "
                  f"{reference[rank].get(key)}", outputs[rank])
    print(f"ranks: both ranks got SIGTERM after step {steps[-1]}, exited with 143; latest committed step {latest} "
          f"(2 ranks); each rank resumed its own part, digests {resumed[0]['digest']} and {resumed[1]['digest']} "
          f"== their uninterrupted runs")
    return reference


def test_one_rank_restarts(job, reference):
    """Rank 1 crashes and restarts alone; rank 0 never stops."""
    name = "alone"
    summaries = [os.path.join(job.scratch, f"{name}-rank{rank}-summary.txt") for rank in (0, 1)]
    extra = ["--step-delay-ms", str(STEP_DELAY_MS), "--log-every", "10"]
    started = []
    for rank in (0, 1):
        log_path = os.path.join(job.scratch, f"{name}-rank{rank}.log")
        with open(log_path, "w") as log:
            process = subprocess.Popen(job.args(name) + extra + ["--summary", summaries[rank]],
                                       env={**job.env, **rank_env(rank)}, stdout=log, stderr=subprocess.STDOUT)
        started.append((process, log_path))
    try:
        begin = time.monotonic()
        while True:
            with open(started[1][1]) as f:
                steps = [int(s) for s in STEP_LINE.findall(f.read())]
            if steps and steps[-1] >= SIGNAL_AFTER_STEP:
                break
            check(started[1][0].poll() is None and time.monotonic() - begin < START_LIMIT,
                  f"{name}: rank 1 did not reach step {SIGNAL_AFTER_STEP}")
            time.sleep(0.02)
        started[1][0].kill()  # a crash: no handler, no save
        started[1][0].wait()
        committed = job.committed_steps(name)
        check(committed, f"{name}: nothing committed before the crash")
        latest = committed[-1]
        restart_log = os.path.join(job.scratch, f"{name}-rank1-restart.log")
        with open(restart_log, "w") as log:
            process = subprocess.Popen(job.args(name) + extra + ["--summary", summaries[1]],
                                       env={**job.env, **rank_env(1)}, stdout=log, stderr=subprocess.STDOUT)
        started[1] = (process, restart_log)
    except Failure:
        finish_ranks(name, started, 1)
        raise
    results = finish_ranks(name, started, 600)
    for rank, (code, output) in enumerate(results):
        check(code == 0, f"{name}: rank {rank} failed ({code})", output)
    # Rank 0 may commit a step between the listing and the restart: the
    # restart resumes from the latest committed step when it starts.
    restored = RESTORED_RANK.search(results[1][1])
    check(restored is not None and int(restored.group(1)) >= latest and restored.group(2) == "1",
          f"{name}: the restarted rank 1 did not resume its own part of step {latest} or later", results[1][1])
    latest = int(restored.group(1))
    for rank in (0, 1):
        with open(summaries[rank]) as f:
            values = dict(line.strip().split("=", 1) for line in f if "=" in line)
        for key in ("steps", "records", "digest"):
            check(values.get(key) == reference[rank].get(key),
                  f"{name}: rank {rank}'s {key} is {values.get(key)}, its uninterrupted run's "
                  f"{reference[rank].get(key)}", results[rank][1])
    listed = job.spool_run("ckpt", "list", f"{job.root}/{name}/ckpt")
    check(re.search(rf"^step\s+{STEPS}\s.*\s2 ranks\s", listed, re.M) is not None,
          f"{name}: the last step is not committed by 2 ranks", listed + results[0][1])
    print(f"{name}: rank 1 killed after step {steps[-1]} and restarted alone resumed its part of step {latest} "
          f"while rank 0 went on; both finished with their uninterrupted digests, step {STEPS} committed by 2 ranks")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train", required=True, help="the train_loop binary")
    parser.add_argument("--spool", required=True, help="the spool binary")
    parser.add_argument("--store", choices=("local", "s3"), default="local")
    options = parser.parse_args()
    if DIGITS is None or not os.path.exists(DIGITS):
        print(f"scikit-learn's digits table is missing from {sys.executable}'s packages: run scripts/setup "
              "and this test with .venv/bin/python")
        return 1

    scratch = tempfile.mkdtemp(prefix="spool-preemption-test-")
    if options.store == "s3":
        root = f"s3://{os.environ.get('SPOOL_S3_TEST_BUCKET', 'spool-test')}/preemption-test/{uuid.uuid4().hex[:12]}"
    else:
        root = os.path.join(scratch, "store")
        os.makedirs(root)
    job = Job(options.train, options.spool, root, scratch)
    try:
        job.make_dataset()
        reference, _ = job.run_to_end("reference")
        check(int(reference["steps"]) == STEPS, f"reference: {reference['steps']} steps, expected {STEPS}")
        print(f"reference: {STEPS} steps, {reference['records']} records, digest {reference['digest']}")
        test_commit(job, reference)
        test_miss(job, reference)
        ranks_reference = test_two_ranks(job)
        test_one_rank_restarts(job, ranks_reference)
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAILED ({options.store}): {e}")
        return 1
    finally:
        if options.store == "s3":
            subprocess.run([options.spool, "rm", "-r", root + "/"], env=job.env, capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"PASSED ({options.store})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
