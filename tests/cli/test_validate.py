"""`trainjobs validate`: what it prints of a spec shows control characters escaped."""

from __future__ import annotations

import yaml

from tests.conftest import REPO
from trainjobs.cli import main

KEY = "x\x1b]0;title\x07"
SHOWN = "x\\x1b]0;title\\x07"


def spec_with_key(tmp_path, where: str) -> str:
    document = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())
    section = document["spec"] if where == "spec" else document["spec"]["tfReplicaSpecs"]
    section[KEY] = "value"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))
    return str(path)


def test_a_warning_shows_an_unknown_keys_control_characters_escaped(tmp_path, capsys):
    path = spec_with_key(tmp_path, "spec")
    assert main(["validate", path]) == 0
    err = capsys.readouterr().err
    assert err.splitlines()[0] == (
        f"warning: {path}: spec.{SHOWN}: not a field of TFJob kubeflow.org/v1: Kubeflow's API "
        "server keeps or drops it and its operator ignores it, so it has no effect here"
    )
    assert "value" not in err


def test_an_error_shows_a_keys_control_characters_escaped(tmp_path, capsys):
    path = spec_with_key(tmp_path, "replica type")
    assert main(["validate", path]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err
    assert f"  spec.tfReplicaSpecs.{SHOWN}" in err
