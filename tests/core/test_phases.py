"""One JobPhase for local runs and watched jobs: terminal or not, written as its name."""

from __future__ import annotations

import json

from trainjobs.cluster.status import JobStatus
from trainjobs.core.phases import JobPhase
from trainjobs.local.results import RunResult


def test_a_job_has_ended_once_it_succeeded_failed_was_deleted_or_was_interrupted() -> None:
    assert [phase.value for phase in JobPhase if phase.is_terminal()] == [
        "Succeeded",
        "Failed",
        "Deleted",
        "Interrupted",
    ]
    assert [phase.value for phase in JobPhase if not phase.is_terminal()] == [
        "Pending",
        "Running",
        "Suspended",
        "Missing",
        "Unknown",
    ]


def test_a_phase_prints_and_serialises_as_its_name() -> None:
    assert f"{JobPhase.SUCCEEDED} ({JobPhase.FAILED})" == "Succeeded (Failed)"
    assert json.dumps({"phase": JobPhase.DELETED}) == '{"phase": "Deleted"}'
    assert JobPhase("Running") is JobPhase.RUNNING


def test_a_watched_jobs_outputs_hold_the_phase_as_a_plain_string() -> None:
    outputs = JobStatus(phase=JobPhase.SUCCEEDED).to_outputs()
    assert outputs["phase"] == "Succeeded"
    assert type(outputs["phase"]) is str
    assert JobStatus(phase=JobPhase.DELETED).terminal
    assert not JobStatus(phase=JobPhase.SUSPENDED).terminal


def test_a_local_runs_summary_holds_the_outcome_as_a_plain_string(tmp_path) -> None:
    result = RunResult(
        job="demo",
        outcome=JobPhase.INTERRUPTED,
        reason="SIGTERM",
        message="stopped by SIGTERM",
        exit_code=143,
        duration_seconds=1.0,
        attempts=1,
        retries=0,
        backoff_limit=6,
        run_dir=tmp_path,
        run_id="1",
        network="loopback",
        leftovers=[],
    )
    summary = result.summary()
    assert summary["outcome"] == "Interrupted"
    assert type(summary["outcome"]) is str
