#!/usr/bin/env python3
"""Builds samples/Dockerfile without a Docker engine or a registry, and runs
the Kubernetes samples' commands inside the images against the test Ceph RGW.

No Docker daemon runs on the project's machines and no registry is reachable,
but Debian's packages are. So:

1. Base images: `debootstrap --variant=minbase bookworm` (from the mirror
   apt is configured with) makes a root file system, imported into a
   buildah store of the test's own as debian:bookworm and
   debian:bookworm-slim. The root file system is kept as a tarball in WORK
   and reused by later runs.
2. The build-deps stage is built as written (its apt-get install), and the
   build stage's cmake configure line, taken from the Dockerfile, runs in it
   on the source tree: every find_package and pkg-config check must pass
   with the packages the Dockerfile installs.
3. The runtime and mpi stages are built as written, except that the build
   stage, which compiles spool (far longer than the test may take), is
   replaced by the binaries of this build tree (`--build-context build=`):
   the same programs, built on the same Debian release.
4. Inside the runtime image, as its user: every program a manifest runs
   exists; `spool --version`; `train_loop --help`; the conversion sample
   (the Indexed Job's command for every index, with the manifest Job's
   command started first, which must wait for the shards and then commit);
   and a short training run with train-s3-job.yaml's arguments and
   environment, credentials and endpoint given as the Secret its
   instructions create.
5. Inside the mpi image: mpirun with mpijob.yaml's arguments over ssh to the
   worker command (tests/samples/mpi_in_image.sh): 2 ranks train and commit
   steps saved by 2 ranks; then SIGTERM to the worker command reaches both
   ranks, which save their parts and exit 143.

With --full the build stage is built as written too (compiling spool in the
image: about as long as a build of the project; not part of the suite).

With --engines it builds the engines stage instead (Python, Java, pyspark and
ray from PyPI: not part of the suite, which must not depend on PyPI's
availability) and, inside it as its user: every program the Spark and Ray
manifests run exists, then samples/python/convert_parquet.py converts a
Parquet table with every mapped type and nulls, on Spark (spark-submit,
local[2]) and on Ray (a local cluster), to the test RGW, and
tests/samples/engines_in_image.py reads each committed dataset back through
spool and checks every row once with equal values. --wheel PATH puts that
wheel (built from this tree, on the same Debian release) in place of the
wheel stage, which otherwise compiles spool in the image.

  image_test.py --source DIR --spool PATH --train PATH --work DIR [--full | --engines [--wheel PATH]]

Needs buildah and debootstrap (scripts/setup installs them), root, and the
environment of the ceph_rgw fixture (AWS_ENDPOINT_URL, keys,
SPOOL_S3_TEST_BUCKET). Everything under s3://$SPOOL_S3_TEST_BUCKET/image-test/
<random>/ is deleted at the end.
"""

import argparse
import glob
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import uuid

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_k8s_manifests as manifests  # noqa: E402  (the table of what each image holds)

SUITE = "bookworm"
BASE_TAGS = (f"docker.io/library/debian:{SUITE}", f"docker.io/library/debian:{SUITE}-slim")
RUNTIME_IMAGE = "localhost/spool:image-test"
MPI_IMAGE = "localhost/spool-mpi:image-test"
DEPS_IMAGE = "localhost/spool-build-deps:image-test"
ENGINES_IMAGE = "localhost/spool-engines:image-test"
ENGINES_ROWS = 20000
# Programs the build stage installs into /opt/spool/bin (cli/ and samples/ install rules).
BUILT_PROGRAMS = ("spool", "train_loop", "stream_shards", "save_checkpoint")
DIGITS_ROWS = 300
STEPS = 40
SAVE_EVERY = 20


class Failure(Exception):
    pass


def check(condition, message, output=None):
    if not condition:
        raise Failure(message + (f"\n--- output ---\n{output}" if output else ""))


