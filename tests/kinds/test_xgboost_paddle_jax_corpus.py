"""Real XGBoostJob, PaddleJob and JAXJob specs (tests/corpus, each with its source), and an
MXJob: every one training-operator v1.9 runs renders, passes the strict schemas, keeps each
container's command and args, and gets exactly the environment that operator sets, on every
container; the rest are refused with the operator's reason.

The expected environment is worked out here from the spec's raw YAML and the operator's rules
(training-operator v1.9.0, ``pkg/controller.v1/{xgboost,paddlepaddle,jax}/``), independently
of trainjobs' own code.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import schema_problems
from tests.kinds.test_corpus import CORPUS, document, job_name, workload
from trainjobs.cli import main
from trainjobs.kinds.registry import load_job

FILES = sorted(
    p for p in CORPUS.glob("*.yaml") if p.name.startswith(("xgboostjob-", "paddlejob-", "jaxjob-"))
)

REFUSED = {
    "xgboostjob-v1-kubeflow-katib-trialspec-lightgbm.yaml": "metadata.name: required: the job's name",
    "xgboostjob-xgboostjob-v1-kubeflow-xgboost-operator-iris-train.yaml": (
        "apiVersion: 'xgboostjob.kubeflow.org/v1' is kubeflow/xgboost-operator's API group "
        "(archived); training-operator serves XGBoostJob as kubeflow.org/v1 with the same "
        "xgbReplicaSpecs: write apiVersion: kubeflow.org/v1 and name the main containers "
        "'xgboost' (xgboost-operator named them 'xgboostjob')"
    ),
    "xgboostjob-xgboostjob-v1alpha1-kubeflow-xgboost-operator-iris-train.yaml": (
        "apiVersion: 'xgboostjob.kubeflow.org/v1alpha1' is kubeflow/xgboost-operator's API "
        "group (archived); training-operator serves XGBoostJob as kubeflow.org/v1 with the "
        "same xgbReplicaSpecs: write apiVersion: kubeflow.org/v1 and name the main containers "
        "'xgboost' (xgboost-operator named them 'xgboostjob')"
    ),
    "jaxjob-v1-kubeflow-trainer-kep2145-jax-worker-container.yaml": (
        "spec.jaxReplicaSpecs.Worker.template.spec.containers: must have a container named "
        "'jax' (got ['jax-worker']): Kubeflow puts the job's port and environment on it; "
        "rename the main container"
    ),
    "mxjob-v1-kubeflow-trainer-v1-8-mxjob-dist.yaml": (
        "kind: MXJob is retired: Kubeflow's training-operator deprecated it in v1.8 and "
        "removed it in v1.9 (Apache MXNet itself was retired to the Apache Attic in 2023), so "
        "no operator runs it any more; port the training to PyTorch and write a PyTorchJob, or "
        "a TrainJob with the torch-distributed runtime"
    ),
}
RENDERED = [p for p in FILES if p.name not in REFUSED]

# Per kind (xgboost_types.go, paddlepaddle_types.go, jax_types.go): the replica map, the
# default container, its port's name and default number.
KINDS = {
    "XGBoostJob": ("xgbReplicaSpecs", "xgboost", "xgboostjob-port", 9999),
    "PaddleJob": ("paddleReplicaSpecs", "paddle", "master", 36543),
    "JAXJob": ("jaxReplicaSpecs", "jax", "jaxjob-port", 6666),
}
OPERATOR_ENV = {
    "XGBoostJob": (
        "MASTER_PORT",
        "MASTER_ADDR",
        "WORLD_SIZE",
        "RANK",
        "PYTHONUNBUFFERED",
        "WORKER_PORT",
        "WORKER_ADDRS",
    ),
    "PaddleJob": (
        "PYTHONUNBUFFERED",
        "PADDLE_JOB_ID",
        "PADDLE_NNODES",
        "POD_IP_DUMMY",
        "PADDLE_MASTER",
        "PADDLE_SERVER_NUM",
        "PADDLE_TRAINER_NUM",
    ),
    "JAXJob": (
        "PYTHONUNBUFFERED",
        "COORDINATOR_PORT",
        "COORDINATOR_ADDRESS",
        "NUM_PROCESSES",
        "PROCESS_ID",
    ),
}


def replicas_of(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Lowercase replica type -> {replicas, template, port}, from the raw spec."""
    key, container, port_name, default_port = KINDS[doc["kind"]]
    found = {}
    for replica_type, spec in doc["spec"][key].items():
        main = next(c for c in spec["template"]["spec"]["containers"] if c.get("name") == container)
        ports = [p for p in main.get("ports") or [] if p.get("name") == port_name]
        found[replica_type.lower()] = {
            "replicas": spec.get("replicas", 1),
            "template": spec["template"],
            "port": ports[0]["containerPort"] if ports else default_port,
        }
    return found


