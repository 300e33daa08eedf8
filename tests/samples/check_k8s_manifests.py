#!/usr/bin/env python3
"""Checks that every Kubernetes manifest under samples/k8s parses as YAML and
has the fields `kubectl apply --dry-run=client` requires of its kind, and
what the samples need to run as shipped:

- every pod that trains (runs train_loop, or is an MPIJob worker that mpirun
  starts it on) serves spool's metrics where its Prometheus scrape
  annotations say (docs/metrics.md);
- it sets terminationGracePeriodSeconds, and its ranks get the same number
  in SPOOL_PREEMPTION_GRACE_SECONDS (docs/checkpoints.md, "Preemption");
- every container runs a program its image holds (IMAGE_PROGRAMS, which
  tests/samples/image_test.py checks against the images samples/Dockerfile
  builds);
- every SPOOL_, AWS_ and GOOGLE_ variable it sets is one spool reads (named
  in the sources under spool/, cli/ or samples/);
- a container that reaches s3:// takes credentials and endpoint from the
  Secret spool-s3 (envFrom), as train-s3-job.yaml's instructions make it,
  and sets none of S3_SECRET_KEYS itself; one that reaches gs:// mounts the
  key file GOOGLE_APPLICATION_CREDENTIALS names, or its file's header says
  it relies on Workload Identity;
- an MPIJob passes the ranks (mpirun -x) every variable they need, mounts
  mpi-operator's SSH keys in the image user's home and runs spool-mpi-worker
  on the workers;
- a KubeRay RayJob has an entrypoint, and its head and worker pods pass the
  container checks (KubeRay writes their command, so they set none); the
  entrypoint counts as what every pod of its cluster reaches;
- ServiceAccount, Role and RoleBinding (the RBAC a Spark driver needs to
  start executor pods) have their names and, for the binding, a roleRef.

Usage: check_k8s_manifests.py DIR   (exit 0 when all pass; one line per problem)
"""
import pathlib
import re
import sys

import yaml

SOURCE = pathlib.Path(__file__).resolve().parents[2]

# What each image of samples/Dockerfile holds that a manifest may run.
_SPOOL_PROGRAMS = ("/usr/local/bin/spool", "/usr/local/bin/train_loop", "/usr/local/bin/stream_shards",
                   "/usr/local/bin/save_checkpoint", "spool", "train_loop", "/bin/sh")
IMAGE_PROGRAMS = {
    "spool:latest": _SPOOL_PROGRAMS,  # target runtime
    "spool-mpi:latest": _SPOOL_PROGRAMS + ("mpirun", "/usr/local/bin/spool-mpi-worker"),  # target mpi
    # target engines: Python with spool, pyspark and ray (image_test.py --engines).
    "spool-engines:latest": ("/bin/sh", "spark-submit", "python", "ray", "/usr/local/bin/convert_parquet.py"),
}
# The image's user's ~/.ssh, where mpi-operator mounts the job's SSH keys.
MPI_SSH_PATH = "/home/spool/.ssh"
MPI_WORKER_COMMAND = ["/usr/local/bin/spool-mpi-worker"]
# The Secret every S3 sample reads, and the variables train-s3-job.yaml's
# instructions put in it.
S3_SECRET = "spool-s3"
S3_SECRET_KEYS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION", "AWS_ENDPOINT_URL_S3")
GRACE = "SPOOL_PREEMPTION_GRACE_SECONDS"
# Open MPI's wait between SIGTERM and SIGKILL when mpirun stops ranks.
MPI_SIGKILL_TIMEOUT = "OMPI_MCA_odls_base_sigkill_timeout"


def variables_spool_reads():
    """Every SPOOL_/AWS_/GOOGLE_ name quoted in spool's C++ sources."""
    names = set()
    for folder in ("spool", "cli", "samples"):
        for path in (SOURCE / folder).rglob("*"):
            if path.suffix in (".cc", ".h"):
                names.update(re.findall(r'"((?:SPOOL|AWS|GOOGLE)_[A-Z0-9_]+)"', path.read_text(errors="replace")))
    return names


