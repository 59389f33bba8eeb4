"""Kubeflow's rules for when a training job ends, applied to the states of its Jobs.

A training job is several batch/v1 Jobs (the ChainerJob master, an MPIJob's launcher, which
alone decides as every MPIJob operator rules; a TFJob's or PyTorchJob's
Job per replica index). Which of them decide the job follows training-operator
(``release-1.9``): the chief or master decides (``UpdateJobStatus``), without one worker 0
or every worker (TFJob ``successPolicy``, PyTorchJob without a Master), and for an elastic
PyTorchJob any worker (``pytorchjob_controller.go`` ``UpdateJobStatus``: "If
`ElasticPolicy` is not nil and any worker has completed"). Any replica's permanent failure
fails the job (``common/pod.go`` ``ReconcilePods`` for ``ExitCode``, ``UpdateJobStatus`` for
``Never``), except that an elastic job is torchrun's group: a node lost for good while the
group can still go on is not its end.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

from trainjobs.cluster.status import PERMANENT_FAILURE, WORKER_FAILED, JobStatus
from trainjobs.core.phases import JobPhase


@dataclass(frozen=True)
class Elastic:
    """An elastic PyTorchJob: its workers form one torchrun group that outlives lost nodes.

    A worker whose Job fails after its own retries (``OnFailure``, retryable exit codes) is a
    node the group goes on without, as long as ``min_members`` (``elasticPolicy.minReplicas``)
    are left: torchrun's next rendezvous round needs that many. A worker that fails with
    restartPolicy ``Never``, or an ``ExitCode`` policy's permanent exit code, fails the job
    at once, as Kubeflow's operator does for any replica.
    """

    min_members: int
    restart_never: bool = False

    def to_dict(self) -> dict[str, object]:
        return {"min_members": self.min_members, "restart_never": self.restart_never}


@dataclass(frozen=True)
class CompletionRules:
    """Which Jobs of a training job decide its end.

    ``master`` is the first Job of ``success_jobs``: its state is the job's phase while it
    runs, and its disappearance ends the watch (Deleted). The job succeeds when every one of
    ``success_jobs`` is Complete, or any one with ``success_any``. A failed Job among them
    or among ``worker_jobs`` fails the job (see :class:`Elastic` for the exception).
    """

    master: str
    success_jobs: tuple[str, ...] = ()
    worker_jobs: tuple[str, ...] = ()
    success_any: bool = False
    elastic: Elastic | None = None

    def __post_init__(self) -> None:
        success = self.success_jobs or (self.master,)
        if success[0] != self.master:
            raise ValueError(f"the master Job {self.master!r} must decide the job first")
        object.__setattr__(self, "success_jobs", tuple(success))
        others = tuple(name for name in self.worker_jobs if name not in success)
        object.__setattr__(self, "worker_jobs", others)

    @property
    def watched(self) -> tuple[str, ...]:
        """Every Job whose state can end the job, the master first."""
        return self.success_jobs + self.worker_jobs

    @property
    def others(self) -> tuple[str, ...]:
        """The watched Jobs besides the master: they are only seen through a label selector."""
        return self.watched[1:]


def decide(
    rules: CompletionRules, statuses: Mapping[str, JobStatus], namespace: str
) -> tuple[JobStatus | None, tuple[str, ...]]:
    """The job's final status, or None while it goes on, and the notes about nodes an elastic
    job lost on the way. ``statuses`` holds the master (present, the right uid) and whichever
    other watched Jobs exist. A success seen in the same list as a failure wins, as the
    operator decides success first."""
    master = statuses[rules.master]

    def phase(name: str) -> JobPhase | None:
        status = statuses.get(name)
        return status.phase if status is not None else None

    done = [name for name in rules.success_jobs if phase(name) == JobPhase.SUCCEEDED]
    if done and (rules.success_any or len(done) == len(rules.success_jobs)):
        return _succeeded(rules, master, statuses, done, namespace), ()
    failed = [name for name in rules.watched if phase(name) == JobPhase.FAILED]
    if not failed:
        return None, ()
    if rules.elastic is None:
        first = failed[0]
        if first == rules.master:
            return master, ()
        return _job_failed(master, statuses[first], first, namespace), ()
    elastic = rules.elastic
    for name in failed:
        status = statuses[name]
        if status.reason == PERMANENT_FAILURE or elastic.restart_never:
            return _job_failed(master, status, name, namespace), ()
    members = len(rules.success_jobs)
    left = members - sum(1 for name in rules.success_jobs if phase(name) == JobPhase.FAILED)
    if left < elastic.min_members:
        last = failed[-1]
        cannot = (
            f"; {left} of {members} workers left, fewer than elasticPolicy.minReplicas "
            f"{elastic.min_members}: torchrun's group cannot go on"
        )
        return _job_failed(master, statuses[last], last, namespace, cannot), ()
    notes = tuple(
        f"{_failed_message(statuses[name], name, namespace)}; {left} of {members} workers "
        f"left (elasticPolicy.minReplicas {elastic.min_members}): torchrun's group goes on"
        for name in failed
    )
    return None, notes


def _succeeded(
    rules: CompletionRules,
    master: JobStatus,
    statuses: Mapping[str, JobStatus],
    done: list[str],
    namespace: str,
) -> JobStatus:
    if done == [rules.master] and len(rules.success_jobs) == 1:
        return master
    if rules.success_any:
        winner = statuses[done[0]]
        message = (
            f"worker Job {namespace}/{done[0]} succeeded, which ends the elastic job: its "
            "torchrun group has ended"
        )
        return dataclasses.replace(
            master,
            phase=JobPhase.SUCCEEDED,
            reason=winner.reason,
            message=message,
            completion_time=winner.completion_time,
        )
    ends = [statuses[name].completion_time for name in done]
    known = [end for end in ends if end is not None]
    return dataclasses.replace(
        master,
        message=f"all {len(done)} Jobs that decide the job succeeded",
        completion_time=max(known) if known else master.completion_time,
    )


def _failed_message(status: JobStatus, name: str, namespace: str) -> str:
    detail = ": ".join(part for part in (status.reason, status.message) if part)
    return f"worker Job {namespace}/{name} failed" + (f" ({detail})" if detail else "")


def _job_failed(
    master: JobStatus, status: JobStatus, name: str, namespace: str, extra: str = ""
) -> JobStatus:
    """The job failed because a Job other than the master did (or, elastic, any worker):
    the master's counts and times, that Job's end."""
    return dataclasses.replace(
        master,
        phase=JobPhase.FAILED,
        reason=WORKER_FAILED,
        message=_failed_message(status, name, namespace) + extra,
        completion_time=status.completion_time,
        failed_worker=name,
    )
