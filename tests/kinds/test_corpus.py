"""Real specs nobody here wrote (tests/corpus, each with its source): every one that the real
operator of its version ran renders unchanged, passes the strict schemas, keeps each
container's command and args, and gets exactly the environment that operator set; the rest
are refused with exit 2 and a line that names the field, the value and the fix.

The expected environment is worked out here, from the spec's raw YAML and the operators'
rules (TF_CONFIG's cluster of Service addresses, PyTorch's ranks), independently of
trainjobs' own code.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from trainjobs.cli import main
from trainjobs.core.jobset import child_jobs
from trainjobs.kinds.registry import JobDefinition, load_job

CORPUS = REPO / "tests" / "corpus"
# MPIJob, TrainJob, XGBoostJob, PaddleJob, JAXJob (and MXJob) specs have their own corpus test
# modules.
OWN_MODULES = ("mpijob-", "trainjob-", "xgboostjob-", "paddlejob-", "jaxjob-", "mxjob-")
FILES = sorted(p for p in CORPUS.glob("*.yaml") if not p.name.startswith(OWN_MODULES))

# The specs no operator of their version would run, and the first line trainjobs gives.
REFUSED = {
    "chainerjob-v1alpha1-kubeflow-chainer-operator-readme-gpu-snippet-ellipsis.yaml": (
        "not valid YAML: while scanning a simple key"
    ),
    "pytorchjob-kubedl-v1alpha1-alibaba-kubedl-mnist-mpi.yaml": (
        "apiVersion: must be one of kubeflow.org/v1alpha1, kubeflow.org/v1alpha2, "
        "kubeflow.org/v1beta1, kubeflow.org/v1beta2, kubeflow.org/v1 "
        "('training.kubedl.io/v1alpha1' is another project's PyTorchJob, not Kubeflow's)"
    ),
    "pytorchjob-v1-aws-awsome-distributed-training-llama3-1-8b-fsdp.yaml": (
        "spec.pytorchReplicaSpecs.Worker.replicas: must be a whole number (got '$NUM_NODES')"
    ),
    "pytorchjob-v1-kubeflow-katib-trial-template.yaml": "metadata.name: required: the job's name",
    "pytorchjob-v1-kubeflow-training-operator-config-sample-foo-bar.yaml": (
        "spec.pytorchReplicaSpecs: required: a Master and/or Workers"
    ),
    "pytorchjob-v1alpha1-kubeflow-community-kep33-alternative-worldsize.yaml": (
        "spec.replicaSpecs: required: a MASTER and WORKERs"
    ),
    "tfjob-kubedl-v1alpha1-alibaba-kubedl-hostnetwork-doc-snippet.yaml": (
        "not valid YAML: while scanning a simple key"
    ),
    "tfjob-kubedl-v1alpha1-alibaba-kubedl-mnist-cache.yaml": (
        "apiVersion: must be one of kubeflow.org/v1alpha1, kubeflow.org/v1alpha2, "
        "kubeflow.org/v1beta1, kubeflow.org/v1beta2, kubeflow.org/v1 "
        "('training.kubedl.io/v1alpha1' is another project's TFJob, not Kubeflow's)"
    ),
    "tfjob-mlkube-v1beta1-kubeflow-training-operator-design-doc-2017-fig1.yaml": (
        "kind: must be one of ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, "
        "PaddleJob, JAXJob (got 'TfJob'); XGBoost and JAX jobs also run as a TrainJob with the "
        "xgboost-distributed or jax-distributed runtime"
    ),
    "tfjob-v1-kubeflow-examples-mnist-kustomize-chief.yaml": (
        "metadata.name: '$(trainingName)' is not a valid job name: use lowercase letters, digits "
        "and '-', start with a letter and end with a letter or digit"
    ),
    "tfjob-v1-kubeflow-website-legacy-v1-managedby-multikueue.yaml": (
        "spec.tfReplicaSpecs: required: at least one replica type"
    ),
    "tfjob-v1-kubeflow-website-legacy-v1-scheduler-plugins-diff.yaml": (
        "not valid YAML: mapping values are not allowed here"
    ),
    "tfjob-v1-volcano-website-kubeflow-on-volcano-fstring.yaml": (
        "metadata.name: must be a string (got {'train_name': None})"
    ),
    "tfjob-v1alpha1-kubeflow-training-operator-helm-template-tf-job.yaml": (
        "not valid YAML: while constructing a mapping"
    ),
    "tfjob-v1alpha2-kubeflow-training-operator-quick-start-kubectl-output.yaml": (
        "spec.tfReplicaSpecs.PS.template.spec.containers: must have a container named "
        "'tensorflow' (got ['dist-mnist-ps']): Kubeflow puts the job's port and environment on "
        "it; rename the main container"
    ),
}
RENDERED = [path for path in FILES if path.name not in REFUSED]


def document(path: Path) -> dict[str, Any]:
    """The file's job (a file of several documents holds the objects it needs beside it)."""
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    if len(documents) > 1:
        return next(d for d in documents if d.get("kind") in REPLICA_SPECS)
    loaded = documents[0]
    return loaded["items"][0] if loaded.get("kind") == "List" else loaded