def redacted(args):
    """The command for a message: values of -e NAME=VALUE hidden (credentials)."""
    shown, hide = [], False
    for a in args:
        shown.append(a.split("=", 1)[0] + "=..." if hide and "=" in a else a)
        hide = a in ("-e", "--env")
    return " ".join(shlex.quote(a) for a in shown)


def run(args, timeout=900, check_code=True, **kwargs):
    done = subprocess.run(args, capture_output=True, text=True, timeout=timeout, **kwargs)
    if check_code and done.returncode != 0:
        raise Failure(f"{redacted(args)} failed ({done.returncode}):\n{(done.stdout + done.stderr)[-6000:]}")
    return done


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def apt_mirror():
    """The Debian mirror apt uses on this machine, so debootstrap fetches from
    the same place; None leaves debootstrap's default."""
    for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
        with open(path) as f:
            for line in f:
                if line.startswith("URIs:") and "security" not in line:
                    return line.split()[1]
    if os.path.exists("/etc/apt/sources.list"):
        with open("/etc/apt/sources.list") as f:
            for line in f:
                words = line.split()
                if len(words) >= 3 and words[0] == "deb" and "security" not in words[1]:
                    return next(w for w in words[1:] if not w.startswith("["))
    return None


class Buildah:
    """buildah on a store of the test's own under WORK (overlay, chroot isolation, host network)."""

    def __init__(self, work):
        self.prefix = ["buildah", "--root", os.path.join(work, "store"), "--runroot", os.path.join(work, "run"),
                       "--storage-driver", "overlay"]

    def __call__(self, *args, timeout=900, check_code=True):
        return run(self.prefix + list(args), timeout=timeout, check_code=check_code)

    def bud(self, source, target, tag, extra=()):
        self("bud", "--pull=never", "--isolation", "chroot", "--network", "host", "--layers",
             "-f", os.path.join(source, "samples", "Dockerfile"),
             "--ignorefile", os.path.join(source, "samples", "Dockerfile.dockerignore"),
             "--target", target, "-t", tag, *extra, source,
             timeout=1800)

    def container(self, image):
        return Container(self, self("from", "--pull=never", image).stdout.strip().splitlines()[-1])


class Container:
    """A working container of an image; commands run as the image's user."""

    def __init__(self, buildah, name):
        self.buildah, self.name = buildah, name

    def run(self, command, env=None, volumes=(), user=None, timeout=600, check_code=True, hostname=None):
        args = ["run", "--isolation", "chroot", "--network", "host"]
        if hostname:
            args += ["--hostname", hostname]
        for k, v in (env or {}).items():
            args += ["-e", f"{k}={v}"]
        for v in volumes:
            args += ["-v", v]
        if user:
            args += ["--user", user]
        return self.buildah(*args, self.name, "--", *command, timeout=timeout, check_code=check_code)

    def remove(self):
        self.buildah("rm", self.name, check_code=False)


def base_images(buildah, work, reuse):
    """debian:bookworm and debian:bookworm-slim in the store (reuse: keep them if there)."""
    if reuse and buildah("images", "-q", BASE_TAGS[1], check_code=False).returncode == 0:
        return
    tarball = os.path.join(work, f"debian-{SUITE}-minbase.tar")
    if not os.path.exists(tarball):
        rootfs = os.path.join(work, "rootfs")
        shutil.rmtree(rootfs, ignore_errors=True)
        mirror = apt_mirror()
        run(["debootstrap", "--variant=minbase", SUITE, rootfs] + ([mirror] if mirror else []), timeout=1200)
        run(["tar", "-C", rootfs, "-cf", tarball + ".part", "."])
        os.replace(tarball + ".part", tarball)
        shutil.rmtree(rootfs, ignore_errors=True)
    # buildah has no `import`: a container from scratch with the tarball unpacked into it.
    c = buildah("from", "scratch").stdout.strip().splitlines()[-1]
    buildah("add", c, tarball, "/")
    buildah("config", "--cmd", "/bin/bash", c)
    buildah("commit", "-q", c, BASE_TAGS[0])
    buildah("rm", c)
    buildah("tag", BASE_TAGS[0], BASE_TAGS[1])


