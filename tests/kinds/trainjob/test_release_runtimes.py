"""The default runtimes of every Kubeflow Trainer release from v2.0, each with its own content
(``manifests/base/runtimes`` at each release tag), the latest selected unless told."""

from __future__ import annotations

import copy

import pytest

from tests.kinds.trainjob.test_scheduling_plugins import beside
from tests.kinds.trainjob.test_trainjob import RUNTIME, node_container, trainjob
from trainjobs.core.errors import SpecError
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import parse_job
from trainjobs.kinds.trainjob import runtimes


def anchor(job) -> str:
    return next(m for m in job.graph.manifests() if m["kind"] == "ConfigMap")["data"]["runtime"]


def test_every_release_from_v2_0_has_its_runtimes():
    assert all(runtimes.shipped(release) for release in runtimes.RELEASES)
    assert runtimes.RELEASES == ("v2.0.0", "v2.0.1", "v2.1.0", "v2.2.0", "v2.2.1", "v2.3.0")
    assert [r.name for r in runtimes.shipped("v2.0.0")] == [
        "deepspeed-distributed",
        "mlx-distributed",
        "mpi-distributed",
        "torch-distributed",
    ]
    assert [r.name for r in runtimes.shipped("v2.1.0")] == [
        "deepspeed-distributed",
        "mlx-distributed",
        "torch-distributed",
    ]
    assert [r.name for r in runtimes.shipped()] == [
        "deepspeed-distributed",
        "mlx-distributed",
        "torch-distributed",
        "jax-distributed",
        "xgboost-distributed",
    ]


def test_the_selected_release_gives_the_runtime_its_content():
    job = parse_job(
        trainjob(command=["torchrun", "t.py"]),
        "tj.yaml",
        options=GraphOptions(trainer_version="v2.0.0"),
    )

    assert anchor(job) == "ClusterTrainingRuntime/torch-distributed (Kubeflow Trainer v2.0.0)"


def test_a_runtime_only_an_earlier_release_shipped_is_found_there_with_a_warning():
    job = parse_job(trainjob("mpi-distributed", command=["mpirun", "t"]), "tj.yaml")

    assert anchor(job) == "ClusterTrainingRuntime/mpi-distributed (Kubeflow Trainer v2.0.1)"
    assert [str(w) for w in job.warnings] == [
        'spec.runtimeRef.name: ClusterTrainingRuntime "mpi-distributed" is one Kubeflow Trainer '
        "v2.0.1 installs (the newest release that does), not v2.3.0: it is rendered as v2.0.1 "
        "ships it; select that release with --trainer-version v2.0.1 (stack config "
        "trainjobs:trainerVersion), or on a cluster of a later release install it from that "
        "release's manifests/base/runtimes"
    ]


def test_a_runtime_of_a_later_release_is_not_found_in_an_earlier_one():
    with pytest.raises(SpecError) as caught:
        parse_job(
            trainjob("jax-distributed"), "tj.yaml", options=GraphOptions(trainer_version="v2.1.0")
        )

    assert [str(p) for p in caught.value.problems] == [
        'spec.runtimeRef: clustertrainingruntimes.trainer.kubeflow.org "jax-distributed" not '
        "found: specified clusterTrainingRuntime must be created before the TrainJob is created; "
        "the runtimes there are ClusterTrainingRuntime/deepspeed-distributed, "
        "ClusterTrainingRuntime/mlx-distributed, ClusterTrainingRuntime/torch-distributed "
        "(Kubeflow Trainer v2.1.0's, and those given beside the TrainJob in its file)"
    ]


def test_a_release_trainjobs_does_not_know_is_refused():
    with pytest.raises(SpecError) as caught:
        parse_job(trainjob(), "tj.yaml", options=GraphOptions(trainer_version="v1.9.0"))

    assert [str(p) for p in caught.value.problems] == [
        "trainerVersion: 'v1.9.0' is not a Kubeflow Trainer release trainjobs has the runtimes "
        "of; choose one of v2.0.0, v2.0.1, v2.1.0, v2.2.0, v2.2.1, v2.3.0"
    ]


def torch_runtime_with_procs(procs):
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["mlPolicy"] = {"numNodes": 1, "torch": {"numProcPerNode": procs}}
    del runtime["spec"]["podGroupPolicy"]
    return runtime


def procs_env(job) -> dict:
    jobset = next(m for m in job.graph.manifests() if m["kind"] == "JobSet")
    return node_container(jobset)["env"][1]


def test_before_v2_2_the_runtimes_num_proc_per_node_is_the_default():
    document = beside(trainjob(command=["torchrun", "t.py"]), torch_runtime_with_procs(3))

    job = parse_job(document, "tj.yaml", options=GraphOptions(trainer_version="v2.1.0"))

    assert procs_env(job) == {"name": "PET_NPROC_PER_NODE", "value": "3"}
    assert job.warnings == ()


def test_from_v2_2_the_runtimes_num_proc_per_node_is_pruned_with_a_warning():
    document = beside(trainjob(command=["torchrun", "t.py"]), torch_runtime_with_procs(3))

    job = parse_job(document, "tj.yaml")

    # auto with no GPU: the node's CPU request (2).
    assert procs_env(job) == {"name": "PET_NPROC_PER_NODE", "value": "2"}
    assert [str(w) for w in job.warnings] == [
        "ClusterTrainingRuntime/torch-distributed.spec.mlPolicy.torch.numProcPerNode: not a "
        "field of Kubeflow Trainer v2.3.0's runtime (v2.2 removed it), so the API server prunes "
        "it; set the TrainJob's spec.trainer.numProcPerNode instead"
    ]


@pytest.mark.parametrize(
    ("release", "name"),
    [(release, r.name) for release in runtimes.RELEASES for r in runtimes.shipped(release)],
)
def test_every_released_runtime_renders_a_trainjob_under_its_release(release, name):
    job = parse_job(
        trainjob(name, command=["sh", "-c", "true"]),
        "tj.yaml",
        options=GraphOptions(trainer_version=release),
    )

    assert anchor(job) == f"ClusterTrainingRuntime/{name} (Kubeflow Trainer {release})"
    assert any(m["kind"] == "JobSet" for m in job.graph.manifests())
