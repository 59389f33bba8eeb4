"""The ssh transport under Pulumi: a TLS private key per job feeds the Secret, kept secret."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.runtime import mocks, rpc, settings

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.core.graph import GraphOptions
from trainjobs.deploy.component import TrainingJob
from trainjobs.deploy.program import StackSettings
from trainjobs.kinds.registry import load_job
from trainjobs.review.preview import run_preview

PRIVATE = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\n"
)
PUBLIC = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMocked\n"
TLS_KEY = "tls:index/privateKey:PrivateKey"


class _KeyMocks(pulumi.runtime.Mocks):
    """The TLS provider's outputs, as `pulumi up` would get them from the provider."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == TLS_KEY:
            return f"{args.name}-id", {
                **args.inputs,
                "privateKeyOpenssh": PRIVATE,
                "publicKeyOpenssh": PUBLIC,
            }
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


class _RecordingMonitor(mocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(_KeyMocks())
        self.requests: dict[str, Any] = {}

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        self.requests[request.type.rsplit(":", 1)[-1] + "/" + request.name] = (
            request,
            response.urn,
        )
        return response


@pytest.fixture
def monitor() -> Iterator[_RecordingMonitor]:
    recording = _RecordingMonitor()
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(recording.mocks, preview=False, monitor=recording)
    yield recording
    pulumi.runtime.set_all_config({}, [])


def deploy_example(monitor: _RecordingMonitor) -> dict[str, Any]:
    """Register the example ChainerJob with the ssh transport; the Secret's data as seen."""
    seen: dict[str, Any] = {}
    job = load_job(
        REPO / "jobs" / "chainermn-mnist.yaml", options=GraphOptions(mpi_transport="ssh")
    )

    @pulumi.runtime.test
    def register() -> pulumi.Output[Any]:
        component = TrainingJob(job)
        secret = component.resources["Secret/chainermn-mnist-ssh"]
        return pulumi.Output.all(secret.data, secret.data.is_secret()).apply(  # type: ignore[attr-defined]
            lambda values: seen.update(data=values[0], secret=values[1])
        )

    register()
    return seen


def test_a_private_key_per_job_is_made_by_the_tls_provider(monitor: _RecordingMonitor) -> None:
    deploy_example(monitor)

    request, _ = monitor.requests["PrivateKey/chainermn-mnist-ssh-key"]
    component_urn = monitor.requests["ChainerJob/chainermn-mnist"][1]
    assert request.type == TLS_KEY
    assert request.parent == component_urn
    assert rpc.deserialize_properties(request.object) == {"algorithm": "ED25519"}


def test_the_secret_holds_the_key_pair_and_known_hosts_as_secrets(
    monitor: _RecordingMonitor,
) -> None:
    seen = deploy_example(monitor)

    decoded = {name: base64.b64decode(value).decode() for name, value in seen["data"].items()}
    assert decoded == {
        "ssh-privatekey": PRIVATE,
        "ssh-publickey": PUBLIC,
        "known_hosts": f"trainjobs-chainermn-mnist {PUBLIC}",
    }
    assert seen["secret"] is True
    request, _ = monitor.requests["Secret/chainermn-mnist-ssh"]
    inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
    assert rpc.is_rpc_secret(inputs["data"])
    assert inputs["type"] == "kubernetes.io/ssh-auth"
    assert {"data", "stringData"} <= set(request.additionalSecretOutputs)


def test_the_secret_waits_for_the_key(monitor: _RecordingMonitor) -> None:
    deploy_example(monitor)

    request, _ = monitor.requests["Secret/chainermn-mnist-ssh"]
    key_urn = monitor.requests["PrivateKey/chainermn-mnist-ssh-key"][1]
    assert key_urn in request.propertyDependencies["data"].urns


def test_the_stack_setting_chooses_the_transport(monitor: _RecordingMonitor) -> None:
    pulumi.runtime.set_all_config(
        {"trainjobs:job": "jobs/chainermn-mnist.yaml", "trainjobs:mpiTransport": "ssh"}, []
    )

    assert StackSettings.from_config(pulumi.Config("trainjobs")).graph_options.mpi_transport == (
        "ssh"
    )


def test_an_unknown_stack_transport_names_the_key_and_the_choices(
    monitor: _RecordingMonitor,
) -> None:
    pulumi.runtime.set_all_config(
        {"trainjobs:job": "jobs/chainermn-mnist.yaml", "trainjobs:mpiTransport": "rsh"}, []
    )

    with pytest.raises(UserError) as raised:
        StackSettings.from_config(pulumi.Config("trainjobs"))

    assert str(raised.value) == (
        "stack config trainjobs:mpiTransport must be one of kubectl, ssh (got 'rsh')"
    )


# -- the offline preview ----------------------------------------------------------------------


def test_the_preview_with_ssh_registers_no_rbac_and_a_key() -> None:
    result = run_preview("chainermn-mnist", REPO, {"trainjobs:mpiTransport": "ssh"})

    assert [(r.type, r.name) for r in result.resources] == [
        ("trainjobs:index:ChainerJob", "chainermn-mnist"),
        ("kubernetes:core/v1:ConfigMap", "chainermn-mnist-assets"),
        (TLS_KEY, "chainermn-mnist-ssh-key"),
        ("kubernetes:core/v1:Secret", "chainermn-mnist-ssh"),
        ("kubernetes:core/v1:Service", "chainermn-mnist"),
        ("kubernetes:apps/v1:StatefulSet", "chainermn-mnist-worker"),
        ("kubernetes:batch/v1:Job", "chainermn-mnist-master"),
        ("pulumi-python:dynamic/trainjobs:JobCompletion", "completion"),
    ]


def test_preview_shows_the_key_as_a_secret(tmp_path: Path, capsys) -> None:
    out = tmp_path / "preview"
    assert (
        main(["preview", "--stack", "chainermn-mnist", "--out", str(out), "--mpi-transport", "ssh"])
        == 0
    )

    secret = (out / "02-Secret-chainermn-mnist-ssh.yaml").read_text(encoding="utf-8")
    assert "data: '[secret]'\n" in secret
    assert "  Secret         chainermn-mnist-ssh\n" in capsys.readouterr().out