def test_the_corpus_holds_the_three_seeds_and_at_least_25_real_specs_that_run():
    assert {"seed-chainerjob.yaml", "seed-tfjob.yaml", "seed-pytorchjob.yaml"} <= {
        p.name for p in RENDERED
    }
    assert len(RENDERED) >= 25
    assert all(p.read_text().startswith("# source: https://github.com/") for p in FILES)


@pytest.mark.parametrize("path", [CORPUS / name for name in REFUSED], ids=list(REFUSED))
def test_a_spec_no_operator_would_run_is_refused_with_one_clear_line(path, capsys):
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[1].strip().startswith(REFUSED[path.name]), err
    assert "Traceback" not in err


@pytest.mark.parametrize("path", RENDERED, ids=[p.name for p in RENDERED])
def test_a_spec_its_operator_ran_renders_and_passes_the_strict_schemas(path, tmp_path):
    assert main(["render", str(path), "--out", str(tmp_path / "out")]) == 0
    job = load_job(path)
    assert [p for node in job.graph.nodes for p in schema_problems(node.manifest)] == []


# -- what each replica's containers get -----------------------------------------------------------

REPLICA_SPECS = {"TFJob": "tfReplicaSpecs", "PyTorchJob": "pytorchReplicaSpecs"}
DEFAULT_CONTAINER = {"TFJob": "tensorflow", "PyTorchJob": "pytorch"}
DEFAULT_PORT = {"TFJob": 2222, "PyTorchJob": 23456}
PORT_NAME = {"TFJob": "tfjob-port", "PyTorchJob": "pytorchjob-port"}


def job_name(doc: dict[str, Any]) -> str:
    """The name, or a generateName's prefix, which a stack uses as the name."""
    meta = doc["metadata"]
    return meta.get("name") or meta["generateName"].rstrip("-")


