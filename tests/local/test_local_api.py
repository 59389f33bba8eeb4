"""Local runs from Python (Trainer SDK's verbs): start, wait, logs, list, as the CLI runs them."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import trainjobs
from tests.local.test_crash_safety import quick_job
from trainjobs.core.errors import SpecError, UserError


@pytest.fixture
def own_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's runs alone: its own run records and history, an empty working directory."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("TRAINJOBS_STATE_DIR", str(state))
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_a_run_started_from_python_is_waited_for_and_its_logs_read(own_runs: Path):
    job = quick_job(own_runs / "quick.yaml", command=("echo", "hello from python"))
    run = trainjobs.start_local_run(job)
    assert run.run_dir.parent == own_runs / "out" / "runs"
    assert run.run_dir.name.startswith("quick-")
    record = run.wait(timeout=300)
    assert (record.job, record.kind, record.outcome) == ("quick", "ChainerJob", "Succeeded")
    assert run.logs() == ["[quick-master] hello from python"]
    assert run.logs("quick-master") == ["hello from python"]
    assert trainjobs.local_run_logs("quick") == ["[quick-master] hello from python"]
    assert [r.run_dir for r in trainjobs.list_local_runs()] == [run.run_dir]


def test_run_locally_returns_the_failed_outcome_of_a_failing_job(own_runs: Path):
    job = quick_job(own_runs / "fails.yaml", name="fails", command=("false",))
    document = yaml.safe_load(job.read_text())
    document["spec"]["master"]["backoffLimit"] = 0  # one attempt, no restart back-off
    job.write_text(yaml.safe_dump(document))
    record = trainjobs.run_locally(job, run_dir=own_runs / "mine")
    assert (record.job, record.outcome, record.run_dir) == ("fails", "Failed", own_runs / "mine")
    assert [r.run_dir for r in trainjobs.list_local_runs(own_runs / "out" / "runs")] == []


def test_an_invalid_spec_is_refused_before_anything_starts(own_runs: Path):
    job = quick_job(own_runs / "bad.yaml", name="Bad_Name")
    with pytest.raises(SpecError):
        trainjobs.start_local_run(job)
    assert not (own_runs / "out").exists()


def test_a_run_that_ends_without_a_summary_is_a_user_error(own_runs: Path):
    job = quick_job(own_runs / "quick.yaml")
    run = trainjobs.start_local_run(job, runtime="container", run_dir=own_runs / "r")
    run.process.kill()  # killed at once: it never writes a summary
    with pytest.raises(UserError) as refused:
        run.wait()
    assert str(refused.value) == (
        f"the local run in {own_runs / 'r'} did not run: it wrote no summary"
    )