def configure_in_build_deps(buildah, source):
    """The build stage's cmake configure line, run in the build-deps image on the source tree."""
    with open(os.path.join(source, "samples", "Dockerfile")) as f:
        text = f.read()
    found = re.search(r"^RUN (cmake -S \. -B \S+ .*?)\s*\\?\s*&& cmake --build", text, re.M | re.S)
    check(found is not None, "samples/Dockerfile: no `RUN cmake -S . -B ... && cmake --build` line in the build stage")
    configure = " ".join(found.group(1).replace("\\\n", " ").split())
    c = buildah.container(DEPS_IMAGE)
    try:
        done = c.run(["sh", "-c", f"cd /src && {configure}"], volumes=[f"{source}:/src:ro"], check_code=False)
        check(done.returncode == 0, f"the Dockerfile's configure step failed in the build-deps stage: {configure}",
              (done.stdout + done.stderr)[-6000:])
    finally:
        c.remove()
    return configure


def stage_binaries(work, spool, train):
    """<work>/binaries/opt/spool/bin: this build tree's programs, as the build stage installs them."""
    root = os.path.join(work, "binaries")
    shutil.rmtree(root, ignore_errors=True)
    bin_dir = os.path.join(root, "opt", "spool", "bin")
    os.makedirs(bin_dir)
    places = {"spool": spool, "train_loop": train}
    for name in BUILT_PROGRAMS:
        path = places.get(name, os.path.join(os.path.dirname(train), name))
        check(os.path.exists(path), f"{path}: not built; build the targets {' '.join(BUILT_PROGRAMS)}")
        shutil.copy2(path, bin_dir)
    return root


def host_ca_for_pip():
    """The host's CA bundle for pip inside the build (the Dockerfile's PIP_CERT):
    where PyPI is reached through a proxy that re-signs TLS, the image's own
    bundle does not trust it. A build-time mount: nothing of it stays in the image."""
    bundle = "/etc/ssl/certs/ca-certificates.crt"
    if not os.path.exists(bundle):
        return []
    return ["-v", f"{bundle}:/run/host-ca.pem:ro", "--build-arg", "PIP_CERT=/run/host-ca.pem"]


def stage_wheel(work, wheel):
    """<work>/wheel/wheels/<the wheel>: the wheel stage's /wheels, for --build-context wheel=."""
    if os.path.isdir(wheel):
        found = glob.glob(os.path.join(wheel, "spool-*.whl"))
        check(len(found) == 1, f"{wheel}: holds {len(found)} spool wheels, not one (python_wheel_test builds it)")
        wheel = found[0]
    check(os.path.basename(wheel).startswith("spool-") and wheel.endswith(".whl"), f"{wheel}: not a spool wheel")
    root = os.path.join(work, "wheel")
    shutil.rmtree(root, ignore_errors=True)
    os.makedirs(os.path.join(root, "wheels"))
    shutil.copy2(wheel, os.path.join(root, "wheels"))
    return root


def load_manifest(source, name):
    with open(os.path.join(source, "samples", "k8s", name)) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def container_of(doc):
    return doc["spec"]["template"]["spec"]["containers"][0]


def manifest_env(container):
    return {e["name"]: str(e["value"]) for e in container.get("env") or [] if "value" in e}


def secret_env():
    """The Secret spool-s3 as the instructions create it, with the test RGW's values."""
    values = {"AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
              "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
              "AWS_REGION": os.environ.get("AWS_REGION", "us-east-1"),
              "AWS_ENDPOINT_URL_S3": os.environ["AWS_ENDPOINT_URL"]}
    check(set(values) == set(manifests.S3_SECRET_KEYS), "the test's Secret and the checker's S3_SECRET_KEYS differ")
    # Nothing else of the host's AWS configuration reaches the image.
    return {**values, "AWS_EC2_METADATA_DISABLED": "true"}


