"""Bad specs: one specific message naming the field and the fix, exit code 2, no traceback,
and nothing written."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MINIMAL_JOB
from trainjobs.cli import main

Mutation = Callable[[dict[str, Any]], None]


def master_container(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["master"]["template"]["spec"]["containers"][0]


def worker_spec(job: dict[str, Any]) -> dict[str, Any]:
    return job["spec"]["worker"]


def to_worker_sets(job: dict[str, Any], name: str) -> None:
    job["spec"]["workerSets"] = {name: job["spec"].pop("worker")}


# (id, mutation of the minimal valid job, the exact problem line expected)
CASES: list[tuple[str, Mutation, str]] = [
    (
        "gloo-backend",
        lambda j: j["spec"].update(backend="gloo"),
        "spec.backend: 'gloo' is not supported yet; use 'mpi' (or omit backend)",
    ),
    (
        "unknown-backend",
        lambda j: j["spec"].update(backend="nccl"),
        "spec.backend: unknown backend 'nccl'; the only supported backend is 'mpi'",
    ),
    (
        "two-masters",
        lambda j: j["spec"]["master"].update(replicas=2),
        "spec.master.replicas: must be 1 (got 2); a ChainerJob has one master: omit it",
    ),
    (
        "uppercase-name",
        lambda j: j["metadata"].update(name="Demo"),
        "metadata.name: 'Demo' is not a valid job name: use lowercase letters, digits and '-', "
        "start with a letter and end with a letter or digit",
    ),
    (
        "name-starting-with-digit",
        lambda j: j["metadata"].update(name="1demo"),
        "metadata.name: '1demo' is not a valid job name: use lowercase letters, digits and '-', "
        "start with a letter and end with a letter or digit",
    ),
    (
        "name-with-shell",
        lambda j: j["metadata"].update(name="demo;rm -rf /"),
        "metadata.name: 'demo;rm -rf /' is not a valid job name: use lowercase letters, digits "
        "and '-', start with a letter and end with a letter or digit",
    ),
    (
        "name-too-long-for-master-hostname",
        lambda j: (j["metadata"].update(name="a" * 57), j["spec"].pop("worker")),
        f"metadata.name: '{'a' * 57}' is 57 characters; the derived master name "
        f"'{'a' * 57}-master' would exceed Kubernetes' 63-character limit for a hostname; "
        "shorten it to at most 56 characters",
    ),
    (
        "statefulset-name-too-long",
        lambda j: j["metadata"].update(name="a" * 46),
        f"spec.worker: the derived StatefulSet name '{'a' * 46}-worker' is 53 characters; "
        "Kubernetes allows 52 (its pods carry a controller-revision-hash label); "
        "shorten metadata.name or the worker-set name",
    ),
    (
        "worker-set-name-not-dns",
        lambda j: to_worker_sets(j, "GPU_set"),
        "spec.workerSets.GPU_set: worker-set name 'GPU_set' must be a DNS-1123 label "
        "(lowercase letters, digits and '-', starting and ending alphanumeric)",
    ),
    (
        "no-containers",
        lambda j: j["spec"]["master"]["template"]["spec"].update(containers=[]),
        "spec.master.template.spec.containers: at least one container with an image is required",
    ),
    (
        "no-pod-spec",
        lambda j: j["spec"]["master"].update(template={"metadata": {}}),
        "spec.master.template.spec: a pod spec with 'containers' is required",
    ),
    (
        "missing-image",
        lambda j: master_container(j).pop("image"),
        "spec.master.template.spec.containers[0].image: required: the container image to run",
    ),
    (
        "missing-template",
        lambda j: j["spec"]["master"].pop("template"),
        "spec.master.template: required field is missing",
    ),
    (
        "missing-master",
        lambda j: j["spec"].pop("master"),
        "spec.master: required field is missing",
    ),
    (
        "zero-worker-replicas",
        lambda j: worker_spec(j).update(replicas=0),
        "spec.worker.replicas: must be greater than 0 (got 0)",
    ),
    (
        "negative-worker-replicas",
        lambda j: worker_spec(j).update(replicas=-3),
        "spec.worker.replicas: must be greater than 0 (got -3)",
    ),
    (
        "replicas-not-a-number",
        lambda j: worker_spec(j).update(replicas="two"),
        "spec.worker.replicas: must be a whole number (got 'two')",
    ),
    (
        "zero-slots",
        lambda j: j["spec"]["master"].update(mpiConfig={"slots": 0}),
        "spec.master.mpiConfig.slots: must be greater than 0 (got 0)",
    ),
    (
        "worker-set-zero-slots",
        lambda j: (
            to_worker_sets(j, "gpu"),
            j["spec"]["workerSets"]["gpu"].update(mpiConfig={"slots": -1}),
        ),
        "spec.workerSets.gpu.mpiConfig.slots: must be greater than 0 (got -1)",
    ),
    (
        "negative-backoff-limit",
        lambda j: j["spec"]["master"].update(backoffLimit=-1),
        "spec.master.backoffLimit: must be at least 0 (got -1)",
    ),
    (
        "zero-deadline",
        lambda j: j["spec"]["master"].update(activeDeadlineSeconds=0),
        "spec.master.activeDeadlineSeconds: must be greater than 0 (got 0)",
    ),
    (
        "worker-and-worker-sets",
        lambda j: j["spec"].update(workerSets={"a": copy.deepcopy(j["spec"]["worker"])}),
        "spec: set either 'worker' or 'workerSets', not both",
    ),
    (
        "wrong-api-version",
        lambda j: j.update(apiVersion="kubeflow.org/v1"),
        "apiVersion: must be 'kubeflow.org/v1alpha1' (got 'kubeflow.org/v1')",
    ),
    (
        "wrong-kind",
        lambda j: j.update(kind="LightGBMJob"),
        "kind: must be one of ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, "
        "PaddleJob, JAXJob (got 'LightGBMJob'); XGBoost and JAX jobs also run as a TrainJob "
        "with the xgboost-distributed or jax-distributed runtime",
    ),
    (
        "missing-name",
        lambda j: j["metadata"].pop("name"),
        "metadata.name: required field is missing",
    ),
    (
        "master-restart-policy",
        lambda j: j["spec"]["master"]["template"]["spec"].update(restartPolicy="Always"),
        "spec.master.template.spec.restartPolicy: the master is a batch/v1 Job, which allows "
        "'Never' or 'OnFailure' (got 'Always'); omit it for 'Never'",
    ),
    (
        "reserved-volume-name",
        lambda j: j["spec"]["master"]["template"]["spec"].update(
            volumes=[{"name": "trainjobs-assets", "emptyDir": {}}]
        ),
        "spec.master.template.spec.volumes[0].name: 'trainjobs-assets' uses the prefix "
        "'trainjobs-' reserved for trainjobs' own volumes; rename it",
    ),
    (
        "unnamed-container-among-several",
        lambda j: j["spec"]["master"]["template"]["spec"]["containers"].append({"image": "b:1"}),
        "spec.master.template.spec.containers[1].name: required when a pod has more than one "
        "container",
    ),
    (
        "gpu-limit-not-a-number",
        lambda j: master_container(j).update(resources={"limits": {"nvidia.com/gpu": "two"}}),
        "spec.master.template.spec.containers[0].resources.limits.nvidia.com/gpu: Invalid value: "
        '"two": quantities must match the regular expression '
        "'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ),
]


def write_spec(tmp_path: Path, mutate: Mutation) -> Path:
    document = copy.deepcopy(MINIMAL_JOB)
    mutate(document)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def test_there_are_at_least_twenty_distinct_invalid_specs():
    assert len({message for _, _, message in CASES}) == len(CASES) >= 20


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_render_rejects_the_spec_with_a_field_path_message_and_writes_nothing(
    tmp_path, capsys, mutate, expected
):
    spec = write_spec(tmp_path, mutate)
    out_dir = tmp_path / "out"
    code = main(["render", str(spec), "--out", str(out_dir)])
    stderr = capsys.readouterr().err
    assert code == 2
    assert f"\n  {expected}\n" in stderr + "\n"
    assert stderr.startswith(f"error: {spec}: invalid job spec (")
    assert "Traceback" not in stderr
    assert not out_dir.exists()


@pytest.mark.parametrize(("mutate", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_validate_rejects_the_spec_with_exit_code_2(tmp_path, capsys, mutate, expected):
    spec = write_spec(tmp_path, mutate)
    assert main(["validate", str(spec)]) == 2
    assert f"  {expected}" in capsys.readouterr().err.splitlines()


def test_a_file_that_is_not_yaml_is_a_clear_error(tmp_path, capsys):
    spec = tmp_path / "job.yaml"
    spec.write_text("spec: [unclosed\n", encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    assert f"error: {spec}: invalid job spec (1 problem(s))\n  not valid YAML: " in (
        "error: " + capsys.readouterr().err
    )


def test_a_file_with_two_documents_and_no_job_is_a_clear_error(tmp_path, capsys):
    spec = tmp_path / "job.yaml"
    spec.write_text("a: 1\n---\nb: 2\n", encoding="utf-8")
    assert main(["validate", str(spec)]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "  items: none of the 2 documents is a job (kinds null, null): a file holds one job, of "
        "kind ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, PaddleJob, JAXJob, "
        "and the objects it needs"
    )


def test_a_job_copied_with_the_objects_it_needs_validates_with_them(tmp_path, capsys):
    spec = tmp_path / "job.yaml"
    domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain"}
    domain["metadata"] = {"name": "imex"}
    spec.write_text(yaml.safe_dump_all([domain, MINIMAL_JOB]), encoding="utf-8")
    assert main(["validate", str(spec)]) == 0


def test_a_missing_file_is_a_clear_error(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "nope.yaml")]) == 2
    assert "  cannot read file: No such file or directory" in capsys.readouterr().err


def test_render_refuses_to_overwrite_a_directory_it_did_not_write(tmp_path, capsys, job):
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(job), encoding="utf-8")
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me", encoding="utf-8")
    assert main(["render", str(spec), "--out", str(precious)]) == 2
    assert "directory is not empty and was not written by trainjobs" in capsys.readouterr().err
    assert [p.name for p in precious.iterdir()] == ["notes.txt"]


@pytest.mark.parametrize(
    ("items", "problem"),
    [
        ("abc", "items: must be a list of job documents (got 'abc'): one job per file"),
        (["oops", MINIMAL_JOB], "items[0]: must be a mapping (got 'oops')"),
        (
            [MINIMAL_JOB, MINIMAL_JOB],
            "items: a List must hold exactly one job (got 2): one job per file",
        ),
    ],
    ids=["items-not-a-list", "item-not-a-mapping", "two-jobs"],
)
def test_a_list_that_is_not_one_job_names_what_is_wrong(tmp_path, capsys, items, problem):
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items}))
    assert main(["validate", str(spec)]) == 2
    assert capsys.readouterr().err == (f"{spec}: invalid job spec (1 problem(s))\n  {problem}\n")