def queued(doc: dict[str, Any]) -> bool:
    return "kueue.x-k8s.io/queue-name" in (doc["metadata"].get("labels") or {})


def expected_env(doc: dict[str, Any], replica_type: str, index: int) -> list[dict[str, Any]]:
    job, replicas = job_name(doc), replicas_of(doc)
    total = sum(spec["replicas"] for spec in replicas.values())
    if doc["kind"] == "XGBoostJob":  # xgboost.go, SetPodEnv
        rank = index if replica_type == "master" else index + replicas["master"]["replicas"]
        env = {
            "MASTER_PORT": str(replicas["master"]["port"]),
            "MASTER_ADDR": f"{job}-master-0",
            "WORLD_SIZE": str(total),
            "RANK": str(rank),
            "PYTHONUNBUFFERED": "1",
        }
        if total > 1:
            env["WORKER_PORT"] = str(replicas["worker"]["port"])
            env["WORKER_ADDRS"] = ",".join(f"{job}-worker-{i}" for i in range(total - 1))
        return [{"name": name, "value": value} for name, value in env.items()]
    if doc["kind"] == "JAXJob":  # jax/envvar.go, setPodEnv
        env = {
            "PYTHONUNBUFFERED": "1",
            "COORDINATOR_PORT": str(replicas["worker"]["port"]),
            "COORDINATOR_ADDRESS": f"{job}-worker-0",
            "NUM_PROCESSES": str(total),
            "PROCESS_ID": str(index),
        }
        return [{"name": name, "value": value} for name, value in env.items()]
    # paddlepaddle/envvar.go, setPodEnv: the launchers meet at the Master, else Worker 0.
    leader = "master" if "master" in replicas else "worker"
    port = replicas[leader]["port"]
    items: list[dict[str, Any]] = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PADDLE_JOB_ID", "value": job},
        {"name": "PADDLE_NNODES", "value": str(total)},
    ]
    if (replica_type, index) == (leader, 0) and not queued(doc):
        items.append(
            {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
        )
        items.append({"name": "PADDLE_MASTER", "value": f"$(POD_IP_DUMMY):{port}"})
    else:
        # Queued, the leader's first pod shares its type's template: its own Service's name.
        items.append({"name": "PADDLE_MASTER", "value": f"{job}-{leader}-0:{port}"})
    if "master" in replicas:
        name = "PADDLE_SERVER_NUM" if replica_type == "master" else "PADDLE_TRAINER_NUM"
        items.append({"name": name, "value": "1"})
    return items


CASES = [
    (path, replica_type, index)
    for path in RENDERED
    for replica_type, spec in replicas_of(document(path)).items()
    for index in range(spec["replicas"])
]


def test_the_corpus_holds_real_specs_of_each_kind_from_several_repositories():
    sources = {
        kind: {
            path.read_text().split("github.com/")[1].split("/blob/")[0]
            for path in RENDERED
            if document(path)["kind"] == kind
        }
        for kind in KINDS
    }
    assert sources == {
        "XGBoostJob": {"kubeflow/trainer", "kubernetes-sigs/kueue", "kubeflow/website"},
        "PaddleJob": {"kubeflow/trainer", "kubernetes-sigs/kueue", "kubeflow/website"},
        "JAXJob": {"kubeflow/trainer", "kubernetes-sigs/kueue", "kubeflow/website"},
    }
    assert len(RENDERED) == 16


@pytest.mark.parametrize("path", [CORPUS / name for name in REFUSED], ids=list(REFUSED))
def test_a_spec_the_operator_would_not_run_is_refused_with_its_reason(path: Path, capsys):
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[1].strip() == REFUSED[path.name]
    assert "Traceback" not in err


@pytest.mark.parametrize("path", RENDERED, ids=[p.name for p in RENDERED])
def test_a_spec_the_operator_runs_renders_and_passes_the_strict_schemas(path: Path, tmp_path):
    assert main(["render", str(path), "--out", str(tmp_path / "out")]) == 0
    job = load_job(path)
    assert [p for node in job.graph.nodes for p in schema_problems(node.manifest)] == []


@pytest.mark.parametrize(
    ("path", "replica_type", "index"), CASES, ids=[f"{p.name}:{t}-{i}" for p, t, i in CASES]
)
def test_every_container_keeps_its_command_and_gets_exactly_the_operators_env(
    path: Path, replica_type: str, index: int
):
    doc = document(path)
    given = replicas_of(doc)[replica_type]["template"]["spec"]["containers"]
    job = load_job(path)
    pod = workload(job, f"{job_name(doc)}-{replica_type}-{index}")
    assert len(pod["containers"]) == len(given)
    for original, rendered in zip(given, pod["containers"], strict=True):
        assert (rendered.get("command"), rendered.get("args")) == (
            original.get("command"),
            original.get("args"),
        )
        ours = [item for item in rendered["env"] if item["name"] in OPERATOR_ENV[doc["kind"]]]
        if queued(doc):  # the kubelet's view: every value resolved
            assert ours == [
                {"name": item["name"], "value": item["value"]}
                for item in expected_env(doc, replica_type, index)
            ]
        else:
            assert ours == expected_env(doc, replica_type, index)


@pytest.mark.parametrize("path", RENDERED, ids=[p.name for p in RENDERED])
def test_the_replica_the_operator_watches_decides_the_jobs_success(path: Path):
    doc = document(path)
    job, name, replicas = load_job(path), job_name(doc), replicas_of(doc)
    # XGBoostJob and PaddleJob with a Master: the Master (UpdateJobStatus); else every Worker.
    deciding = "master" if "master" in replicas else "worker"
    assert job.success_jobs == tuple(
        f"{name}-{deciding}-{i}" for i in range(replicas[deciding]["replicas"])
    )
    assert job.success_any is False
    assert job.clean_pod_policy == (
        (doc["spec"].get("runPolicy") or {}).get("cleanPodPolicy") or "None"
    )


@pytest.mark.parametrize(
    ("path", "replica_type", "index"),
    [c for c in CASES if not queued(document(c[0]))],
    ids=[f"{p.name}:{t}-{i}" for p, t, i in CASES if not queued(document(p))],
)
def test_every_pod_carries_training_operators_labels(path: Path, replica_type: str, index: int):
    doc = document(path)
    name = f"{job_name(doc)}-{replica_type}-{index}"
    job = load_job(path)
    node = next(n for n in job.graph.nodes if n.name == name and n.kind != "Service")
    labels = node.manifest["spec"]["template"]["metadata"]["labels"]
    ours = {k: v for k, v in labels.items() if k.startswith("training.kubeflow.org/")}
    expected = {
        "training.kubeflow.org/job-name": job_name(doc),
        "training.kubeflow.org/replica-type": replica_type,
        "training.kubeflow.org/replica-index": str(index),
    }
    # Each controller's IsMasterRole (training-operator v1.9, pkg/controller.v1/<kind>):
    # XGBoostJob's and PaddleJob's Master only (a PaddleJob of Workers alone has none);
    # JAXJob's pod of index 0.
    if (doc["kind"] == "JAXJob" and index == 0) or replica_type == "master":
        expected["training.kubeflow.org/job-role"] = "master"
    assert ours == expected