def replicas_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Lowercase replica type -> {replicas, template, port}, from the raw spec."""
    kind, version = doc["kind"], doc["apiVersion"].rsplit("/", 1)[1]
    if version == "v1alpha1":
        found = {}
        for entry in doc["spec"]["replicaSpecs"]:
            lowered = {key.lower(): value for key, value in entry.items()}
            kind_key = "tfreplicatype" if kind == "TFJob" else "replicatype"
            port = lowered.get("tfport" if kind == "TFJob" else "masterport")
            port = port or doc["spec"].get("masterPort") or DEFAULT_PORT[kind]
            found[(lowered.get(kind_key) or "MASTER").lower()] = {
                "replicas": lowered.get("replicas", 1),
                "template": lowered.get("template"),
                "port": int(port),
            }
        return found
    found = {}
    for key, spec in doc["spec"][REPLICA_SPECS[kind]].items():
        template = spec["template"]
        main = next(
            (c for c in template["spec"]["containers"] if c.get("name") == DEFAULT_CONTAINER[kind]),
            {},
        )
        ports = [p for p in main.get("ports") or [] if p.get("name") == PORT_NAME[kind]]
        found[key.lower()] = {
            "replicas": spec.get("replicas", 1),
            "template": template,
            "port": ports[0]["containerPort"] if ports else DEFAULT_PORT[kind],
        }
    return found


def expected_tf_config(doc: dict[str, Any], task_type: str, index: int) -> dict[str, Any]:
    version = doc["apiVersion"].rsplit("/", 1)[1]
    job, namespace = job_name(doc), doc["metadata"].get("namespace", "default")
    suffix = "" if version in ("v1alpha1", "v1alpha2") else f".{namespace}.svc"
    cluster = {
        kind: [f"{job}-{kind}-{i}{suffix}:{spec['port']}" for i in range(spec["replicas"])]
        for kind, spec in replicas_of(doc).items()
        if version == "v1" or kind != "evaluator"
    }
    return {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}


def expected_pytorch_env(doc: dict[str, Any], task_type: str, index: int) -> dict[str, str]:
    version = doc["apiVersion"].rsplit("/", 1)[1]
    job, replicas = job_name(doc), replicas_of(doc)
    total = sum(spec["replicas"] for spec in replicas.values())
    rank = index if task_type == "master" else index + 1
    if version != "v1":
        return {
            "MASTER_PORT": str(
                replicas["master"]["port"] if version != "v1alpha1" else replicas[task_type]["port"]
            ),
            "MASTER_ADDR": "localhost" if task_type == "master" else f"{job}-master-0",
            "WORLD_SIZE": str(total),
            "RANK": str(rank),
            "PYTHONUNBUFFERED": "0",
        }
    expected = {"PYTHONUNBUFFERED": "1"}
    nproc = doc["spec"].get("nprocPerNode")
    elastic = doc["spec"].get("elasticPolicy")
    if "master" in replicas:
        port = str(replicas["master"]["port"])
        expected.update(
            MASTER_PORT=port,
            PET_MASTER_PORT=port,
            MASTER_ADDR=f"{job}-master-0",
            PET_MASTER_ADDR=f"{job}-master-0",
            WORLD_SIZE=str(total * (int(nproc) if str(nproc).isdigit() else 1)),
            RANK=str(rank),
            PET_NODE_RANK=str(rank),
        )
    if nproc is not None or not (elastic or {}).get("nProcPerNode"):
        expected["PET_NPROC_PER_NODE"] = str(nproc or "auto")
    if elastic is None:
        expected["PET_NNODES"] = str(total)
        return expected
    workers = replicas["worker"]["replicas"]
    low = elastic.get("minReplicas", elastic.get("maxReplicas", workers))
    high = elastic.get("maxReplicas", elastic.get("minReplicas", workers))
    host = elastic.get("rdzvHost", f"{job}-worker-0")
    expected.update(
        PET_RDZV_ENDPOINT=f"{host}:{elastic.get('rdzvPort', replicas['worker']['port'])}",
        PET_RDZV_BACKEND=elastic.get("rdzvBackend", "c10d"),
        PET_NNODES=f"{low}:{high}",
    )
    if "maxRestarts" in elastic:
        expected["PET_MAX_RESTARTS"] = str(elastic["maxRestarts"])
    return expected


REPLICA_CASES = [
    (path, kind, index)
    for path in RENDERED
    if (doc := document(path))["kind"] in REPLICA_SPECS
    for kind, spec in replicas_of(doc).items()
    for index in range(spec["replicas"])
]


def workload(job: JobDefinition, name: str) -> dict[str, Any]:
    """The pod spec of a replica's workload; for a JobSet (Kueue), of the child Job its
    controller makes, with the env as the kubelet resolves it."""
    for node in job.graph.nodes:
        if node.kind == "JobSet":
            for child in child_jobs(node.manifest):
                if child["metadata"]["name"] == name:
                    return resolved(child["spec"]["template"])
        elif node.name == name and node.kind != "Service":
            return node.manifest["spec"]["template"]["spec"]
    raise AssertionError(f"no workload {name}")


def expand(text: str, values: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: defined variables replaced, $$ a literal $."""
    return re.sub(
        r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
        lambda m: "$" if m.group(0) == "$$" else values.get(m.group(1), m.group(0)),
        text,
    )


def resolved(template: dict[str, Any]) -> dict[str, Any]:
    """Env values as the kubelet gives them: annotation fieldRefs read, $(VAR) expanded."""
    annotations = template["metadata"]["annotations"]
    pod = copy.deepcopy(template["spec"])
    for container in pod["containers"]:
        values: dict[str, str] = {}
        for item in container.get("env", []):
            if "valueFrom" in item:
                path = item["valueFrom"]["fieldRef"]["fieldPath"]
                values[item["name"]] = annotations[path.split("'")[1]]
            else:
                values[item["name"]] = expand(item["value"], values)
        container["env"] = [{"name": name, "value": value} for name, value in values.items()]
    return pod


@pytest.mark.parametrize(
    ("path", "replica_type", "index"),
    REPLICA_CASES,
    ids=[f"{p.name}:{t}-{i}" for p, t, i in REPLICA_CASES],
)
def test_every_replica_keeps_its_commands_and_gets_exactly_its_operators_env(
    path, replica_type, index
):
    doc = document(path)
    spec = replicas_of(doc)[replica_type]
    job = load_job(path)
    pod = workload(job, f"{job_name(doc)}-{replica_type}-{index}")
    given = spec["template"]["spec"]["containers"] if spec["template"] else None
    if given is not None:
        for original, rendered in zip(given, pod["containers"], strict=True):
            assert (rendered.get("command"), rendered.get("args")) == (
                original.get("command"),
                original.get("args"),
            )
    version = doc["apiVersion"].rsplit("/", 1)[1]
    main_name = DEFAULT_CONTAINER[doc["kind"]]
    names = [c["name"] for c in pod["containers"]]
    main = names.index(main_name) if main_name in names else 0
    ours = {
        item["name"]: item["value"]
        for item in pod["containers"][main].get("env", [])
        if item["name"]
        in ("TF_CONFIG", "MASTER_PORT", "MASTER_ADDR", "WORLD_SIZE", "RANK", "PYTHONUNBUFFERED")
        or item["name"].startswith("PET_")
    }
    if doc["kind"] == "TFJob":
        total = sum(s["replicas"] for s in replicas_of(doc).values())
        if version == "v1" and total == 1:
            assert ours == {}
        else:
            assert json.loads(ours.pop("TF_CONFIG")) == expected_tf_config(doc, replica_type, index)
            assert ours == {}
    else:
        if version == "v1alpha1":
            rank = index if replica_type == "master" else index + 1
            tf_config = json.loads(ours.pop("TF_CONFIG"))
            assert tf_config["task"] == {"type": replica_type, "index": rank}
        assert ours == expected_pytorch_env(doc, replica_type, index)


