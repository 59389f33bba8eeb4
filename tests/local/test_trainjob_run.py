"""`trainjobs run jobs/trainjob-torch.yaml`: the PyTorch example as a Kubeflow Trainer TrainJob
on torch-distributed, run as the JobSet controller runs Trainer's JobSet. torchrun reads the
PET_* env Trainer's torch policy gives each node, so the script trains over two ranks."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from tests.local.runs import Run, leaks
from trainjobs.local import network

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
