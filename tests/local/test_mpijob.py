"""`trainjobs run` of MPIJobs: v2beta1 over ssh with the job's key, v1 over kubectl exec."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.local.runs import Run, final_accuracy, leaks, needs_pod_network
from tests.local.test_ssh_transport import needs_sshd

EXAMPLE = REPO / "jobs" / "mpijob-chainermn.yaml"


def exec_variant(path: Path, version: str) -> Path:
    """The example as training-operator's kubeflow.org/v1 MPIJob, or mpi-operator 0.2's
    v1alpha2: the same pods over kubectl exec."""
    document = yaml.safe_load(EXAMPLE.read_text())
    document["apiVersion"] = f"kubeflow.org/{version}"
    document["metadata"]["name"] = f"mpijob-chainermn-{version}"
    document["spec"]["mainContainer"] = "mpi-worker"
    path.write_text(yaml.safe_dump(document))
    return path


@needs_sshd
@needs_pod_network
def test_the_v2beta1_example_trains_over_ssh_and_prints_its_accuracy(tmp_path: Path) -> None:
    run = Run(EXAMPLE, tmp_path / "run")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert final_accuracy(run) >= 0.95
    assert (
        "[mpijob-chainermn-launcher] training on 2 rank(s) (naive communicator): digits, "
        "1437 training and 360 validation samples"
    ) in run.lines
    log = run.pod_log("mpijob-chainermn-launcher")
    assert sorted(log[:2]) == [
        "cluster_waiter: mpijob-chainermn-worker-0 is ready",
        "cluster_waiter: mpijob-chainermn-worker-1 is ready",
    ]
    # ssh: nothing goes through the API server.
    assert run.summary["apiCalls"] == {}
    assert leaks(run) == []


@needs_pod_network
@pytest.mark.parametrize("version", ["v1", "v1alpha2"])
def test_v1_and_v1alpha2_mpijobs_train_over_kubectl_exec(tmp_path: Path, version: str) -> None:
    run = Run(exec_variant(tmp_path / "job.yaml", version), tmp_path / "run")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert final_accuracy(run) >= 0.95
    calls = run.summary["apiCalls"]
    # The waiter's exec per worker and mpiexec's per worker daemon answer (2 workers: 4);
    # the waiter reads a worker's phase only after an exec it did not answer, to say why.
    assert set(calls) <= {"get pods", "create pods/exec"}
    assert calls["create pods/exec"] - calls.get("get pods", 0) == 4
    assert leaks(run) == []


@needs_sshd
@needs_pod_network
def test_a_kueue_queued_v2beta1_mpijob_trains_as_its_jobset_runs_it(tmp_path: Path) -> None:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["metadata"]["name"] = "mpijob-queued"
    document["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(document))

    run = Run(job, tmp_path / "run")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert final_accuracy(run) >= 0.95
    assert (
        "[mpijob-queued-launcher-0-0] training on 2 rank(s) (naive communicator): digits, "
        "1437 training and 360 validation samples"
    ) in run.lines
    # The JobSet's child Jobs name the pods: <jobset>-<replicatedJob>-<i>-0.
    log = run.pod_log("mpijob-queued-launcher-0-0")
    assert sorted(log[:2]) == [
        "cluster_waiter: mpijob-queued-worker-0-0 is ready",
        "cluster_waiter: mpijob-queued-worker-1-0 is ready",
    ]
    assert run.summary["apiCalls"] == {}
    assert leaks(run) == []