KNOWN_VARIABLES = variables_spool_reads()

POD_TEMPLATE_KINDS = {"Job"}
RBAC_KINDS = {"ServiceAccount", "Role", "RoleBinding"}
REPLICA_SPECS = {"PyTorchJob": "pytorchReplicaSpecs", "TFJob": "tfReplicaSpecs", "MPIJob": "mpiReplicaSpecs"}


def check_pod_spec(where, spec, problems):
    containers = (spec or {}).get("containers") or []
    if not containers:
        problems.append(f"{where}: pod spec has no containers")
    for c in containers:
        for field in ("name", "image"):
            if not c.get(field):
                problems.append(f"{where}: a container has no {field}")
        for env in c.get("env") or []:
            if "name" not in env or not ("value" in env or "valueFrom" in env):
                problems.append(f"{where}: env entry {env!r} needs name and value/valueFrom")
    if spec and spec.get("restartPolicy") not in (None, "Never", "OnFailure", "Always"):
        problems.append(f"{where}: bad restartPolicy {spec.get('restartPolicy')!r}")


METRICS_PORT = "SPOOL_METRICS_PORT"


def env_value(container, name):
    for env in container.get("env") or []:
        if env.get("name") == name:
            return str(env.get("value"))
    return None


def runs_training(container):
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    return any("train_loop" in w for w in words)


def check_metrics(where, template, problems, port=None):
    """A training pod: annotations scrape its SPOOL_METRICS_PORT, which a container exposes."""
    spec = (template or {}).get("spec") or {}
    containers = spec.get("containers") or []
    for c in containers:
        if runs_training(c) and "mpirun" not in str(c.get("command")):
            port = env_value(c, METRICS_PORT)
            if port is None:
                problems.append(f"{where}: container {c.get('name')} runs train_loop without {METRICS_PORT}")
    if port is None:
        return
    annotations = ((template or {}).get("metadata") or {}).get("annotations") or {}
    if annotations.get("prometheus.io/scrape") != "true":
        problems.append(f"{where}: a training pod has no prometheus.io/scrape: \"true\" annotation")
    if str(annotations.get("prometheus.io/port")) != port:
        problems.append(f"{where}: prometheus.io/port is {annotations.get('prometheus.io/port')!r}, "
                        f"but {METRICS_PORT} is {port!r}")
    exposed = {str(p.get("containerPort")) for c in containers for p in (c.get("ports") or [])}
    if port not in exposed:
        problems.append(f"{where}: no container exposes the metrics port {port}")


def words_of(container):
    return [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]


def check_container(where, container, header, problems, operator_command=False, reaches=""):
    """Program, variable names and credentials of one container. `operator_command`:
    an operator (KubeRay) writes its command; `reaches`: what else it runs (a RayJob's entrypoint)."""
    image = container.get("image")
    command = container.get("command") or []
    if operator_command:
        if command:
            problems.append(f"{where}: container {container.get('name')} sets a command; KubeRay writes it")
    elif image in IMAGE_PROGRAMS:
        if not command:
            problems.append(f"{where}: container {container.get('name')} sets no command (the image's "
                            f"entrypoint is the spool command)")
        elif str(command[0]) not in IMAGE_PROGRAMS[image]:
            problems.append(f"{where}: {command[0]!r} is not a program of the image {image}")
    elif image:
        problems.append(f"{where}: image {image!r} is none of samples/Dockerfile's ({', '.join(IMAGE_PROGRAMS)})")
    env = {e.get("name"): e for e in container.get("env") or []}
    for name in env:
        if re.match(r"(SPOOL|AWS|GOOGLE)_", str(name)) and name not in KNOWN_VARIABLES:
            problems.append(f"{where}: {name} is not a variable spool reads")
    text = " ".join(words_of(container)) + " " + reaches
    secrets = {(ref.get("secretRef") or {}).get("name") for ref in container.get("envFrom") or []}
    if "s3://" in text:
        if S3_SECRET not in secrets:
            problems.append(f"{where}: reaches s3:// without envFrom secretRef {S3_SECRET}")
        for name in S3_SECRET_KEYS:
            if name in env:
                problems.append(f"{where}: sets {name} itself; it belongs in the Secret {S3_SECRET}")
    if "gs://" in text and "Workload Identity" not in header:
        key = env.get("GOOGLE_APPLICATION_CREDENTIALS")
        mounts = [m.get("mountPath", "").rstrip("/") for m in container.get("volumeMounts") or []]
        if key is None or str(key.get("value", "")).rsplit("/", 1)[0] not in mounts:
            problems.append(f"{where}: reaches gs:// without a mounted GOOGLE_APPLICATION_CREDENTIALS key, "
                            f"and its header does not say it relies on Workload Identity")


