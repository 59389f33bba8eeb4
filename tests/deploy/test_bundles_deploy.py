"""A job's companions under Pulumi: registered before the job's objects, as written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import rpc

from tests.conftest import MINIMAL_JOB, REPO
from tests.deploy.test_ssh_key import _RecordingMonitor, monitor  # noqa: F401 (a fixture)
from trainjobs.deploy.component import TrainingJob
from trainjobs.kinds.registry import load_job

SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}}
SECRET["stringData"] = {"TOKEN": "s3cret"}
JOB_FILE = (
    REPO / "tests/corpus/mpijob-v2beta1-nvidia-k8s-dra-driver-gpu-nvbandwidth-computedomain.yaml"
)


def register(path: Path) -> TrainingJob:
    job = load_job(path)
    made: list[TrainingJob] = []

    @pulumi.runtime.test
    def run() -> None:
        made.append(TrainingJob(job))

    run()
    return made[0]


def test_a_compute_domain_is_a_custom_resource_the_job_waits_for(
    monitor: _RecordingMonitor,  # noqa: F811
) -> None:
    register(JOB_FILE)

    request, urn = monitor.requests["ComputeDomain/nvbandwidth-test-compute-domain-1"]
    assert request.type == "kubernetes:resource.nvidia.com/v1beta1:ComputeDomain"
    inputs = rpc.deserialize_properties(request.object)
    assert inputs["spec"]["numNodes"] == 2
    assert inputs["metadata"]["namespace"] == "default"
    launcher, _ = monitor.requests["Job/nvbandwidth-test-1-launcher"]
    assert urn in launcher.dependencies


def test_a_secret_beside_the_job_is_kept_secret(
    monitor: _RecordingMonitor,  # noqa: F811
    tmp_path: Path,
) -> None:
    path = tmp_path / "bundle.yaml"
    path.write_text(yaml.safe_dump_all([SECRET, MINIMAL_JOB]), encoding="utf-8")
    register(path)

    request, _ = monitor.requests["Secret/token"]
    inputs: dict[str, Any] = rpc.deserialize_properties(request.object, keep_unknowns=True)
    assert rpc.is_rpc_secret(inputs["stringData"])
    assert {"data", "stringData"} <= set(request.additionalSecretOutputs)
    # A companion is created as written: no await annotation, nothing ignored.
    assert "annotations" not in inputs["metadata"]
    assert list(request.ignoreChanges) == []
