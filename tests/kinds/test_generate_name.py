"""``metadata.generateName`` in place of a name, for every kind: the API server would append a
random suffix on each create; a stack names its objects once, so the job takes the prefix
(without its trailing dash) as its name, and a warning says so."""

from __future__ import annotations

from typing import Any

import pytest

from trainjobs.kinds.registry import parse_job


def pod(container: str) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": container, "image": "example.com/train:1"}]}}


JOBS: dict[str, dict[str, Any]] = {
    "TrainJob": {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "spec": {"runtimeRef": {"name": "torch-distributed"}},
    },
    "ChainerJob": {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "spec": {"master": {"template": pod("chainer")}},
    },
    "MPIJob": {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "spec": {"mpiReplicaSpecs": {"Launcher": {"template": pod("mpi")}}},
    },
    "TFJob": {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "spec": {"tfReplicaSpecs": {"Worker": {"replicas": 1, "template": pod("tensorflow")}}},
    },
    "PyTorchJob": {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": pod("pytorch")}}},
    },
}


@pytest.mark.parametrize("kind", sorted(JOBS))
def test_a_generated_name_is_the_prefix_with_a_warning(kind):
    document = {**JOBS[kind], "metadata": {"generateName": "train-"}}

    job = parse_job(document, "job.yaml")

    assert job.name == "train"
    assert [str(w) for w in job.warnings][:1] == [
        "metadata.generateName: a stack creates its job once, under fixed names: the job is "
        "named 'train'"
    ]
