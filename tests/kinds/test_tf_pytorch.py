"""TFJob and PyTorchJob: Kubeflow's environment contract for every replica, exit-code rules,
success rules and validation."""

from __future__ import annotations

import copy
import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.cli import main
from components.core.replica_graph import PERMANENT_EXIT_CODES
from components.kinds.registry import JobDefinition, Workload, load_job, parse_job
from tests.conftest import REPO

TF_EXAMPLE = REPO / "jobs" / "tf-mnist.yaml"
PYTORCH_EXAMPLE = REPO / "jobs" / "pytorch-mnist.yaml"

PRINT_ENV = [
    "python3",
    "-c",
    "import json, os; print(json.dumps({k: os.environ.get(k) for k in "
    "['TF_CONFIG', 'RANK', 'WORLD_SIZE', 'MASTER_ADDR', 'MASTER_PORT', 'PYTHONUNBUFFERED']}))",
]


def load_example(path: Path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def definition(document: dict[str, Any]) -> JobDefinition:
    return parse_job(document, "job.yaml")


def manifest(job: JobDefinition, key: str) -> dict[str, Any]:
    return job.graph.get(key).manifest


def main_container(job: JobDefinition, key: str) -> dict[str, Any]:
    return manifest(job, key)["spec"]["template"]["spec"]["containers"][0]


def run_pod_process(job: JobDefinition, key: str, index: int, tmp_path: Path) -> dict[str, Any]:
    """Run a replica's container command on this machine as its pod would, with the pod's
    static env, the downward-API index, and the assets mounted (bootstrap.sh rewritten to the
    temp copy). Returns the environment the training process saw."""
    assets = manifest(job, f"ConfigMap/{job.name}-assets")["data"]
    bootstrap = tmp_path / "bootstrap.sh"
    bootstrap.write_text(assets["bootstrap.sh"])
    container = main_container(job, key)
    env = dict(os.environ)
    for item in container["env"]:
        env[item["name"]] = str(index) if "valueFrom" in item else item["value"]
    command = container["command"]
    assert command[:2] == ["sh", "/etc/trainjobs/bootstrap.sh"]
    result = subprocess.run(
        ["sh", str(bootstrap), *PRINT_ENV], env=env, capture_output=True, text=True, timeout=30
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


# TFJob


def test_tf_example_objects_in_creation_order():
    job = load_job(TF_EXAMPLE)
    assert [n.key for n in job.graph.nodes] == [
        "ConfigMap/tf-mnist-assets",
        "Service/tf-mnist",
        "StatefulSet/tf-mnist-ps",
        "Job/tf-mnist-worker",
        "Job/tf-mnist-chief",
    ]
    assert (job.completion_job, job.workers) == (
        "tf-mnist-chief",
        [Workload("Job", "tf-mnist-worker", 2), Workload("StatefulSet", "tf-mnist-ps", 1)],
    )


CLUSTER = {
    "chief": ["tf-mnist-chief-0.tf-mnist.default.svc:2222"],
    "ps": ["tf-mnist-ps-0.tf-mnist.default.svc:2222"],
    "worker": [
        "tf-mnist-worker-0.tf-mnist.default.svc:2222",
        "tf-mnist-worker-1.tf-mnist.default.svc:2222",
    ],
}


@pytest.mark.parametrize(
    ("key", "task_type", "index"),
    [
        ("Job/tf-mnist-chief", "chief", 0),
        ("Job/tf-mnist-worker", "worker", 0),
        ("Job/tf-mnist-worker", "worker", 1),
        ("StatefulSet/tf-mnist-ps", "ps", 0),
    ],
)
def test_every_tf_replica_gets_kubeflow_tf_config(tmp_path, key, task_type, index):
    job = load_job(TF_EXAMPLE)
    seen = run_pod_process(job, key, index, tmp_path)
    assert json.loads(seen["TF_CONFIG"]) == {
        "cluster": CLUSTER,
        "task": {"type": task_type, "index": index},
        "environment": "cloud",
    }


def test_tf_pods_learn_their_index_from_the_downward_api():
    job = load_job(TF_EXAMPLE)
    env = {e["name"]: e for e in main_container(job, "Job/tf-mnist-worker")["env"]}
    assert env["TRAINJOBS_REPLICA_INDEX"]["valueFrom"] == {
        "fieldRef": {
            "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        }
    }
    ps_env = {e["name"]: e for e in main_container(job, "StatefulSet/tf-mnist-ps")["env"]}
    assert ps_env["TRAINJOBS_REPLICA_INDEX"]["valueFrom"] == {
        "fieldRef": {"fieldPath": "metadata.labels['apps.kubernetes.io/pod-index']"}
    }


def test_tf_evaluator_gets_a_task_but_is_not_in_the_cluster(tmp_path):
    document = load_example(TF_EXAMPLE)
    document["spec"]["tfReplicaSpecs"]["Evaluator"] = copy.deepcopy(
        document["spec"]["tfReplicaSpecs"]["Worker"]
    ) | {"replicas": 1}
    seen = run_pod_process(definition(document), "Job/tf-mnist-evaluator", 0, tmp_path)
    assert json.loads(seen["TF_CONFIG"]) == {
        "cluster": CLUSTER,
        "task": {"type": "evaluator", "index": 0},
        "environment": "cloud",
    }


def test_single_replica_tf_job_gets_no_tf_config_and_keeps_its_command():
    document = load_example(TF_EXAMPLE)
    specs_ = document["spec"]["tfReplicaSpecs"]
    del specs_["Worker"], specs_["PS"]
    del specs_["Chief"]["template"]["spec"]["containers"][0]["command"]
    job = definition(document)
    container = main_container(job, "Job/tf-mnist-chief")
    assert "command" not in container
    assert manifest(job, "ConfigMap/tf-mnist-assets")["data"] == {}


def test_v1alpha1_tf_job_uses_the_design_docs_shape(tmp_path):
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicaSpecs": [
                {
                    "tfReplicaType": "MASTER",
                    "template": {"spec": {"containers": [{"image": "tf:1", "command": ["train"]}]}},
                },
                {
                    "tfReplicaType": "WORKER",
                    "replicas": 2,
                    "tfPort": 2222,
                    "template": {"spec": {"containers": [{"image": "tf:1", "command": ["train"]}]}},
                },
            ]
        },
    }
    job = definition(document)
    seen = run_pod_process(job, "Job/legacy-worker", 1, tmp_path)
    assert json.loads(seen["TF_CONFIG"]) == {
        "cluster": {
            "master": ["legacy-master-0.legacy.default.svc:2222"],
            "worker": [
                "legacy-worker-0.legacy.default.svc:2222",
                "legacy-worker-1.legacy.default.svc:2222",
            ],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }


def test_tf_workers_are_indexed_jobs_with_stable_hostnames():
    job = load_job(TF_EXAMPLE)
    spec = manifest(job, "Job/tf-mnist-worker")["spec"]
    assert (spec["completionMode"], spec["completions"], spec["parallelism"]) == ("Indexed", 2, 2)
    pod = spec["template"]["spec"]
    assert (pod["subdomain"], pod["restartPolicy"], pod["automountServiceAccountToken"]) == (
        "tf-mnist",
        "Never",
        False,
    )
    assert main_container(job, "Job/tf-mnist-worker")["ports"] == [
        {"name": "tfjob-port", "containerPort": 2222, "protocol": "TCP"}
    ]


def test_exit_codes_1_to_127_fail_the_job_and_others_are_retried():
    job = load_job(TF_EXAMPLE)
    policy = manifest(job, "Job/tf-mnist-chief")["spec"]["podFailurePolicy"]
    assert policy == {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": "tensorflow",
                    "operator": "In",
                    "values": list(range(1, 128)),
                },
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ]
    }
    assert 1 in PERMANENT_EXIT_CODES and 137 not in PERMANENT_EXIT_CODES
    assert manifest(job, "Job/tf-mnist-chief")["spec"]["backoffLimit"] == 2


