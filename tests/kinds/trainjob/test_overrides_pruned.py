"""A TrainJob's runtimePatches, podTemplateOverrides and podSpecOverrides carry to the JobSet
only the fields Trainer's CRD has: the API server prunes the rest (kubeflow/trainer v2.3.0
``pkg/apis/trainer/v1alpha1/trainjob_types.go``: ``PodSpecPatch``, ``ContainerPatch``; v2.0.0
``PodSpecOverride``, v2.1.0 ``PodTemplateSpecOverride``, ``ContainerOverride``), so what the
warning says has no effect is not in the manifest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from trainjobs.cli import main

NODE_POD = "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0].template"
PATCH_FIELD = "not a field of TrainJob trainer.kubeflow.org/v1alpha1: Kubeflow's API server keeps"
PATCH_WARNING = f"{PATCH_FIELD} or drops it and its operator ignores it, so it has no effect here"


def trainjob(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj"},
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"image": "trainjobs/pytorch:2.13.0-cpu", "command": ["torchrun", "/t.py"]},
            **spec,
        },
    }


def runtime_patch(pod_spec: dict[str, Any]) -> list[dict[str, Any]]:
    job = {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
    return [
        {
            "manager": "example.com/tool",
            "trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": [job]}}},
        }
    ]


HOST = {"hostNetwork": True, "hostPID": True}
OVERRIDES = {
    "runtimePatches": (runtime_patch(HOST), f"{NODE_POD}.spec.template.spec"),
    "podTemplateOverrides": (
        [{"targetJobs": [{"name": "node"}], "spec": HOST}],
        "spec.podTemplateOverrides[0].spec",
    ),
    "podSpecOverrides": ([{"targetJobs": [{"name": "node"}], **HOST}], "spec.podSpecOverrides[0]"),
}


def rendered_pod(tmp_path: Path, document: dict[str, Any], capsys: Any) -> tuple[Any, str]:
    spec = tmp_path / "tj.yaml"
    spec.write_text(yaml.safe_dump(document))
    assert main(["render", str(spec), "--out", str(tmp_path / "out")]) == 0
    jobset = yaml.safe_load((tmp_path / "out" / "02-JobSet-tj.yaml").read_text())
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]
    return pod, capsys.readouterr().err


@pytest.mark.parametrize("field", list(OVERRIDES))
def test_host_namespaces_given_through_an_override_are_warned_and_not_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str
):
    overrides, where = OVERRIDES[field]
    pod, err = rendered_pod(tmp_path, trainjob(**{field: overrides}), capsys)

    assert ("hostNetwork" in pod, "hostPID" in pod) == (False, False)
    assert err.splitlines() == [
        f"warning: {tmp_path / 'tj.yaml'}: {where}.{key}: {PATCH_WARNING}"
        for key in ("hostNetwork", "hostPID")
    ]


def test_a_patched_containers_fields_trainer_has_no_place_for_are_warned_and_not_rendered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    context = {"runAsUser": 1000}
    container = {"name": "node", "image": "evil:1", "command": ["sh"], "securityContext": context}
    patches = runtime_patch({"containers": [container]})
    pod, err = rendered_pod(tmp_path, trainjob(runtimePatches=patches), capsys)
    node = next(c for c in pod["containers"] if c["name"] == "node")

    assert (node["image"], node["command"]) == (
        "trainjobs/pytorch:2.13.0-cpu",
        ["torchrun", "/t.py"],
    )
    assert node["securityContext"] == context
    assert err.splitlines() == [
        f"warning: {tmp_path / 'tj.yaml'}: {NODE_POD}.spec.template.spec.containers[0].{key}: "
        f"{PATCH_WARNING}"
        for key in ("command", "image")
    ]


@pytest.mark.frameworks  # a local run of the torch runtime needs the pytorch extra
def test_a_privileged_container_given_through_a_runtime_patch_is_refused_by_a_local_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    patch = {"name": "node", "securityContext": {"privileged": True}}
    spec = tmp_path / "tj.yaml"
    spec.write_text(yaml.safe_dump(trainjob(runtimePatches=runtime_patch({"containers": [patch]}))))

    assert main(["validate", str(spec)]) == 0
    assert main(["run", str(spec), "--run-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "  Job/tj-node-0 pod template spec.containers[0].securityContext.privileged: Forbidden: "
        "true: privileged containers are not run"
    )
    assert not (tmp_path / "run").exists()