# -- the labels of the operators of each spec's version ------------------------------------------

# Which label generations served each version (read at the operators' release tags):
# "underscore" tf-operator/pytorch-operator 0.2-0.4 (group_name, tf_job_name), "dash" 0.5 and on
# (group-name, tf-job-name), "common" tf-operator 1.0.1+ and training-operator 1.3-1.5 through
# kubeflow/common (group-name, job-name, replica-type, replica-index, job-role).
GENERATIONS = {
    ("TFJob", "v1alpha2"): ("underscore",),
    ("TFJob", "v1beta1"): ("underscore", "dash"),
    ("TFJob", "v1beta2"): ("underscore", "dash"),
    ("TFJob", "v1"): ("dash", "common"),
    ("PyTorchJob", "v1alpha2"): ("underscore",),
    ("PyTorchJob", "v1beta1"): ("underscore", "dash"),
    ("PyTorchJob", "v1beta2"): ("dash",),
    ("PyTorchJob", "v1"): ("dash", "common"),
}


def expected_operator_labels(doc: dict[str, Any], replica_type: str, index: int) -> dict[str, str]:
    kind, version = doc["kind"], doc["apiVersion"].rsplit("/", 1)[1]
    job, prefix = job_name(doc), "tf" if kind == "TFJob" else "pytorch"
    if version == "v1alpha1":
        rank = index + 1 if kind == "PyTorchJob" and replica_type == "worker" else index
        return {
            "kubeflow.org": "",
            "job_type": replica_type.upper(),
            f"{prefix}_job_name": job,
            "task_index": str(rank),
        }
    types = replicas_of(doc)
    chief = next((t for t in ("chief", "master") if t in types), None)
    master_role = replica_type == chief if chief else (replica_type, index) == ("worker", 0)
    labels = {f"{prefix}-replica-type": replica_type, f"{prefix}-replica-index": str(index)}
    for generation in GENERATIONS[(kind, version)]:
        if generation == "underscore":
            labels |= {"group_name": "kubeflow.org", f"{prefix}_job_name": job}
            if master_role and version != "v1alpha2":
                labels[f"{prefix}_job_role"] = "master"
        elif generation == "dash":
            labels |= {"group-name": "kubeflow.org", f"{prefix}-job-name": job}
            if master_role:
                labels[f"{prefix}-job-role"] = "master"
        else:
            labels |= {"group-name": "kubeflow.org", "job-name": job}
            labels |= {"replica-type": replica_type, "replica-index": str(index)}
            if master_role:
                labels["job-role"] = "master"
    return labels


UNQUEUED_CASES = [
    case
    for case in REPLICA_CASES
    if "kueue.x-k8s.io/queue-name" not in (document(case[0])["metadata"].get("labels") or {})
]


@pytest.mark.parametrize(
    ("path", "replica_type", "index"),
    UNQUEUED_CASES,
    ids=[f"{p.name}:{t}-{i}" for p, t, i in UNQUEUED_CASES],
)
def test_every_replica_carries_the_labels_of_its_versions_operators(path, replica_type, index):
    doc = document(path)
    job = load_job(path)
    name = f"{job_name(doc)}-{replica_type}-{index}"
    node = next(n for n in job.graph.nodes if n.name == name and n.kind != "Service")
    given = node.manifest["spec"]["template"]["metadata"]["labels"]
    ours = {
        key: value
        for key, value in given.items()
        if not key.startswith(("training.kubeflow.org/", "app.kubernetes.io/"))
    }
    template = replicas_of(doc)[replica_type]["template"] or {}
    # The job's own labels and the template's stay on the pod as written.
    user = {
        **(doc["metadata"].get("labels") or {}),
        **((template.get("metadata") or {}).get("labels") or {}),
    }
    for key in user.keys() - expected_operator_labels(doc, replica_type, index).keys():
        ours.pop(key, None)
    assert ours == expected_operator_labels(doc, replica_type, index)