def test_without_a_chief_worker_zero_succeeding_ends_the_job():
    document = load_example(TF_EXAMPLE)
    del document["spec"]["tfReplicaSpecs"]["Chief"]
    job = definition(document)
    assert job.completion_job == "tf-mnist-worker"
    assert manifest(job, "Job/tf-mnist-worker")["spec"]["successPolicy"] == {
        "rules": [{"succeededIndexes": "0"}]
    }
    assert job.workers == [Workload("StatefulSet", "tf-mnist-ps", 1)]


def test_parameter_servers_are_a_statefulset_scaled_down_at_the_end():
    job = load_job(TF_EXAMPLE)
    spec = manifest(job, "StatefulSet/tf-mnist-ps")["spec"]
    assert (spec["serviceName"], spec["replicas"], spec["podManagementPolicy"]) == (
        "tf-mnist",
        1,
        "Parallel",
    )
    assert Workload("StatefulSet", "tf-mnist-ps", 1) in job.workers


# PyTorchJob


def test_pytorch_example_objects_in_creation_order():
    job = load_job(PYTORCH_EXAMPLE)
    assert [n.key for n in job.graph.nodes] == [
        "ConfigMap/pytorch-mnist-assets",
        "Service/pytorch-mnist",
        "Service/pytorch-mnist-master-0",
        "Job/pytorch-mnist-worker",
        "Job/pytorch-mnist-master",
    ]
    assert job.completion_job == "pytorch-mnist-master"


