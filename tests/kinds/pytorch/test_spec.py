"""PyTorchJob: every released version read as its operator ran it: the environment on each
pod, exactly and in the operator's order; torchrun's elastic variables; what is refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.kinds.registry import JobDefinition, parse_job

CORPUS = REPO / "tests" / "corpus"


def container(name: str = "pytorch", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "pt:1", **fields}


def replica(replicas: int = 1, **fields: Any) -> dict[str, Any]:
    return {"replicas": replicas, "template": {"spec": {"containers": [container()]}}, **fields}


def pytorchjob(version: str = "v1", **replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {
            "pytorchReplicaSpecs": replica_specs or {"Master": replica(), "Worker": replica(2)}
        },
    }


def parse(document: dict[str, Any]) -> JobDefinition:
    return parse_job(document, "job.yaml")


def env(job: JobDefinition, name: str, index: int = 0) -> list[tuple[str, str]]:
    containers = job.graph.get(name).manifest["spec"]["template"]["spec"]["containers"]
    return [(item["name"], item["value"]) for item in containers[index].get("env", [])]


# -- v1 (training-operator 1.8-1.9) -------------------------------------------------------------


def test_v1_master_env_in_the_operators_order():
    assert env(parse(pytorchjob()), "Job/pt-master-0") == [
        ("PYTHONUNBUFFERED", "1"),
        ("MASTER_PORT", "23456"),
        ("PET_MASTER_PORT", "23456"),
        ("MASTER_ADDR", "pt-master-0"),
        ("PET_MASTER_ADDR", "pt-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "0"),
        ("PET_NODE_RANK", "0"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_NNODES", "3"),
    ]


@pytest.mark.parametrize(("index", "rank"), [(0, "1"), (1, "2")])
def test_v1_worker_i_has_rank_i_plus_1(index, rank):
    variables = dict(env(parse(pytorchjob()), f"Job/pt-worker-{index}"))
    assert (variables["RANK"], variables["PET_NODE_RANK"], variables["MASTER_ADDR"]) == (
        rank,
        rank,
        "pt-master-0",
    )


def test_v1_env_goes_on_every_container_of_the_pod():
    document = pytorchjob()
    document["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"].append(
        container("sidecar")
    )
    job = parse(document)
    assert env(job, "Job/pt-worker-0", 1) == env(job, "Job/pt-worker-0", 0)


def test_v1_nproc_per_node_multiplies_the_world_size():
    document = pytorchjob()
    document["spec"]["nprocPerNode"] = "4"
    variables = dict(env(parse(document), "Job/pt-worker-1"))
    assert (variables["WORLD_SIZE"], variables["PET_NPROC_PER_NODE"]) == ("12", "4")


@pytest.mark.parametrize("nproc", ["\u00b2", "\u0663", "auto"])
def test_v1_nproc_per_node_of_other_than_ascii_digits_counts_one_process(nproc):
    """As Go's strconv.Atoi reads it: '\u00b2' was a ValueError, '\u0663' counted 3."""
    document = pytorchjob()
    document["spec"]["nprocPerNode"] = nproc
    variables = dict(env(parse(document), "Job/pt-worker-1"))
    assert (variables["WORLD_SIZE"], variables["PET_NPROC_PER_NODE"]) == ("3", nproc)


def test_v1_a_custom_master_port_is_master_port_everywhere():
    ports = [{"name": "pytorchjob-port", "containerPort": 24456}]
    document = pytorchjob(
        Master=replica(template={"spec": {"containers": [container(ports=ports)]}}),
        Worker=replica(),
    )
    job = parse(document)
    assert dict(env(job, "Job/pt-worker-0"))["MASTER_PORT"] == "24456"
    assert job.graph.get("Service/pt-master-0").manifest["spec"]["ports"] == [
        {"name": "pytorchjob-port", "port": 24456}
    ]


