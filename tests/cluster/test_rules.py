"""Kubeflow's rules for a training job's end, applied to its Jobs' states (pure)."""

from __future__ import annotations

import pytest

from trainjobs.cluster.rules import CompletionRules, Elastic, decide
from trainjobs.cluster.status import JobStatus

NS = "default"
WORKERS = ("el-worker-0", "el-worker-1", "el-worker-2")


def running() -> JobStatus:
    return JobStatus(phase="Running", active=1, ready=1)


def succeeded() -> JobStatus:
    return JobStatus(phase="Succeeded", reason="CompletionsReached", succeeded=1)


def failed(reason: str = "BackoffLimitExceeded", message: str = "too many") -> JobStatus:
    return JobStatus(phase="Failed", reason=reason, message=message, failed=1)


def elastic(min_members: int = 2, restart_never: bool = False) -> CompletionRules:
    return CompletionRules(
        WORKERS[0], WORKERS, success_any=True, elastic=Elastic(min_members, restart_never)
    )


def states(*values: JobStatus) -> dict[str, JobStatus]:
    return dict(zip(WORKERS, values, strict=True))


def test_the_master_decides_alone_by_default() -> None:
    rules = CompletionRules("chief", worker_jobs=("worker",))

    final, notes = decide(rules, {"chief": succeeded(), "worker": running()}, NS)

    assert (final, notes) == (succeeded(), ())


def test_every_deciding_job_must_succeed_unless_any_one_does() -> None:
    rules = CompletionRules(WORKERS[0], WORKERS)

    assert decide(rules, states(succeeded(), succeeded(), running()), NS) == (None, ())
    final, _ = decide(rules, states(succeeded(), succeeded(), succeeded()), NS)
    assert (final.phase, final.message) == (
        "Succeeded",
        "all 3 Jobs that decide the job succeeded",
    )


def test_a_failed_worker_fails_a_job_that_is_not_elastic() -> None:
    rules = CompletionRules("chief", worker_jobs=("worker",))

    final, _ = decide(rules, {"chief": running(), "worker": failed()}, NS)

    assert (final.phase, final.reason, final.message, final.failed_worker) == (
        "Failed",
        "WorkerFailed",
        "worker Job default/worker failed (BackoffLimitExceeded: too many)",
        "worker",
    )


def test_an_elastic_job_succeeds_when_any_worker_does() -> None:
    final, _ = decide(elastic(), states(running(), succeeded(), running()), NS)

    assert (final.phase, final.message) == (
        "Succeeded",
        "worker Job default/el-worker-1 succeeded, which ends the elastic job: its torchrun "
        "group has ended",
    )


def test_an_elastic_job_goes_on_without_a_node_lost_after_its_retries() -> None:
    final, notes = decide(elastic(), states(running(), failed(), running()), NS)

    assert final is None
    assert notes == (
        "worker Job default/el-worker-1 failed (BackoffLimitExceeded: too many); 2 of 3 "
        "workers left (elasticPolicy.minReplicas 2): torchrun's group goes on",
    )


def test_an_elastic_job_fails_when_fewer_workers_than_min_replicas_are_left() -> None:
    final, _ = decide(elastic(), states(failed(), running(), failed()), NS)

    assert (final.phase, final.reason, final.message) == (
        "Failed",
        "WorkerFailed",
        "worker Job default/el-worker-2 failed (BackoffLimitExceeded: too many); 1 of 3 "
        "workers left, fewer than elasticPolicy.minReplicas 2: torchrun's group cannot go on",
    )


@pytest.mark.parametrize(
    ("rules", "failure"),
    [
        (elastic(), failed("PodFailurePolicy", "exit code 1")),
        (elastic(restart_never=True), failed()),
    ],
    ids=["ExitCode's permanent exit code", "restartPolicy Never"],
)
def test_an_elastic_job_fails_at_once_as_the_operator_decides(
    rules: CompletionRules, failure: JobStatus
) -> None:
    final, _ = decide(rules, states(running(), failure, running()), NS)

    assert (final.phase, final.failed_worker) == ("Failed", "el-worker-1")


def test_a_success_seen_with_a_failure_wins() -> None:
    rules = CompletionRules("chief", worker_jobs=("worker",))

    final, _ = decide(rules, {"chief": succeeded(), "worker": failed()}, NS)

    assert final.phase == "Succeeded"


def test_the_master_must_decide_first() -> None:
    with pytest.raises(ValueError, match="the master Job 'b' must decide the job first"):
        CompletionRules("b", ("a", "b"))