@pytest.mark.parametrize(
    ("key", "index", "rank"),
    [("Job/pytorch-mnist-master", 0, "0"), ("Job/pytorch-mnist-worker", 0, "1")],
)
def test_every_pytorch_replica_gets_the_env_init_variables(tmp_path, key, index, rank):
    seen = run_pod_process(load_job(PYTORCH_EXAMPLE), key, index, tmp_path)
    assert seen == {
        "TF_CONFIG": None,
        "RANK": rank,
        "WORLD_SIZE": "2",
        "MASTER_ADDR": "pytorch-mnist-master-0",
        "MASTER_PORT": "23456",
        "PYTHONUNBUFFERED": "1",
    }


def test_pytorch_ranks_follow_worker_indexes(tmp_path):
    document = load_example(PYTORCH_EXAMPLE)
    document["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = 3
    job = definition(document)
    ranks = [
        run_pod_process(job, "Job/pytorch-mnist-worker", i, tmp_path)["RANK"] for i in range(3)
    ]
    assert ranks == ["1", "2", "3"]
    world = run_pod_process(job, "Job/pytorch-mnist-master", 0, tmp_path)["WORLD_SIZE"]
    assert world == "4"


def test_pytorch_master_service_listens_on_the_master_port():
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": "legacy"},
        "spec": {
            "backend": "nccl",
            "masterPort": 29500,
            "replicaSpecs": [
                {
                    "ReplicaType": "MASTER",
                    "template": {"spec": {"containers": [{"image": "pt:1", "command": ["train"]}]}},
                },
                {
                    "ReplicaType": "WORKER",
                    "replicas": 2,
                    "template": {"spec": {"containers": [{"image": "pt:1", "command": ["train"]}]}},
                },
            ],
        },
    }
    service = manifest(definition(document), "Service/legacy-master-0")["spec"]
    assert service == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {
            "training.kubeflow.org/job-name": "legacy",
            "training.kubeflow.org/replica-type": "master",
        },
        "ports": [{"name": "pytorchjob-port", "port": 29500, "targetPort": 29500}],
    }


# Validation


def tf_doc() -> dict[str, Any]:
    return load_example(TF_EXAMPLE)


def pt_doc() -> dict[str, Any]:
    return load_example(PYTORCH_EXAMPLE)


def legacy_pt_doc() -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": "legacy"},
        "spec": {
            "replicaSpecs": [
                {
                    "ReplicaType": "MASTER",
                    "template": {"spec": {"containers": [{"image": "pt:1", "command": ["t"]}]}},
                }
            ]
        },
    }


def with_(document: dict[str, Any], change) -> dict[str, Any]:
    change(document)
    return document


