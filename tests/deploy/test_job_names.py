"""Names as Pulumi does them: a job component's resource name is its own (default: the job's
metadata.name), so two jobs of one name in two namespaces are two resources with their own
children, and the Kubernetes objects keep the job's names."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from tests.conftest import REPO
from trainjobs.review.preview import PreviewResult, run_preview

PROGRAM = """
import yaml
from trainjobs.deploy.component import TrainingJob
from trainjobs.kinds.registry import parse_job

document = yaml.safe_load(open({file!r}))
for namespace in ("team-a", "team-b"):
    job = parse_job(document, {file!r}, namespace)
    TrainingJob(job, name=f"{{job.name}}-{{namespace}}", watched=False)
"""


def preview(tmp_path: Path, file: str) -> PreviewResult:
    tmp_path.mkdir()
    program = PROGRAM.format(file=str(REPO / "jobs" / file))
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    return run_preview("test", tmp_path)


def test_two_jobs_of_one_name_in_two_namespaces_are_two_components_with_their_objects(tmp_path):
    result = preview(tmp_path / "p", "tf-mnist.yaml")
    components = [
        (r.type, r.name)
        for r in result.resources
        if r.parent not in {x.urn for x in result.resources}
    ]
    assert sorted(components) == [
        ("trainjobs:index:TFJob", "tf-mnist-team-a"),
        ("trainjobs:index:TFJob", "tf-mnist-team-b"),
    ]
    objects = sorted(
        (r.inputs["metadata"]["namespace"], r.inputs["kind"], r.inputs["metadata"]["name"], r.name)
        for r in result.kubernetes_objects()
    )
    team_a = [
        (kind, name, resource)
        for namespace, kind, name, resource in objects
        if namespace == "team-a"
    ]
    team_b = [
        (kind, name, resource)
        for namespace, kind, name, resource in objects
        if namespace == "team-b"
    ]
    assert [(kind, name) for kind, name, _ in team_a] == [(kind, name) for kind, name, _ in team_b]
    # Each child's resource name is the object's, under its component's name.
    assert all(
        resource == name.replace("tf-mnist", "tf-mnist-team-a", 1) for _, name, resource in team_a
    )
    assert all(
        resource == name.replace("tf-mnist", "tf-mnist-team-b", 1) for _, name, resource in team_b
    )


def test_the_ssh_key_of_each_mpijob_is_a_resource_of_its_own(tmp_path):
    result = preview(tmp_path / "p", "mpijob-chainermn.yaml")
    keys = sorted(r.name for r in result.resources if r.type == "tls:index/privateKey:PrivateKey")
    assert keys == ["mpijob-chainermn-team-a-ssh-key", "mpijob-chainermn-team-b-ssh-key"]


def test_by_default_the_resource_names_are_the_objects_names(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (root / "__main__.py").write_text(
        PROGRAM.format(file=str(REPO / "jobs" / "tf-mnist.yaml"))
        .replace('for namespace in ("team-a", "team-b"):', 'for namespace in ("team-a",):')
        .replace(', name=f"{job.name}-{namespace}"', ""),
        encoding="utf-8",
    )
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    result = run_preview("test", root)
    assert {r.name for r in result.kubernetes_objects()} == {
        r.inputs["metadata"]["name"] for r in result.kubernetes_objects()
    }
    assert [r.name for r in result.resources if r.type == "trainjobs:index:TFJob"] == ["tf-mnist"]


def test_a_jobs_name_and_namespace_are_outputs_of_its_component(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    program = PROGRAM.format(file=str(REPO / "jobs" / "tf-mnist.yaml")).replace(
        '    TrainingJob(job, name=f"{job.name}-{namespace}", watched=False)\n',
        '    component = TrainingJob(job, name=f"{job.name}-{namespace}", watched=False)\n'
        "    pulumi.export(namespace, {'name': component.name, 'namespace': component.namespace})\n",
    )
    (root / "__main__.py").write_text("import pulumi\n" + program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    assert run_preview("test", root).outputs == {
        "team-a": {"name": "tf-mnist", "namespace": "team-a"},
        "team-b": {"name": "tf-mnist", "namespace": "team-b"},
    }
