#!/usr/bin/env python3
"""Checks that every Kubernetes manifest under samples/k8s parses as YAML and
has the fields `kubectl apply --dry-run=client` requires of its kind, and
that every pod that trains (runs train_loop, or is an MPIJob worker that
mpirun starts it on) serves spool's metrics where its Prometheus scrape
annotations say (docs/metrics.md).

Usage: check_k8s_manifests.py DIR   (exit 0 when all pass; one line per problem)
"""
import pathlib
import sys

import yaml

POD_TEMPLATE_KINDS = {"Job"}
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


def check_document(where, doc, problems):
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
    elif kind in REPLICA_SPECS:
        replicas = spec.get(REPLICA_SPECS[kind]) or {}
        if not replicas:
            problems.append(f"{where}: {kind} has no {REPLICA_SPECS[kind]}")
        for role, rs in replicas.items():
            check_pod_spec(f"{where} ({kind} {role})", (rs.get("template") or {}).get("spec"), problems)
            check_metrics(f"{where} ({kind} {role})", rs.get("template"), problems)
        if kind == "MPIJob":
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
    else:
        problems.append(f"{where}: unexpected kind {kind!r}")


def main():
    folder = pathlib.Path(sys.argv[1])
    problems, count = [], 0
    files = sorted(folder.glob("*.yaml"))
    if not files:
        problems.append(f"{folder}: no manifests found")
    for path in files:
        try:
            docs = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
        except yaml.YAMLError as e:
            problems.append(f"{path}: not valid YAML: {e}")
            continue
        for i, doc in enumerate(docs):
            count += 1
            check_document(f"{path.name}[{i}]", doc, problems)
    for p in problems:
        print(p)
    print(f"{count} manifests checked, {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
