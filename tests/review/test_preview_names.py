"""Offline preview of any program: auto-named resources of any provider, and a duplicate URN
refused as the Pulumi engine refuses it."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.review.preview import run_preview


def project(root: Path, program: str) -> Path:
    """A project whose __main__.py is ``program``, stack ``test`` without settings."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    return root


AUTO_NAMED = """
import pulumi_kubernetes as k8s
import pulumi_tls as tls

ns = k8s.core.v1.Namespace("ml")
k8s.core.v1.ConfigMap("settings", metadata={"namespace": ns.metadata.name}, data={"a": "b"})
k8s.core.v1.ConfigMap("named", metadata={"name": "fixed", "namespace": "default"})
k8s.helm.v3.Release("cache", chart="redis", namespace=ns.metadata.name)
tls.PrivateKey("key", algorithm="ED25519")
"""

AUTONAME = re.compile(r"[0-9a-f]{8}")


def objects(root: Path) -> dict[str, dict]:
    result = run_preview("test", root)
    return {r.name: r.inputs for r in result.kubernetes_objects()}


def test_an_object_without_a_name_is_named_as_pulumi_kubernetes_names_it(tmp_path):
    found = objects(project(tmp_path / "p", AUTO_NAMED))
    assert sorted(found) == ["ml", "named", "settings"]
    namespace = found["ml"]["metadata"]
    assert namespace["name"].startswith("ml-")
    assert AUTONAME.fullmatch(namespace["name"].removeprefix("ml-"))
    assert namespace["annotations"] == {"pulumi.com/autonamed": "true"}
    settings = found["settings"]["metadata"]
    assert settings["name"].startswith("settings-")
    # The program reads the name Pulumi gave (the Namespace's output), as it does after `up`.
    assert settings["namespace"] == namespace["name"]
    assert found["named"]["metadata"] == {"name": "fixed", "namespace": "default"}


def test_an_auto_name_is_the_same_in_every_preview(tmp_path):
    first = objects(project(tmp_path / "one", AUTO_NAMED))
    second = objects(project(tmp_path / "two", AUTO_NAMED))
    assert first["ml"]["metadata"]["name"] == second["ml"]["metadata"]["name"]
    assert first["ml"]["metadata"]["name"] != first["settings"]["metadata"]["name"]


def test_preview_writes_a_program_of_auto_named_resources_of_several_providers(tmp_path, capsys):
    root = project(tmp_path / "p", AUTO_NAMED)
    assert (
        main(["preview", "--stack", "test", "--project", str(root), "--out", str(tmp_path / "o")])
        == 0
    )
    lines = capsys.readouterr().out.splitlines()
    namespace = next(line.split()[-1] for line in lines if line.startswith("  Namespace "))
    settings = next(
        line.split()[-1] for line in lines if line.startswith("  ConfigMap ") and "settings" in line
    )
    assert lines == [
        "stack test: 5 resources, 3 Kubernetes objects",
        "  ConfigMap      fixed",
        f"  Namespace      {namespace}",
        f"  ConfigMap      {settings}",
        f"wrote 4 files to {tmp_path / 'o'}",
    ]
    assert sorted(p.name for p in (tmp_path / "o").glob("*.yaml")) == [
        "01-ConfigMap-fixed.yaml",
        f"02-Namespace-{namespace}.yaml",
        f"03-ConfigMap-{settings}.yaml",
    ]


TWICE = """
import pulumi_kubernetes as k8s

k8s.core.v1.ConfigMap("settings", metadata={"namespace": "team-a"}, data={"a": "b"})
k8s.core.v1.ConfigMap("settings", metadata={"namespace": "team-b"}, data={"a": "b"})
"""


def test_two_resources_of_one_type_and_name_are_refused_as_the_engine_refuses_them(tmp_path):
    with pytest.raises(UserError) as error:
        run_preview("test", project(tmp_path / "p", TWICE))
    assert str(error.value) == (
        "Duplicate resource URN 'urn:pulumi:test::trainjobs::kubernetes:core/v1:ConfigMap::"
        "settings'; try giving it a unique name"
    )


JOBS_TWICE = """
import yaml
import trainjobs

document = yaml.safe_load(open("{jobs}/tf-mnist.yaml"))
trainjobs.TFJob("tf-mnist", document["spec"], namespace="team-a")
trainjobs.TFJob("tf-mnist", document["spec"], namespace="team-b")
"""


def test_two_jobs_of_one_name_exit_2_with_the_engines_message_and_write_nothing(tmp_path, capsys):
    root = project(tmp_path / "p", JOBS_TWICE.format(jobs=REPO / "jobs"))
    out = tmp_path / "o"
    assert main(["preview", "--stack", "test", "--project", str(root), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "error: Duplicate resource URN 'urn:pulumi:test::trainjobs::trainjobs:index:TFJob::"
        "tf-mnist'; try giving it a unique name\n"
    )
    assert not out.exists()


def test_the_urns_are_the_engines_the_parents_type_chain_without_the_stack(tmp_path):
    program = JOBS_TWICE.format(jobs=REPO / "jobs").rsplit("\n", 2)[0] + "\n"
    result = run_preview("test", project(tmp_path / "p", program))
    urns = {r.urn for r in result.resources}
    assert "urn:pulumi:test::trainjobs::trainjobs:index:TFJob::tf-mnist" in urns
    assert (
        "urn:pulumi:test::trainjobs::trainjobs:index:TFJob$kubernetes:batch/v1:Job::"
        "tf-mnist-worker-0"
    ) in urns


UNKNOWN_NAMES = """
import pulumi_kubernetes as k8s
import pulumi_tls as tls

key = tls.PrivateKey("key", algorithm="ED25519")
k8s.core.v1.ConfigMap("whole", metadata=key.public_key_openssh.apply(lambda v: {"name": "x"}))
k8s.core.v1.ConfigMap("named", metadata={"name": key.public_key_openssh})
"""


def test_objects_whose_names_are_not_known_yet_are_written_under_their_resource_names(
    tmp_path, capsys
):
    root = project(tmp_path / "p", UNKNOWN_NAMES)
    out = tmp_path / "o"
    assert main(["preview", "--stack", "test", "--project", str(root), "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines()[1:3] == [
        "  ConfigMap      named",
        "  ConfigMap      whole",
    ]
    assert sorted(p.name for p in out.glob("*.yaml")) == [
        "01-ConfigMap-named.yaml",
        "02-ConfigMap-whole.yaml",
    ]
    assert yaml.safe_load((out / "02-ConfigMap-whole.yaml").read_text()) == {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": "[known after pulumi up]",
    }


def test_a_preview_of_objects_with_unknown_names_compares_with_an_earlier_one(tmp_path, capsys):
    root = project(tmp_path / "p", UNKNOWN_NAMES)
    base, head = tmp_path / "base", tmp_path / "head"
    assert main(["preview", "--stack", "test", "--project", str(root), "--out", str(base)]) == 0
    changed = UNKNOWN_NAMES.replace('{"name": "x"}))', '{"name": "x"}), data={"a": "1"})')
    (root / "__main__.py").write_text(changed, encoding="utf-8")
    arguments = ["--project", str(root), "--out", str(head), "--against", str(base)]
    assert main(["preview", "--stack", "test", *arguments]) == 0
    report = capsys.readouterr().out
    assert "3 resources: 1 to replace, 2 unchanged." in report
    assert "| `ConfigMap whole` | replace | `data` changed (`data` added)" in report