INVALID = [
    (
        "two-chiefs",
        with_(
            tf_doc(),
            lambda d: d["spec"]["tfReplicaSpecs"].update(
                Master=copy.deepcopy(d["spec"]["tfReplicaSpecs"]["Chief"])
            ),
        ),
        "spec.tfReplicaSpecs.Master: a TFJob has at most one chief; spec.tfReplicaSpecs.Chief is already the chief: remove one",
    ),
    (
        "unknown-tf-replica-type",
        with_(
            tf_doc(),
            lambda d: d["spec"]["tfReplicaSpecs"].update(
                Launcher=d["spec"]["tfReplicaSpecs"]["PS"]
            ),
        ),
        "spec.tfReplicaSpecs: unknown replica type 'Launcher'; use one of Chief, Master, PS, Worker, Evaluator",
    ),
    (
        "chief-replicas",
        with_(tf_doc(), lambda d: d["spec"]["tfReplicaSpecs"]["Chief"].update(replicas=2)),
        "spec.tfReplicaSpecs.Chief.replicas: must be 1 for the chief (got 2)",
    ),
    (
        "tf-missing-command",
        with_(
            tf_doc(),
            lambda d: d["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][
                0
            ].pop("command"),
        ),
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].command: required: trainjobs starts the process through /etc/trainjobs/bootstrap.sh, which sets TF_CONFIG for the replica's index; give the command the image would run",
    ),
    (
        "tf-restart-policy",
        with_(
            tf_doc(),
            lambda d: d["spec"]["tfReplicaSpecs"]["Worker"].update(restartPolicy="OnFailure"),
        ),
        "spec.tfReplicaSpecs.Worker.restartPolicy: 'OnFailure' is not supported; trainjobs applies 'ExitCode' (exit codes 1-127 fail the job, others are retried): omit the field",
    ),
    (
        "ps-only",
        with_(
            tf_doc(), lambda d: [d["spec"]["tfReplicaSpecs"].pop(k) for k in ("Chief", "Worker")]
        ),
        "spec: a TFJob needs a chief/master or workers: parameter servers and evaluators alone never finish",
    ),
    (
        "bad-backend",
        with_(legacy_pt_doc(), lambda d: d["spec"].update(backend="tcp")),
        "spec.backend: unknown backend 'tcp'; use one of gloo, nccl, mpi",
    ),
    (
        "master-port-out-of-range",
        with_(legacy_pt_doc(), lambda d: d["spec"].update(masterPort=70000)),
        "spec.masterPort: must be at most 65535 (got 70000)",
    ),
    (
        "pytorch-without-master",
        with_(pt_doc(), lambda d: d["spec"]["pytorchReplicaSpecs"].pop("Master")),
        "spec.pytorchReplicaSpecs.Master: a PyTorchJob needs exactly one MASTER replica",
    ),
    (
        "pytorch-two-masters",
        with_(pt_doc(), lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"].update(replicas=2)),
        "spec.pytorchReplicaSpecs.Master.replicas: must be 1 for the master (got 2); add workers instead",
    ),
    (
        "unknown-pytorch-replica-type",
        with_(legacy_pt_doc(), lambda d: d["spec"]["replicaSpecs"][0].update(ReplicaType="CHIEF")),
        "spec.replicaSpecs[0].ReplicaType: unknown replica type 'CHIEF'; use MASTER or WORKER",
    ),
    (
        "pytorch-unknown-field",
        with_(pt_doc(), lambda d: d["spec"]["runPolicy"].update(cleanPodPolicy="All")),
        "spec.runPolicy.cleanPodPolicy: unknown field 'cleanPodPolicy'; check the spelling (see crds/)",
    ),
    (
        "tf-name-too-long",
        with_(tf_doc(), lambda d: d["metadata"].update(name="t" * 58)),
        f"spec.tfReplicaSpecs.Chief: the derived Job name '{'t' * 58}-chief' is 64 characters; Kubernetes allows 63; shorten metadata.name",
    ),
    (
        "tf-unknown-api-version",
        with_(tf_doc(), lambda d: d.update(apiVersion="kubeflow.org/v2")),
        "apiVersion: must be one of kubeflow.org/v1alpha1, kubeflow.org/v1 for a TFJob (got 'kubeflow.org/v2')",
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_invalid_tf_and_pytorch_specs_give_field_path_errors(tmp_path, capsys, document, expected):
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document))
    out_dir = tmp_path / "out"
    assert main(["render", str(spec), "--out", str(out_dir)]) == 2
    stderr = capsys.readouterr().err
    assert f"  {expected}" in stderr.splitlines(), stderr
    assert "Traceback" not in stderr
    assert not out_dir.exists()