def programs_exist(box, image):
    """Every program check_k8s_manifests.py lets a manifest run with this image is in it."""
    for program in manifests.IMAGE_PROGRAMS[image]:
        done = box.run(["sh", "-c", f"command -v {shlex.quote(program)}"], check_code=False)
        check(done.returncode == 0, f"{image}: {program} (which the manifests run) is not in the image")


def test_runtime(buildah, source, scratch, root):
    box = buildah.container(RUNTIME_IMAGE)
    try:
        programs_exist(box, "spool:latest")
        who = box.run(["sh", "-c", 'id -u; id -un; echo "$HOME"; test -w "$HOME" && echo writable']).stdout.split()
        check(who == ["1000", "spool", "/home/spool", "writable"], f"runtime: user, name, home: {who}")
        version = box.run(["spool", "--version"]).stdout
        check(version.startswith("spool "), f"runtime: spool --version printed {version!r}")
        check("--checkpoints" in box.run(["train_loop", "--help"]).stdout, "runtime: train_loop --help")
        print(f"runtime: {version.strip()}; train_loop --help; uid 1000 spool, home /home/spool")

        secret = secret_env()
        test_conversion(box, source, scratch, root, secret)
        test_training(box, source, scratch, root, secret)
    finally:
        box.remove()


def test_engines(buildah, source, scratch, root):
    """The engines image: spark-convert-job.yaml's and ray-convert-job.yaml's
    program on one machine, Spark in local mode and Ray as a local cluster."""
    box = buildah.container(ENGINES_IMAGE)
    try:
        programs_exist(box, "spool-engines:latest")
        checks = os.path.join(source, "tests", "samples")
        data = os.path.join(scratch, "engines")
        os.makedirs(data)
        os.chown(data, 1000, 1000)  # the image's user writes the table there
        volumes = [f"{data}:/scratch", f"{checks}:/checks:ro"]
        env = {**secret_env(), "HOME": "/home/spool"}
        table = "/scratch/table.parquet"
        box.run(["python", "/checks/engines_in_image.py", "table", table, str(ENGINES_ROWS)], volumes=volumes)
        commands = {
            # The manifest's spark-submit, with a local master instead of the cluster's.
            "spark": ["spark-submit", "--master", "local[2]", "--conf", "spark.driver.host=127.0.0.1",
                      "--conf", "spark.driver.bindAddress=127.0.0.1", "/usr/local/bin/convert_parquet.py"],
            "ray": ["python", "/usr/local/bin/convert_parquet.py"],
        }
        for engine, command in commands.items():
            url = f"{root}/engines/{engine}"
            # A host name that resolves, as a pod's does (Spark looks its own up).
            done = box.run(command + ["--engine", engine, table, url, "--shards", "4", "--compression", "gzip"],
                           env={**env, "SPARK_LOCAL_IP": "127.0.0.1"}, volumes=volumes, timeout=900,
                           hostname="localhost")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            check(result == {"manifest": url + ".manifest.json", "shards": 4, "records": ENGINES_ROWS},
                  f"engines: convert_parquet.py --engine {engine} printed {result}", done.stdout + done.stderr)
            verified = box.run(["python", "/checks/engines_in_image.py", "verify", table, url], env=env,
                               volumes=volumes).stdout.strip()
            print(f"engines: {engine}: {verified}")
    finally:
        box.remove()


