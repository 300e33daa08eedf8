#!/usr/bin/env python3
"""Checks that every Kubernetes manifest under samples/k8s parses as YAML and
has the fields `kubectl apply --dry-run=client` requires of its kind.

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
    elif kind in REPLICA_SPECS:
        replicas = spec.get(REPLICA_SPECS[kind]) or {}
        if not replicas:
            problems.append(f"{where}: {kind} has no {REPLICA_SPECS[kind]}")
        for role, rs in replicas.items():
            check_pod_spec(f"{where} ({kind} {role})", (rs.get("template") or {}).get("spec"), problems)
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
