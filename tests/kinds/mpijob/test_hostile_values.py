"""MPIJob values the API server or the operator's types refuse are refused by `validate`, with
the field named, before anything is rendered."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.kinds.mpijob.test_spec import mpijob
from trainjobs.cli import main


def validate(tmp_path: Path, document: dict[str, object], capsys: pytest.CaptureFixture[str]):
    spec = tmp_path / "pi.yaml"
    spec.write_text(yaml.safe_dump(document))
    code = main(["validate", str(spec)])
    return code, capsys.readouterr().err.splitlines()[1:]


def test_an_ssh_auth_mount_path_on_the_operators_config_mount_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, lines = validate(tmp_path, mpijob("v2beta1", sshAuthMountPath="/etc/mpi"), capsys)

    assert (code, lines) == (
        2,
        [
            '  spec.sshAuthMountPath: Invalid value: "/etc/mpi": mpi-operator mounts the job\'s '
            "hostfile ConfigMap there, and a container's mount paths must be unique (the API "
            "server refuses the launcher's pod); choose another directory, e.g. /root/.ssh (the "
            "default) or the user's ~/.ssh"
        ],
    )


@pytest.mark.parametrize("version", ["v1alpha2", "v1", "v2beta1"])
def test_slots_per_worker_given_as_a_string_is_refused_as_the_int32_field_refuses_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], version: str
):
    code, lines = validate(tmp_path, mpijob(version, slotsPerWorker="2"), capsys)

    assert (code, lines) == (
        2,
        ["  spec.slotsPerWorker: must be a whole number (got '2')"],
    )