def test_conversion(box, source, scratch, root, secret):
    """convert-indexed-job.yaml: the manifest Job's command, started before any
    shard exists, waits for every index's shards and then commits."""
    indexed, manifest_job = load_manifest(source, "convert-indexed-job.yaml")
    tasks = int(indexed["spec"]["completions"])
    convert = container_of(indexed)["args"][0]
    waiter = container_of(manifest_job)["args"][0]
    images = os.path.join(scratch, "images")
    for label in ("cat", "dog", "fish"):
        os.makedirs(os.path.join(images, label))
        for i in range(8):
            with open(os.path.join(images, label, f"{i}.jpg"), "wb") as f:
                f.write(os.urandom(64))
    shards = 2 * tasks

    def rewrite(command):
        for old, new in (("s3://raw/imagenet/train/", "/data/images/"),
                         ("s3://datasets/imagenet/train", f"{root}/images/train"),
                         ("--shards 1024", f"--shards {shards}"), ("sleep 60", "sleep 1")):
            check(old in convert + waiter, f"convert-indexed-job.yaml no longer has {old!r}")
            command = command.replace(old, new)
        return command

    env = {**secret}
    volumes = [f"{scratch}:/data:ro"]
    # The manifest Job first, in the background of one shell; the indexes
    # start once it has found shards missing (at most 60 s), and it must
    # then keep waiting and write the manifest when the last one is done.
    script = (f"({rewrite(waiter)}) > /tmp/manifest-job.log 2>&1 & waiter=$!; "
              "for _ in $(seq 600); do grep -q 'shards are missing' /tmp/manifest-job.log && break; sleep 0.1; done; "
              + " ".join(f"JOB_COMPLETION_INDEX={i} sh -c {shlex.quote(rewrite(convert))} || exit 1;"
                         for i in range(tasks))
              + ' wait $waiter; code=$?; cat /tmp/manifest-job.log; echo "manifest job exit $code"')
    done = box.run(["sh", "-c", script], env=env, volumes=volumes, timeout=900)
    output = done.stdout + done.stderr
    check("manifest job exit 0" in output, "conversion: the manifest Job's command did not succeed", output)
    check("shards are missing" in output, "conversion: the manifest Job did not wait for the shards", output)
    listed = box.run(["spool", "ls", f"{root}/images/"], env=env).stdout
    check("train.manifest.json" in listed and listed.count(".tfrecord.gz") == shards,
          f"conversion: expected {shards} shards and the manifest", listed)
    print(f"conversion: the manifest Job waited while shards were missing, then committed {shards} shards "
          f"written by {tasks} indexes")


def digits_csv(scratch):
    """DIGITS_ROWS rows of scikit-learn's digits table (as scripts/demo uses it) as CSV."""
    import importlib.util
    spec = importlib.util.find_spec("sklearn")
    check(spec is not None, "scikit-learn (the digits table) is missing: run with the project's .venv python")
    table = os.path.join(spec.submodule_search_locations[0], "datasets", "data", "digits.csv.gz")
    rows = run(["zcat", table]).stdout.splitlines(True)[:DIGITS_ROWS]
    path = os.path.join(scratch, "digits-train.csv")
    with open(path, "w") as f:
        f.write(",".join(f"p{i}" for i in range(64)) + ",label\n")
        f.writelines(rows)
    return "/data/digits-train.csv"


def training_args(container, root, run_name):
    """The manifest's train_loop arguments with the test's store, fewer steps."""
    args = []
    for a in container.get("args") or []:
        a = (a.replace("s3://datasets/digits/digits.manifest.json", f"{root}/digits/train.manifest.json")
              .replace("s3://checkpoints/", f"{root}/{run_name}/"))
        a = re.sub(r"^--steps=\d+$", f"--steps={STEPS}", a)
        a = re.sub(r"^--save-every=\d+$", f"--save-every={SAVE_EVERY}", a)
        args.append(a)
    check(any(a.startswith(f"--data={root}") for a in args), f"unexpected train_loop arguments {args}")
    return args


def test_training(box, source, scratch, root, secret):
    """train-s3-job.yaml's command, arguments and environment, for STEPS steps."""
    (job,) = load_manifest(source, "train-s3-job.yaml")
    container = container_of(job)
    env = {**manifest_env(container), **secret, "SPOOL_METRICS_PORT": str(free_port())}
    csv = digits_csv(scratch)
    box.run(["spool", "convert", csv, f"{root}/digits/train", "--shards", "4"], env=env,
            volumes=[f"{scratch}:/data:ro"])
    command = container["command"] + training_args(container, root, "train")
    done = box.run(command, env=env, timeout=600, check_code=False)
    output = done.stdout + done.stderr
    check(done.returncode == 0, f"training: {' '.join(command)} failed ({done.returncode})", output)
    listed = box.run(["spool", "ckpt", "list", f"{root}/train/digits-run-1"], env=env).stdout
    check(re.search(rf"^step\s+{STEPS}\s", listed, re.M) is not None,
          f"training: step {STEPS} is not committed", listed + output)
    print(f"training: train-s3-job.yaml's command ran {STEPS} steps against the test RGW through "
          f"AWS_ENDPOINT_URL_S3 and committed step {STEPS}")