def check_grace(where, pod, value, problems):
    """A training pod's grace period, and the SPOOL_PREEMPTION_GRACE_SECONDS its ranks get."""
    grace = (pod or {}).get("terminationGracePeriodSeconds")
    if grace is None:
        problems.append(f"{where}: a training pod sets no terminationGracePeriodSeconds")
    elif value is None:
        problems.append(f"{where}: a training pod's ranks get no {GRACE}")
    elif str(value) != str(grace):
        problems.append(f"{where}: {GRACE} is {value}, terminationGracePeriodSeconds {grace}")


def check_mpijob(where, spec, problems):
    replicas = spec.get("mpiReplicaSpecs") or {}
    launcher_pod = ((replicas.get("Launcher") or {}).get("template") or {}).get("spec") or {}
    worker_pod = ((replicas.get("Worker") or {}).get("template") or {}).get("spec") or {}
    if spec.get("sshAuthMountPath") != MPI_SSH_PATH:
        problems.append(f"{where}: sshAuthMountPath must be {MPI_SSH_PATH}, the image user's ~/.ssh")
    for c in worker_pod.get("containers") or []:
        if c.get("command") != MPI_WORKER_COMMAND:
            problems.append(f"{where}: a worker must run {MPI_WORKER_COMMAND[0]} (ssh for the launcher, "
                            f"SIGTERM passed on to the ranks)")
    for c in launcher_pod.get("containers") or []:
        if not runs_training(c):
            continue
        args = [str(a) for a in c.get("args") or []]
        exported = {args[i + 1] for i, a in enumerate(args[:-1]) if a == "-x"}
        env = {e.get("name"): e.get("value") for e in c.get("env") or []}
        needed = {n for n in env if str(n).startswith("SPOOL_")}
        if S3_SECRET in {(r.get("secretRef") or {}).get("name") for r in c.get("envFrom") or []}:
            needed |= set(S3_SECRET_KEYS)
        for name in sorted(needed - exported):
            problems.append(f"{where}: the launcher does not pass {name} to the ranks (-x {name})")
        check_grace(f"{where} (Worker)", worker_pod, env.get(GRACE), problems)
        check_grace(f"{where} (Launcher)", launcher_pod, env.get(GRACE), problems)
        grace = worker_pod.get("terminationGracePeriodSeconds")
        if grace is not None and str(env.get(MPI_SIGKILL_TIMEOUT)) != str(grace):
            problems.append(f"{where}: the launcher's {MPI_SIGKILL_TIMEOUT} is {env.get(MPI_SIGKILL_TIMEOUT)}, "
                            f"the grace period {grace}: mpirun would SIGKILL ranks still saving")


