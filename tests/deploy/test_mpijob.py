"""MPIJob under Pulumi: its component, its key pair per job, and the library's MPIJob class."""

from __future__ import annotations

import base64
from typing import Any

import pulumi
import yaml

from tests.conftest import REPO
from tests.deploy.test_ssh_key import PUBLIC, _RecordingMonitor, monitor  # noqa: F401
from trainjobs.deploy.component import TrainingJob
from trainjobs.kinds.mpijob.component import MPIJob
from trainjobs.kinds.registry import load_job

EXAMPLE = REPO / "jobs" / "mpijob-chainermn.yaml"


def test_the_v2beta1_example_is_an_mpijob_component_with_its_own_key(
    monitor: _RecordingMonitor,  # noqa: F811
) -> None:
    seen: dict[str, Any] = {}
    job = load_job(EXAMPLE)  # no mpi_transport: v2beta1's operator always uses ssh

    @pulumi.runtime.test
    def register() -> pulumi.Output[Any]:
        component = TrainingJob(job)
        secret = component.resources["Secret/mpijob-chainermn-ssh"]
        return secret.data.apply(lambda data: seen.update(data=data))  # type: ignore[attr-defined]

    register()

    assert sorted(monitor.requests) == [
        "ConfigMap/mpijob-chainermn-config",
        "Job/mpijob-chainermn-launcher",
        "MPIJob/mpijob-chainermn",
        "PrivateKey/mpijob-chainermn-ssh-key",
        "Secret/mpijob-chainermn-ssh",
        "Service/mpijob-chainermn",
        "Stack/project-stack",
        "StatefulSet/mpijob-chainermn-worker",
    ]
    known_hosts = base64.b64decode(seen["data"]["known_hosts"]).decode()
    assert known_hosts == f"trainjobs-mpijob-chainermn {PUBLIC}"


def test_the_library_mpijob_takes_a_v2beta1_spec(monitor: _RecordingMonitor) -> None:  # noqa: F811
    spec = yaml.safe_load(EXAMPLE.read_text())["spec"]

    @pulumi.runtime.test
    def register() -> None:
        component = MPIJob("mpijob-chainermn", spec)
        assert component.job.kind == "MPIJob"
        assert component.job.success_jobs == ("mpijob-chainermn-launcher",)

    register()

    assert monitor.requests["MPIJob/mpijob-chainermn"][0].type == "trainjobs:index:MPIJob"
