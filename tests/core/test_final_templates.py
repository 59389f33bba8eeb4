"""Every kind's final pod templates, after what the operator and trainjobs add to them, are
checked by the API server's schema and rules (``trainjobs.core.rendered_pods``), and run-time
security rules the API server has (user and group ids) hold for every pod template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core import rendered_pods
from trainjobs.core.errors import SpecError
from trainjobs.kinds.registry import KINDS, load_job, parse_job

EXAMPLES = sorted((REPO / "jobs").glob("*.yaml"))


def test_every_pod_template_of_every_kinds_graph_is_checked(monkeypatch: pytest.MonkeyPatch):
    seen: list[str] = []
    check = rendered_pods.check_final_template

    def recording(template: dict[str, Any], path: str, *rest: Any) -> None:
        seen.append(path)
        check(template, path, *rest)

    monkeypatch.setattr(rendered_pods, "check_final_template", recording)
    kinds = set()
    for example in EXAMPLES:
        seen.clear()
        job = load_job(example)
        kinds.add(job.kind)
        assert seen == [
            f"{node.key} {path}"
            for node in job.graph.nodes
            for path, _ in rendered_pods.pod_templates(node.manifest)
        ]
        assert seen, example
    assert kinds == set(KINDS)


def mpijob(launcher_mounts: list[dict[str, Any]]) -> dict[str, Any]:
    launcher = {"name": "launcher", "image": "mpi:1", "volumeMounts": launcher_mounts}
    return {
        "apiVersion": "kubeflow.org/v2beta1",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {
            "mpiReplicaSpecs": {
                "Launcher": {
                    "template": {
                        "spec": {
                            "containers": [launcher],
                            "volumes": [{"name": "keys", "emptyDir": {}}],
                        }
                    }
                },
                "Worker": {
                    "replicas": 1,
                    "template": {"spec": {"containers": [{"name": "worker", "image": "mpi:1"}]}},
                },
            }
        },
    }


def test_a_users_mount_where_the_operator_mounts_the_key_is_refused_as_the_api_server_would(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    # mpi-operator mounts the job's key at sshAuthMountPath (default /root/.ssh) in the
    # launcher: two mounts at one path, which ValidateVolumeMounts refuses ("must be unique").
    spec = tmp_path / "pi.yaml"
    spec.write_text(yaml.safe_dump(mpijob([{"name": "keys", "mountPath": "/root/.ssh"}])))

    assert main(["validate", str(spec)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{spec}: invalid job spec (1 problem(s))",
        "  Job/pi-launcher spec.template.spec.containers[0].volumeMounts[4].mountPath: Invalid "
        'value: "/root/.ssh": must be unique',
    ]


@pytest.mark.parametrize("uid", [-5, 2**40])
def test_user_and_group_ids_outside_0_to_2147483647_are_refused_for_every_pod_template(uid: int):
    document = mpijob([])
    launcher = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher["containers"][0]["securityContext"] = {"runAsUser": uid, "runAsGroup": uid}
    launcher["securityContext"] = {
        "runAsUser": uid,
        "runAsGroup": uid,
        "fsGroup": uid,
        "supplementalGroups": [0, uid],
    }
    with pytest.raises(SpecError) as caught:
        parse_job(document, "pi.yaml")

    where = "spec.mpiReplicaSpecs.Launcher.template.spec"
    rule = "must be between 0 and 2147483647, inclusive"
    assert [str(problem) for problem in caught.value.problems] == [
        f"{where}.containers[0].securityContext.runAsUser: Invalid value: {uid}: {rule}",
        f"{where}.containers[0].securityContext.runAsGroup: Invalid value: {uid}: {rule}",
        f"{where}.securityContext.runAsUser: Invalid value: {uid}: {rule}",
        f"{where}.securityContext.runAsGroup: Invalid value: {uid}: {rule}",
        f"{where}.securityContext.fsGroup: Invalid value: {uid}: {rule}",
        f"{where}.securityContext.supplementalGroups[1]: Invalid value: {uid}: {rule}",
    ]