def check_document(where, doc, problems, header=""):
    for field in ("apiVersion", "kind"):
        if not doc.get(field):
            problems.append(f"{where}: missing {field}")
    if not (doc.get("metadata") or {}).get("name"):
        problems.append(f"{where}: missing metadata.name")
    kind = doc.get("kind")
    spec = doc.get("spec") or {}
    if kind in POD_TEMPLATE_KINDS:
        pod = (spec.get("template") or {}).get("spec")
        check_pod_spec(f"{where} ({kind})", pod, problems)
        if pod and pod.get("restartPolicy") not in ("Never", "OnFailure"):
            problems.append(f"{where}: a Job's restartPolicy must be Never or OnFailure")
        if spec.get("completionMode") == "Indexed" and not spec.get("completions"):
            problems.append(f"{where}: an Indexed Job needs completions")
        check_metrics(f"{where} ({kind})", spec.get("template"), problems)
        for c in (pod or {}).get("containers") or []:
            check_container(f"{where} ({kind})", c, header, problems)
            if runs_training(c):
                check_grace(f"{where} ({kind})", pod, env_value(c, GRACE), problems)
    elif kind in REPLICA_SPECS:
        replicas = spec.get(REPLICA_SPECS[kind]) or {}
        if not replicas:
            problems.append(f"{where}: {kind} has no {REPLICA_SPECS[kind]}")
        for role, rs in replicas.items():
            pod = (rs.get("template") or {}).get("spec")
            check_pod_spec(f"{where} ({kind} {role})", pod, problems)
            check_metrics(f"{where} ({kind} {role})", rs.get("template"), problems)
            for c in (pod or {}).get("containers") or []:
                check_container(f"{where} ({kind} {role})", c, header, problems)
                if runs_training(c) and kind != "MPIJob":
                    check_grace(f"{where} ({kind} {role})", pod, env_value(c, GRACE), problems)
        if kind == "MPIJob":
            check_mpijob(where, spec, problems)
            # mpirun runs train_loop on the workers with the launcher's
            # environment (-x): the workers are the training pods.
            launcher = (((replicas.get("Launcher") or {}).get("template") or {}).get("spec") or {})
            for c in launcher.get("containers") or []:
                if runs_training(c):
                    port = env_value(c, METRICS_PORT)
                    args = [str(a) for a in c.get("args") or []]
                    if port is None or METRICS_PORT not in args:
                        problems.append(f"{where}: the MPIJob launcher must set {METRICS_PORT} and pass it "
                                        f"to the ranks with -x {METRICS_PORT}")
                    else:
                        check_metrics(f"{where} (MPIJob Worker)", (replicas.get("Worker") or {}).get("template"),
                                      problems, port)
    elif kind == "RayJob":
        check_rayjob(where, spec, header, problems)
    elif kind in RBAC_KINDS:
        if kind == "RoleBinding" and not (doc.get("roleRef") or {}).get("name"):
            problems.append(f"{where}: a RoleBinding needs roleRef.name")
    else:
        problems.append(f"{where}: unexpected kind {kind!r}")


def check_rayjob(where, spec, header, problems):
    entrypoint = str(spec.get("entrypoint") or "")
    if not entrypoint:
        problems.append(f"{where}: a RayJob needs an entrypoint")
    cluster = spec.get("rayClusterSpec") or {}
    head = cluster.get("headGroupSpec") or {}
    groups = [("head", head)] + [(g.get("groupName", "?"), g) for g in cluster.get("workerGroupSpecs") or []]
    if not head:
        problems.append(f"{where}: a RayJob needs rayClusterSpec.headGroupSpec")
    for role, group in groups:
        pod = (group.get("template") or {}).get("spec")
        check_pod_spec(f"{where} (RayJob {role})", pod, problems)
        for c in (pod or {}).get("containers") or []:
            check_container(f"{where} (RayJob {role})", c, header, problems, operator_command=True,
                            reaches=entrypoint)


def main():
    folder = pathlib.Path(sys.argv[1])
    problems, count = [], 0
    files = sorted(folder.glob("*.yaml"))
    if not files:
        problems.append(f"{folder}: no manifests found")
    for path in files:
        text = path.read_text()
        header = "".join(line for line in text.splitlines(True) if line.startswith("#"))
        try:
            docs = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as e:
            problems.append(f"{path}: not valid YAML: {e}")
            continue
        for i, doc in enumerate(docs):
            count += 1
            check_document(f"{path.name}[{i}]", doc, problems, header)
    for p in problems:
        print(p)
    print(f"{count} manifests checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
