"""`trainjobs run jobs/trainjob-mpi-chainermn.yaml`: the ChainerMN example as a Kubeflow Trainer
TrainJob on an MPI ClusterTrainingRuntime given beside it. Trainer's MPI policy mounts the job's
key pair at sshAuthMountPath and writes the hostfile; the runtime's own commands start sshd on
the nodes and ssh from the launcher with per-run options, so nothing reads the host's ~/.ssh."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO
from tests.local.runs import Run, leaks, needs_pod_network
from tests.local.test_ssh_transport import needs_sshd

EXAMPLE = REPO / "jobs" / "trainjob-mpi-chainermn.yaml"
LAUNCHER = "trainjob-mpi-chainermn-launcher-0-0"


@needs_sshd
@needs_pod_network
def test_the_mpi_trainjob_trains_chainermn_over_two_nodes_and_prints_the_accuracy(
    tmp_path: Path,
) -> None:
    run = Run(EXAMPLE, tmp_path / "run")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert (run.summary["outcome"], run.summary["reason"]) == ("Succeeded", "Completed")
    assert (
        f"[{LAUNCHER}] training on 2 rank(s) (naive communicator): digits, "
        "1437 training and 360 validation samples"
    ) in run.lines
    pattern = re.compile(rf"\[{LAUNCHER}\] final validation accuracy: ([0-9.]+)")
    accuracy = [float(m.group(1)) for line in run.lines if (m := pattern.fullmatch(line))]
    assert len(accuracy) == 1
    assert accuracy[0] >= 0.95
    # ssh between the pods: nothing goes through the API server.
    assert run.summary["apiCalls"] == {}
    assert leaks(run) == []
    assert run.summary["leftovers"] == []