def mpi_launcher(source):
    (job,) = load_manifest(source, "mpijob.yaml")
    specs = job["spec"]["mpiReplicaSpecs"]
    return job, container_of_replica(specs["Launcher"]), container_of_replica(specs["Worker"])


def container_of_replica(spec):
    return spec["template"]["spec"]["containers"][0]


def test_mpi(buildah, source, root):
    job, launcher, worker = mpi_launcher(source)
    check(job["spec"].get("sshAuthMountPath") == "/home/spool/.ssh",
          "mpijob.yaml: sshAuthMountPath must be the image user's ~/.ssh (/home/spool/.ssh)")
    check(worker["command"] == ["/usr/local/bin/spool-mpi-worker"],
          f"mpijob.yaml: the worker command is {worker['command']}, expected /usr/local/bin/spool-mpi-worker")
    secret = secret_env()
    args = list(launcher["args"])
    check(args[:2] == ["-np", "4"], f"mpijob.yaml: launcher args start {args[:2]}, expected -np 4")
    args[1] = "2"
    train_at = next(i for i, a in enumerate(args) if a.endswith("train_loop"))
    mpirun_options, train = args[:train_at], args[train_at:]
    # Both ranks share this machine, where a worker pod has one: each
    # serves its metrics on a free port (0) rather than the manifest's.
    env = {**manifest_env(launcher), **secret, "SPOOL_METRICS_PORT": "0"}
    box = buildah.container(MPI_IMAGE)
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mpi_in_image.sh")
    try:
        programs_exist(box, "spool-mpi:latest")
        port = str(free_port())
        volumes = [f"{script}:/tmp/mpi_in_image.sh:ro"]
        full = launcher["command"] + mpirun_options + training_args({"args": train}, root, "mpi")
        done = box.run(["sh", "/tmp/mpi_in_image.sh", port, "run"] + full[1:], env=env, volumes=volumes,
                       timeout=600, check_code=False)
        output = done.stdout + done.stderr
        check(done.returncode == 0, "mpi: mpirun over ssh with mpijob.yaml's arguments failed", output)
        listed = box.run(["spool", "ckpt", "list", f"{root}/mpi/digits-mpi"], env=env).stdout
        check(re.search(rf"^step\s+{STEPS}\s.*\s2 ranks\s", listed, re.M) is not None,
              f"mpi: step {STEPS} saved by 2 ranks is not committed", listed + output)
        print(f"mpi: mpirun started 2 ranks over ssh on the worker command; step {STEPS} committed with 2 ranks")

        # Preemption: the worker command gets SIGTERM, the ranks must save.
        # Each rank writes its own log (see mpi_in_image.sh); a grace of 15 s
        # bounds the wait of rank 0 when the ranks were at different steps.
        slow = training_args({"args": train}, root, "mpi-preempt")
        slow = [re.sub(r"^--steps=\d+$", "--steps=100000", a) for a in slow] + ["--step-delay-ms=20",
                                                                               "--log-every=10"]
        to_log = ["sh", "-c", 'exec "$@" >"$HOME/rank-$OMPI_COMM_WORLD_RANK.log" 2>&1', "rank"]
        done = box.run(["sh", "/tmp/mpi_in_image.sh", port, "preempt", "30", *mpirun_options[2:], "-np", "2",
                        *to_log, *slow], env={**env, "SPOOL_PREEMPTION_GRACE_SECONDS": "15"}, volumes=volumes,
                       timeout=600, check_code=False)
        output = done.stdout + done.stderr
        check("worker exit 143" in output, "mpi: the worker command did not exit 143 on SIGTERM", output)
        saved = re.findall(r"^rank (\d): preemption: SIGTERM received", output, re.M)
        check(sorted(saved) == ["0", "1"], f"mpi: ranks {saved} saved on SIGTERM, expected 0 and 1", output)
        check(re.search(r"^mpirun exit [1-9]", output, re.M) is not None, "mpi: mpirun exited 0 after SIGTERM",
              output)
        print("mpi: SIGTERM to the worker command reached both ranks, which saved their parts; the worker "
              "exited 143 and mpirun non-zero")
    finally:
        box.remove()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True, help="the repository root (the build context)")
    parser.add_argument("--spool", required=True, help="the spool binary of this build")
    parser.add_argument("--train", required=True, help="the train_loop binary of this build")
    parser.add_argument("--work", required=True, help="a folder for the image store and the base tarball")
    parser.add_argument("--full", action="store_true", help="also compile spool in the build stage")
    parser.add_argument("--engines", action="store_true",
                        help="build and test the engines stage (needs PyPI) instead of runtime and mpi")
    parser.add_argument("--wheel", help="with --engines: this spool wheel (or the one in this folder) instead "
                        "of compiling one in the image")
    parser.add_argument("--keep-store", action="store_true",
                        help="reuse and keep the image store (layers cached by an earlier run; for development)")
    options = parser.parse_args()
    source = os.path.abspath(options.source)
    for tool in ("buildah", "debootstrap"):
        if shutil.which(tool) is None:
            print(f"{tool} is missing: run scripts/setup (it installs buildah and debootstrap)")
            return 1
    work = os.path.abspath(options.work)
    os.makedirs(work, exist_ok=True)
    buildah = Buildah(work)
    # A store of this run only: no layer of an earlier run hides a package that went away.
    buildah("rm", "--all", check_code=False)
    if not options.keep_store:
        shutil.rmtree(os.path.join(work, "store"), ignore_errors=True)
    started = time.monotonic()

    def done(what):
        print(f"[{time.monotonic() - started:5.0f} s] {what}", flush=True)

    scratch = tempfile.mkdtemp(prefix="spool-image-test-")
    os.chmod(scratch, 0o755)
    bucket = os.environ.get("SPOOL_S3_TEST_BUCKET", "spool-test")
    root = f"s3://{bucket}/image-test/{uuid.uuid4().hex[:12]}"
    try:
        base_images(buildah, work, options.keep_store)
        done("base images")
        if options.engines:
            wheel = ["--build-context", f"wheel={stage_wheel(work, options.wheel)}"] if options.wheel else []
            buildah.bud(source, "engines", ENGINES_IMAGE, wheel + host_ca_for_pip())
            done("engines stage built" + (" (the wheel stage replaced by " + options.wheel + ")"
                                          if options.wheel else " (the wheel stage compiled spool)"))
            test_engines(buildah, source, scratch, root)
            done("engines image")
            print("PASSED")
            return 0
        buildah.bud(source, "build-deps", DEPS_IMAGE)
        configure = configure_in_build_deps(buildah, source)
        done(f"build-deps: the build stage's configure step passes ({configure})")
        override = [] if options.full else ["--build-context",
                                            f"build={stage_binaries(work, options.spool, options.train)}"]
        buildah.bud(source, "mpi", MPI_IMAGE, override)
        buildah.bud(source, "runtime", RUNTIME_IMAGE, override)
        done("runtime and mpi stages built" + (" (the build stage compiled spool)" if options.full else
                                               " (the build stage replaced by this build's programs)"))
        test_runtime(buildah, source, scratch, root)
        done("runtime image")
        test_mpi(buildah, source, root)
        done("mpi image")
    except (Failure, subprocess.TimeoutExpired) as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        subprocess.run([options.spool, "rm", "-r", root + "/"], capture_output=True)
        buildah("rm", "--all", check_code=False)
        if not options.keep_store:
            shutil.rmtree(os.path.join(work, "store"), ignore_errors=True)
        shutil.rmtree(scratch, ignore_errors=True)
    print("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
