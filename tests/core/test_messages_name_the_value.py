"""A refusal names the field, the value as the YAML wrote it (not set, null, or the value),
and the fix: never Python's ``None``."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main

PYTORCH = "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: a}\n"
TRAINJOB = "apiVersion: trainer.kubeflow.org/v1alpha1\nkind: TrainJob\nmetadata: {name: a}\n"
KINDS = "ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, PaddleJob, JAXJob"
VERSIONS = (
    "kubeflow.org/v1alpha1, kubeflow.org/v1alpha2, kubeflow.org/v1beta1, kubeflow.org/v1beta2, "
    "kubeflow.org/v1"
)


def refusal(tmp_path: Path, text: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    try:
        code = main(["validate", str(path)])
    except SystemExit as stop:
        code = stop.code
    err = capsys.readouterr().err
    return int(code or 0), err.splitlines()[1].strip()


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (
            "apiVersion: kubeflow.org/v1\nmetadata: {name: a}\n",
            f"kind: must be one of {KINDS} (not set): add the job's kind, e.g. kind: ChainerJob",
        ),
        (
            "apiVersion: kubeflow.org/v1\nkind: null\nmetadata: {name: a}\n",
            f"kind: must be one of {KINDS} (got null): set the job's kind, e.g. kind: ChainerJob",
        ),
        (
            "kind: PyTorchJob\nmetadata: {name: a}\nspec: {}\n",
            f"apiVersion: must be one of {VERSIONS} (not set)",
        ),
        (
            "apiVersion: null\nkind: PyTorchJob\nmetadata: {name: a}\nspec: {}\n",
            f"apiVersion: must be one of {VERSIONS} (got null)",
        ),
        (PYTORCH, "spec: required: the PyTorchJob's spec (not set)"),
        (PYTORCH + "spec: null\n", "spec: required: the PyTorchJob's spec (got null)"),
        (
            "kind: TrainJob\nmetadata: {name: a}\nspec: {runtimeRef: {name: torch-distributed}}\n",
            "apiVersion: must be trainer.kubeflow.org/v1alpha1 (not set)",
        ),
        (
            TRAINJOB + "spec: {runtimeRef: {name: torch-distributed, kind: null}}\n",
            "spec.runtimeRef.kind: must be a string (got null): give a value, or remove the key",
        ),
    ],
)
def test_a_missing_or_null_value_is_named_as_the_yaml_wrote_it(tmp_path, capsys, text, line):
    assert refusal(tmp_path, text, capsys) == (2, line)


def test_an_extended_resource_without_a_limit_names_the_resource_and_the_fix(tmp_path, capsys):
    text = PYTORCH + (
        "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 1\n      template:\n"
        "        spec:\n          containers:\n          - name: pytorch\n            image: x\n"
        "            resources: {requests: {nvidia.com/gpu: 2}}\n"
    )

    assert refusal(tmp_path, text, capsys) == (
        2,
        "spec.pytorchReplicaSpecs.Master.template.spec.containers[0].resources.limits: Required "
        "value: Limit must be set for non overcommitable resources: nvidia.com/gpu is requested "
        "(2) without a limit; add limits: {nvidia.com/gpu: 2} (the request of a resource that "
        "cannot be overcommitted must equal its limit)",
    )


@pytest.mark.parametrize("kind", ["PyTorchJob", "TFJob", "ChainerJob", "MPIJob", "TrainJob"])
def test_null_labels_and_annotations_are_unset_as_the_api_server_decodes_them(
    tmp_path, capsys, kind
):
    # apimachinery decodes a JSON null map as a nil map: the object has no labels.
    source = {
        "PyTorchJob": "jobs/pytorch-mnist.yaml",
        "TFJob": "jobs/tf-mnist.yaml",
        "ChainerJob": "jobs/chainermn-mnist.yaml",
        "MPIJob": "jobs/mpijob-chainermn.yaml",
        "TrainJob": "jobs/trainjob-torch.yaml",
    }[kind]
    document = yaml.safe_load((REPO / source).read_text())
    document["metadata"]["labels"] = None
    document["metadata"]["annotations"] = None
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))
    plain = tmp_path / "plain.yaml"
    del document["metadata"]["labels"], document["metadata"]["annotations"]
    plain.write_text(yaml.safe_dump(document))

    assert main(["render", str(path), "--out", str(tmp_path / "null")]) == 0
    assert main(["render", str(plain), "--out", str(tmp_path / "unset")]) == 0
    capsys.readouterr()
    rendered = sorted(p.name for p in (tmp_path / "null").iterdir())
    assert rendered == sorted(p.name for p in (tmp_path / "unset").iterdir())
    for name in rendered:
        assert (tmp_path / "null" / name).read_text() == (tmp_path / "unset" / name).read_text()