def test_v1_restart_policy_defaults_to_on_failure():
    spec = parse(pytorchjob()).graph.get("Job/pt-worker-0").manifest["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "OnFailure"


def test_v1_early_top_level_clean_pod_policy_is_read():
    document = pytorchjob()
    document["spec"]["cleanPodPolicy"] = "All"
    assert parse(document).clean_pod_policy == "All"


# -- torchrun: elastic and Worker-only jobs -----------------------------------------------------


def elastic(**policy: Any) -> dict[str, Any]:
    document = pytorchjob(Worker=replica(2))
    document["spec"]["elasticPolicy"] = policy
    return document


def test_elastic_workers_get_torchruns_variables_and_no_ranks():
    job = parse(elastic(rdzvBackend="c10d", minReplicas=1, maxReplicas=3, maxRestarts=100))
    assert env(job, "Job/pt-worker-1") == [
        ("PYTHONUNBUFFERED", "1"),
        ("PET_NPROC_PER_NODE", "auto"),
        ("PET_RDZV_ENDPOINT", "pt-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "1:3"),
        ("PET_MAX_RESTARTS", "100"),
    ]


def test_elastic_min_and_max_default_to_the_worker_count():
    variables = dict(env(parse(elastic()), "Job/pt-worker-0"))
    assert (variables["PET_NNODES"], variables["PET_RDZV_BACKEND"]) == ("2:2", "c10d")


def test_elastic_rendezvous_settings_are_passed_through():
    policy = {
        "rdzvHost": "etcd",
        "rdzvPort": 2379,
        "rdzvBackend": "etcd-v2",
        "rdzvId": "run-1",
        "rdzvConf": [{"key": "timeout", "value": "900"}, {"key": "read_timeout", "value": "60"}],
        "standalone": True,
    }
    assert env(parse(elastic(**policy)), "Job/pt-worker-0")[2:] == [
        ("PET_RDZV_ENDPOINT", "etcd:2379"),
        ("PET_RDZV_BACKEND", "etcd-v2"),
        ("PET_NNODES", "2:2"),
        ("PET_RDZV_ID", "run-1"),
        ("PET_RDZV_CONF", "timeout=900,read_timeout=60"),
        ("PET_STANDALONE", "1"),
    ]


def test_the_deprecated_elastic_nproc_per_node_is_honoured_with_a_warning():
    job = parse(elastic(nProcPerNode=2))
    assert env(job, "Job/pt-worker-0")[1:] == [
        ("PET_RDZV_ENDPOINT", "pt-worker-0:23456"),
        ("PET_RDZV_BACKEND", "c10d"),
        ("PET_NNODES", "2:2"),
        ("PET_NPROC_PER_NODE", "2"),
    ]
    assert [str(w) for w in job.warnings] == [
        "spec.elasticPolicy.nProcPerNode: deprecated since training-operator 1.7: use "
        "spec.nprocPerNode"
    ]


def test_a_worker_only_job_succeeds_when_every_worker_does_an_elastic_one_when_any_does():
    plain = parse(pytorchjob(Worker=replica(2)))
    assert (plain.success_jobs, plain.success_any) == (("pt-worker-0", "pt-worker-1"), False)
    torchrun = parse(elastic())
    assert (torchrun.success_jobs, torchrun.success_any) == (("pt-worker-0", "pt-worker-1"), True)


def test_worker_0_has_the_master_role_without_a_master():
    labels = parse(elastic()).graph.get("Job/pt-worker-0").manifest["spec"]["template"]["metadata"]
    assert labels["labels"]["training.kubeflow.org/job-role"] == "master"


# -- before v1 ----------------------------------------------------------------------------------


def test_v1beta2_env_has_localhost_on_the_master_and_pythonunbuffered_0():
    job = parse(pytorchjob("v1beta2"))
    assert env(job, "Job/pt-master-0") == [
        ("MASTER_PORT", "23456"),
        ("MASTER_ADDR", "localhost"),
        ("WORLD_SIZE", "3"),
        ("RANK", "0"),
        ("PYTHONUNBUFFERED", "0"),
    ]
    assert env(job, "Job/pt-worker-1") == [
        ("MASTER_PORT", "23456"),
        ("MASTER_ADDR", "pt-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PYTHONUNBUFFERED", "0"),
    ]


def seed() -> dict[str, Any]:
    return yaml.safe_load((CORPUS / "seed-pytorchjob.yaml").read_text())


def test_the_proposals_example_renders_its_first_containers_with_the_env():
    job = parse(seed())
    assert env(job, "Job/example-job-worker-1") == [
        (
            "TF_CONFIG",
            '{"cluster":{"master":["example-job-master-0:23456"],"worker":['
            '"example-job-worker-0:23456","example-job-worker-1:23456"]},'
            '"task":{"type":"worker","index":2},"environment":"cloud"}',
        ),
        ("MASTER_PORT", "23456"),
        ("MASTER_ADDR", "example-job-master-0"),
        ("WORLD_SIZE", "3"),
        ("RANK", "2"),
        ("PYTHONUNBUFFERED", "0"),
    ]
    assert [str(w) for w in job.warnings] == [
        "spec.replicaSpecs[0].template.spec.containers: no container is named 'pytorch': the "
        "released operator refused this, the design this version follows did not; the first "
        "container, 'master', gets the job's environment",
        "spec.replicaSpecs[1].template.spec.containers: no container is named 'pytorch': the "
        "released operator refused this, the design this version follows did not; the first "
        "container, 'worker', gets the job's environment",
    ]


def test_v1alpha1_as_shipped_spells_replica_type_in_camel_case_and_ignores_backend():
    document = seed()
    document["spec"]["backend"] = "tcp"
    for entry in document["spec"]["replicaSpecs"]:
        entry["replicaType"] = entry.pop("ReplicaType")
    assert parse(document).success_jobs == ("example-job-master-0",)


# -- refused ------------------------------------------------------------------------------------


def refused(document: dict[str, Any], tmp_path: Any, capsys: Any) -> list[str]:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [
        line.strip() for line in err.splitlines()[1:] if not line.strip().startswith("warning:")
    ]


def lowercase_master() -> dict[str, Any]:
    return pytorchjob(master=replica(), Worker=replica())


def elastic_with_both_nprocs() -> dict[str, Any]:
    document = elastic(nProcPerNode=2)
    document["spec"]["nprocPerNode"] = "2"
    return document


INVALID = [
    (
        "lowercase-key",
        lowercase_master(),
        [
            "spec.pytorchReplicaSpecs.master: 'master' is not a PyTorchJob replica type: write 'Master'"
        ],
    ),
    (
        "two-masters",
        pytorchjob(Master=replica(2)),
        ["spec.pytorchReplicaSpecs.Master.replicas: must be 1 (got 2); add Workers instead"],
    ),
    (
        "no-master-before-v1",
        pytorchjob("v1beta1", Worker=replica()),
        ["spec.pytorchReplicaSpecs.Master: required in v1beta1: add a Master"],
    ),
    (
        "elastic-without-workers",
        {
            **pytorchjob(Master=replica()),
            "spec": {**pytorchjob(Master=replica())["spec"], "elasticPolicy": {}},
        },
        [
            "spec.pytorchReplicaSpecs.Worker: required with elasticPolicy: torchrun's rendezvous "
            "runs on the Workers"
        ],
    ),
    (
        "both-nproc-fields",
        elastic_with_both_nprocs(),
        [
            "spec.elasticPolicy.nProcPerNode: must not be used with spec.nprocPerNode: keep spec.nprocPerNode"
        ],
    ),
    (
        "unknown-rendezvous-backend",
        elastic(rdzvBackend="zookeeper"),
        [
            "spec.elasticPolicy.rdzvBackend: must be one of c10d, etcd, etcd-v2 (got 'zookeeper'), "
            "the rendezvous backends torchrun knows"
        ],
    ),
    (
        "min-above-max",
        elastic(minReplicas=3, maxReplicas=2),
        ["spec.elasticPolicy: minReplicas must be at least 1 and at most maxReplicas (got 3:2)"],
    ),
    (
        "no-pytorch-container",
        pytorchjob(Master={"template": {"spec": {"containers": [container("trainer")]}}}),
        [
            "spec.pytorchReplicaSpecs.Master.template.spec.containers: must have a container "
            "named 'pytorch' (got ['trainer']): Kubeflow puts the job's port and environment on "
            "it; rename the main container"
        ],
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_a_spec_the_operator_would_refuse_is_refused_naming_field_value_and_fix(
    tmp_path, capsys, document, expected
):
    assert refused(copy.deepcopy(document), tmp_path, capsys) == expected
