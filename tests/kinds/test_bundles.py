"""A job's file with the objects a `kubectl apply` of it creates beside the job (bundles)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MINIMAL_JOB, REPO
from trainjobs.cli import main
from trainjobs.deploy.component import _RESOURCE_CLASSES
from trainjobs.kinds.bundle import DEPLOYED_CLASSES
from trainjobs.kinds.registry import load_job

CORPUS = REPO / "tests" / "corpus"
ETCD_SERVICE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Service",
    "metadata": {"name": "etcd"},
    "spec": {"ports": [{"port": 2379}], "selector": {"app": "etcd"}},
}
ETCD_DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1",
    "kind": "Deployment",
    "metadata": {"name": "etcd", "namespace": "infra"},
    "spec": {
        "selector": {"matchLabels": {"app": "etcd"}},
        "template": {
            "metadata": {"labels": {"app": "etcd"}},
            "spec": {"containers": [{"name": "etcd", "image": "quay.io/coreos/etcd:v3.5.9"}]},
        },
    },
    "status": {"replicas": 1},
}


def bundle(tmp_path: Path, *documents: dict[str, Any]) -> Path:
    path = tmp_path / "bundle.yaml"
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("name", "first"),
    [
        (
            "mpijob-v2beta1-nvidia-k8s-dra-driver-gpu-nvbandwidth-computedomain.yaml",
            "ComputeDomain/nvbandwidth-test-compute-domain-1",
        ),
        (
            "mpijob-v2beta1-aws-awsome-distributed-training-nccl-tests-gb200-computedomain.yaml",
            "ComputeDomain/eks-nccl-test-compute-domain",
        ),
    ],
)
def test_real_files_with_a_compute_domain_render_it_before_the_job(name: str, first: str):
    job = load_job(CORPUS / name, "team")

    assert job.companions == (first,)
    assert job.graph.nodes[0].key == first
    assert job.graph.nodes[0].manifest["metadata"]["namespace"] == "team"
    assert all(first in node.depends_on for node in job.graph.nodes[1:])


def test_a_real_elastic_job_with_its_etcd_renders_the_service_and_deployment_first():
    name = "pytorchjob-v1-aws-awsome-distributed-training-cpu-ddp-fsdp-simple-etcd-bundle.yaml"
    job = load_job(CORPUS / name, "team")

    assert job.companions == ("Service/etcd", "Deployment/etcd")
    assert [node.key for node in job.graph.nodes[:2]] == list(job.companions)
    assert [node.manifest["metadata"]["namespace"] for node in job.graph.nodes[:2]] == [
        "team",
        "team",
    ]
    assert all(set(job.companions) <= set(node.depends_on) for node in job.graph.nodes[2:])


def test_companions_take_the_jobs_namespace_unless_they_name_one(tmp_path: Path):
    job = load_job(bundle(tmp_path, ETCD_SERVICE, ETCD_DEPLOYMENT, MINIMAL_JOB), "team")

    assert job.companions == ("Service/etcd", "Deployment/etcd")
    service, deployment = (node.manifest for node in job.graph.nodes[:2])
    assert service["metadata"] == {"name": "etcd", "namespace": "team"}
    assert deployment["metadata"] == {"name": "etcd", "namespace": "infra"}
    assert "status" not in deployment


def test_a_cluster_scoped_companion_gets_no_namespace(tmp_path: Path):
    priority = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass"}
    priority["metadata"] = {"name": "high"}
    job = load_job(bundle(tmp_path, priority, MINIMAL_JOB), "team")

    assert job.graph.nodes[0].manifest["metadata"] == {"name": "high"}


def test_render_writes_the_companions_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["render", str(bundle(tmp_path, MINIMAL_JOB, ETCD_SERVICE)), "--out", "-"]) == 0
    rendered = list(yaml.safe_load_all(capsys.readouterr().out))
    assert [d["kind"] for d in rendered[:2]] == ["Service", "ConfigMap"]
    assert rendered[0]["metadata"] == {"name": "etcd", "namespace": "default"}


@pytest.mark.parametrize(
    ("companion", "problems"),
    [
        (
            {"kind": "ConfigMap", "metadata": {"name": "cfg"}},
            [
                "items[0].apiVersion: required: a Kubernetes object beside the job needs its "
                "apiVersion (null)"
            ],
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}},
            ["items[0].metadata.name: required: the name ConfigMap is created under (null)"],
        ),
        (
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": 3}},
            [
                "items[0].metadata.namespace: must be a namespace's name (3); leave it out for the "
                "job's namespace"
            ],
        ),
        (
            {
                "apiVersion": "scheduling.k8s.io/v1",
                "kind": "PriorityClass",
                "metadata": {"name": "high"},
                "value": 1000,
            },
            [
                "items[0].value: PriorityClass 'high' is deployed as a pulumi-kubernetes "
                "CustomResource, which carries only metadata and spec; create it apart from the "
                "job (kubectl apply)"
            ],
        ),
    ],
    ids=["no-apiVersion", "no-name", "bad-namespace", "custom-resource-with-other-fields"],
)
def test_a_companion_that_is_no_kubernetes_object_names_the_document_and_field(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    companion: dict[str, Any],
    problems: list[str],
):
    assert main(["validate", str(bundle(tmp_path, companion, MINIMAL_JOB))]) == 2
    assert capsys.readouterr().err.splitlines()[1:] == [f"  {p}" for p in problems]


def test_a_second_job_in_the_file_is_still_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    other = copy.deepcopy(MINIMAL_JOB)
    other["metadata"]["name"] = "other"
    assert main(["validate", str(bundle(tmp_path, ETCD_SERVICE, MINIMAL_JOB, other))]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "  items: a List must hold exactly one job (got 2): one job per file"
    )


def test_a_misspelt_second_job_is_refused_not_deployed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    misspelt = copy.deepcopy(MINIMAL_JOB)
    misspelt.update(apiVersion="kubeflow.org/v1", kind="TfJob")
    assert main(["validate", str(bundle(tmp_path, MINIMAL_JOB, misspelt))]) == 2
    assert (
        capsys.readouterr()
        .err.splitlines()[1]
        .startswith(
            "  items[1].kind: 'TfJob' is no kubeflow.org kind trainjobs reads (one of ChainerJob, "
        )
    )


def test_a_companion_named_as_one_of_the_jobs_objects_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    clash = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "demo-assets"}}
    job = load_job(bundle(tmp_path, MINIMAL_JOB))
    assert "ConfigMap/demo-assets" in [node.key for node in job.graph.nodes]
    assert main(["validate", str(bundle(tmp_path, clash, MINIMAL_JOB))]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "  items[0].metadata.name: ConfigMap/demo-assets is given twice, or is one the "
        "ChainerJob creates itself; rename it"
    )


def test_every_kind_deployed_with_its_own_class_is_one_the_component_has():
    assert set(_RESOURCE_CLASSES) == DEPLOYED_CLASSES
