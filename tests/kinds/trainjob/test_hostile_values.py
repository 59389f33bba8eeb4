"""TrainJob and training-runtime values Trainer, JobSet or the API server refuse are refused by
`validate` (and the library) with the field named; advice given for a local run is advice a
local run accepts."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.kinds.trainjob.test_trainjob import RUNTIME, trainjob
from trainjobs.cli import main
from trainjobs.core.errors import SpecError
from trainjobs.kinds.registry import parse_job

RUNTIME_JOBS = "ClusterTrainingRuntime/torch-distributed.spec.template.spec.replicatedJobs"


def validate(tmp_path: Path, capsys: pytest.CaptureFixture[str], *documents: Any) -> Any:
    spec = tmp_path / "tj.yaml"
    spec.write_text(yaml.safe_dump_all(documents))
    code = main(["validate", str(spec)])
    return code, capsys.readouterr().err.splitlines()


def with_replicated_job_name(name: str) -> dict[str, Any]:
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["name"] = name
    return runtime


def test_a_runtime_whose_template_is_not_a_mapping_is_refused_by_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"] = "abc"
    problem = (
        "ClusterTrainingRuntime/torch-distributed.spec.template: must be a mapping with the "
        "JobSet's spec (got 'abc')"
    )

    assert validate(tmp_path, capsys, trainjob(), runtime) == (
        2,
        [f"{tmp_path / 'tj.yaml'}: invalid job spec (1 problem(s))", f"  {problem}"],
    )
    with pytest.raises(SpecError) as caught:
        parse_job({"kind": "List", "items": [trainjob(), runtime]}, "library")
    assert [str(p) for p in caught.value.problems] == [problem]


def test_a_replicated_job_whose_job_names_are_not_dns_labels_is_refused_as_jobsets_webhook_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, lines = validate(tmp_path, capsys, trainjob(), with_replicated_job_name("../.."))

    assert (code, lines[1:]) == (
        2,
        [
            f'  {RUNTIME_JOBS}[0].name: Invalid value: "tj-../..-0": a lowercase RFC 1035 label '
            "must consist of lower case alphanumeric characters or '-', start with an alphabetic "
            "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', "
            "regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?'): the JobSet controller "
            "names the replicated Job's Jobs <trainjob>-<name>-<index>; rename it"
        ],
    )


def test_a_replicated_job_name_no_trainjob_name_can_fit_says_to_shorten_that_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    code, lines = validate(tmp_path, capsys, trainjob(), with_replicated_job_name("n" * 60))
    longest = f"tj-{'n' * 60}-0-2-xxxxx"

    assert (code, lines[1:]) == (
        2,
        [
            f"  {RUNTIME_JOBS}[0].name: JobSet name is too long, pod names generated for this "
            f"JobSet will exceed 63 characters (the longest: {longest!r}, 73 characters), "
            "whatever the TrainJob's name; shorten the replicated Job's name to at most 50 "
            "characters"
        ],
    )


def test_the_jobsets_labels_and_annotations_are_checked_as_metadata_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    job = trainjob()
    job["spec"]["labels"] = {"bad key!": "v", "k": "bad value!"}
    job["spec"]["annotations"] = {"Bad Key!": "v"}
    code, lines = validate(tmp_path, capsys, job)
    rule = (
        "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and "
        "end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex "
        "used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
    )
    value_rule = (
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or "
        "'my_value',  or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
    )

    assert (code, lines[1:]) == (
        2,
        [
            f'  spec.labels: Invalid value: "bad key!": {rule}',
            f'  spec.labels.k: Invalid value: "bad value!": {value_rule}',
            f'  spec.annotations: Invalid value: "Bad Key!": {rule}',
        ],
    )


@pytest.mark.parametrize(
    ("value", "rule"),
    [
        (-3, "numProcPerNode must be greater than or equal to 1"),
        (0, "numProcPerNode must be greater than or equal to 1"),
        (2**31, "must be at most 2147483647 (got 2147483648): it is an int32 field"),
    ],
)
def test_num_proc_per_node_is_bounded_as_trainers_crd_bounds_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: int, rule: str
):
    code, lines = validate(tmp_path, capsys, trainjob(numProcPerNode=value))

    assert (code, lines[1:]) == (2, [f"  spec.trainer.numProcPerNode: {rule}"])


def test_the_initializer_warning_advises_what_a_local_run_accepts():
    job = trainjob()
    job["spec"]["initializer"] = {"dataset": {"storageUri": "hf://org/data"}}
    runtime = copy.deepcopy(RUNTIME)
    pod = runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    runtime["spec"]["template"]["spec"]["replicatedJobs"].insert(
        0,
        {
            "name": "dataset-initializer",
            "template": {
                "metadata": {
                    "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "dataset-initializer"}
                },
                "spec": {
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "dataset-initializer",
                                    "image": "example.com/init:1",
                                    "volumeMounts": [
                                        {"name": "initializer", "mountPath": "/workspace"}
                                    ],
                                }
                            ],
                            "volumes": [{"name": "initializer", "emptyDir": {}}],
                        }
                    }
                },
            },
        },
    )
    assert pod["spec"]["containers"][0]["name"] == "node"

    warnings = parse_job({"kind": "List", "items": [job, runtime]}, "tj.yaml").warnings

    assert [str(w) for w in warnings] == [
        "spec.initializer.dataset: a local run cannot download datasets from a hub (storageUri "
        "'hf://org/data'): on a cluster Trainer's dataset-initializer does; a local run mounts "
        "no host path either (Pod Security baseline), so give the trainer an image that already "
        "holds the dataset and read it from there, or run on a cluster"
    ]
