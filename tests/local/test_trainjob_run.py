"""`trainjobs run jobs/trainjob-torch.yaml`: the PyTorch example as a Kubeflow Trainer TrainJob
on torch-distributed, run as the JobSet controller runs Trainer's JobSet. torchrun reads the
PET_* env Trainer's torch policy gives each node, so the script trains over two ranks."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.local.runs import Run, leaks
from trainjobs.local import network

pytestmark = pytest.mark.frameworks
"""Needs a framework extra beyond the core: `make test-frameworks` runs this module."""

EXAMPLE = REPO / "jobs" / "trainjob-torch.yaml"


@pytest.fixture(scope="module")
def trainjob_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    if network.netns_available() is not None:
        pytest.skip("needs root, iproute2 and util-linux (make system-deps)")
    return Run(EXAMPLE, tmp_path_factory.mktemp("trainjob") / "run")


def test_the_trainjob_example_succeeds_when_both_nodes_succeed(trainjob_run: Run) -> None:
    summary = trainjob_run.summary

    assert trainjob_run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["retries"]) == (
        "Succeeded",
        "Completed",
        0,
    )
    assert (
        "[trainjobs] message:  pods trainjob-torch-node-0-0, trainjob-torch-node-0-1 succeeded"
        in trainjob_run.lines
    )
    # Kueue's admission is named only for a JobSet in a Kueue queue.
    assert [line for line in trainjob_run.lines if "Kueue" in line] == []


def test_torchrun_trains_over_two_nodes_and_prints_the_accuracy(trainjob_run: Run) -> None:
    first = trainjob_run.pod_log("trainjob-torch-node-0-0")
    accuracy = [line for line in first if line.startswith("final validation accuracy: ")]

    assert (
        "training on 2 rank(s) (gloo backend): digits, 1437 training and 360 validation samples"
    ) in first
    assert len(accuracy) == 1
    assert float(accuracy[0].rpartition(" ")[2]) >= 0.90
    # `trainjobs run` prints it, prefixed with the pod's name.
    assert f"[trainjob-torch-node-0-0] {accuracy[0]}" in trainjob_run.lines


def test_the_trainjob_run_leaves_nothing_behind(trainjob_run: Run) -> None:
    assert leaks(trainjob_run) == []
    assert trainjob_run.summary["leftovers"] == []


def test_kubeflows_own_multi_node_trainjob_runs_unchanged_on_three_nodes(tmp_path) -> None:
    """kubeflow/trainer examples/yaml/01-multi-node.yaml (tests/corpus), the runtime's CUDA
    image stood in for by the declared CPU one: torchrun on every node, ranks 0 to 2."""
    if network.netns_available() is not None:
        pytest.skip("needs root, iproute2 and util-linux (make system-deps)")
    spec = REPO / "tests" / "corpus" / "trainjob-v1alpha1-kubeflow-trainer-yaml-01-multi-node.yaml"
    stand_in = "pytorch/pytorch:2.13.0-cuda13.0-cudnn9-runtime=trainjobs/pytorch:2.13.0-cpu"
    run = Run(spec, tmp_path / "run", "--map-image", stand_in)

    assert run.exit_code == 0
    assert sorted(
        line
        for line in run.lines
        if line.endswith(("WORLD_SIZE: 3", "RANK: 0", "RANK: 1", "RANK: 2"))
        and "LOCAL_RANK" not in line
    ) == [
        "[multi-node-example-node-0-0] RANK: 0",
        "[multi-node-example-node-0-0] WORLD_SIZE: 3",
        "[multi-node-example-node-0-1] RANK: 1",
        "[multi-node-example-node-0-1] WORLD_SIZE: 3",
        "[multi-node-example-node-0-2] RANK: 2",
        "[multi-node-example-node-0-2] WORLD_SIZE: 3",
    ]
