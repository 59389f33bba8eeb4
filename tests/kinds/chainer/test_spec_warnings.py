"""What a ChainerJob's API server would keep or drop is a warning, not an error: the job still
runs (exit 0), and the warning names the field, says it has no effect, and suggests the
field that was probably meant."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainjobs.cli import main
from trainjobs.kinds.registry import parse_job

NO_EFFECT = (
    "not a field of ChainerJob kubeflow.org/v1alpha1: Kubeflow's API server keeps or drops it "
    "and its operator ignores it, so it has no effect here"
)


def validate(tmp_path: Path, capsys: Any, document: dict[str, Any]) -> tuple[int, list[str]]:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document), encoding="utf-8")
    code = main(["validate", str(spec)])
    err = capsys.readouterr().err
    return code, [line.removeprefix(f"warning: {spec}: ") for line in err.splitlines()]


def test_a_misspelled_master_field_is_a_warning_that_suggests_the_real_one(tmp_path, capsys, job):
    job["spec"]["master"]["backofflimit"] = 3
    assert validate(tmp_path, capsys, job) == (
        0,
        [f"spec.master.backofflimit: {NO_EFFECT}; did you mean 'backoffLimit'?"],
    )


def test_the_misspelled_field_has_no_effect(job):
    job["spec"]["master"]["backofflimit"] = 3
    master = parse_job(job, "job.yaml").graph.get("Job/demo-master").manifest
    assert "backoffLimit" not in master["spec"]


def test_an_unknown_spec_field_is_a_warning(tmp_path, capsys, job):
    job["spec"]["workers"] = {}
    assert validate(tmp_path, capsys, job) == (
        0,
        [f"spec.workers: {NO_EFFECT}; did you mean 'worker'?"],
    )


def test_an_unknown_mpi_config_field_is_a_warning(tmp_path, capsys, job):
    job["spec"]["worker"]["mpiConfig"] = {"slot": 2}
    assert validate(tmp_path, capsys, job) == (
        0,
        [f"spec.worker.mpiConfig.slot: {NO_EFFECT}; did you mean 'slots'?"],
    )


def test_a_worker_restart_policy_other_than_always_runs_as_always_with_a_note(job):
    job["spec"]["worker"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    definition = parse_job(job, "job.yaml")
    assert [str(w) for w in definition.warnings] == [
        "spec.worker.template.spec.restartPolicy: 'OnFailure' runs as 'Always': workers are a "
        "StatefulSet, which restarts them whatever their exit code, and they keep running "
        "until the master ends"
    ]
    statefulset = definition.graph.get("StatefulSet/demo-worker").manifest
    assert statefulset["spec"]["template"]["spec"]["restartPolicy"] == "Always"


def test_status_of_a_saved_job_is_ignored_without_a_warning(job):
    job["status"] = {"active": 1}
    assert parse_job(job, "job.yaml").warnings == ()
