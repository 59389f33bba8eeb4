"""A Job's state as the watcher reads it: a derived phase, the terminal condition, counts."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.objects import ApiObject
from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from kubernetes.client import V1Job, V1JobCondition, V1JobStatus


WORKER_FAILED = "WorkerFailed"
"""The reason of a job that failed because a Job other than its master Job failed."""


PERMANENT_FAILURE = "PodFailurePolicy"
"""The Failed reason of a Job whose podFailurePolicy failed it at once: Kubeflow's
``ExitCode`` policy met an exit code 1-127."""


def human_duration(seconds: float) -> str:
    """A duration as kubectl prints AGE and DURATION (k8s.io/apimachinery
    pkg/util/duration/duration.go ``HumanDuration``): ``45s``, ``3m20s``, ``62m``, ``5h12m``,
    ``30h``, ``3d4h``, ``20d``, ``2y10d``; ``0s`` for a time slightly ahead (clock skew)."""
    if seconds < -1:
        return "<invalid>"
    whole = max(0, int(seconds))
    minutes, hours, days = whole // 60, whole // 3600, whole // 86400
    if whole < 120:
        return f"{whole}s"
    if minutes < 10:
        rest = whole % 60
        return f"{minutes}m{rest}s" if rest else f"{minutes}m"
    if hours < 3:
        return f"{minutes}m"
    if hours < 8:
        rest = minutes % 60
        return f"{hours}h{rest}m" if rest else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        rest = hours % 24
        return f"{days}d{rest}h" if rest else f"{days}d"
    if hours < 24 * 365 * 2:
        return f"{days}d"
    years = days // 365
    if years < 8:
        rest = days % 365
        return f"{years}y{rest}d" if rest else f"{years}y"
    return f"{years}y"


def _timestamp(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class JobStatus:
    """What the watcher knows about the master Job at one moment.

    When a worker Job fails first, the job's final status is the master Job's, marked
    Failed with reason ``WorkerFailed`` and ``failed_worker`` set.

    ``phase`` is derived, since Jobs have none: Pending, Running, Suspended, then one of the
    terminal Succeeded, Failed or Deleted. ``reason`` and ``message`` come from the terminal
    condition (e.g. ``BackoffLimitExceeded``); a Complete condition without a reason (before
    Kubernetes 1.31) reports ``Complete``.
    """

    phase: JobPhase
    reason: str | None = None
    message: str | None = None
    start_time: datetime | None = None
    completion_time: datetime | None = None
    active: int = 0
    ready: int = 0
    succeeded: int = 0
    failed: int = 0
    uid: str | None = None
    failed_worker: str | None = None
    """The Job other than the master whose failure ended the job (reason ``WorkerFailed``),
    else None. The counts and times are still the master Job's; the end time is that Job's
    failure."""

    @property
    def terminal(self) -> bool:
        return JobPhase(self.phase).is_terminal()

    @property
    def duration_seconds(self) -> float | None:
        if self.start_time is None or self.completion_time is None:
            return None
        return (self.completion_time - self.start_time).total_seconds()

    @classmethod
    def from_job(cls, job: V1Job) -> JobStatus:
        # No status yet (the Job controller has not written one) reads as an empty one.
        status = job.status or ApiObject({})
        conditions = {c.type: c for c in status.conditions or [] if c.status == "True"}
        phase, reason, message, end = _derive_phase(job, status, conditions)
        return cls(
            phase=phase,
            reason=reason,
            message=message,
            start_time=status.start_time,
            completion_time=end,
            active=status.active or 0,
            ready=status.ready or 0,
            succeeded=status.succeeded or 0,
            failed=status.failed or 0,
            uid=job.metadata.uid if job.metadata else None,
        )

    def as_deleted(self, message: str) -> JobStatus:
        """This status, but ended by the Job's deletion (its counts stay the last seen)."""
        return dataclasses.replace(
            self, phase=JobPhase.DELETED, reason="Deleted", message=message, completion_time=None
        )

    def counts(self) -> str:
        """``Running: 2 active (1 ready), 0 succeeded, 0 failed``. Pods that are active but
        not ready are typically still Pending, e.g. waiting for a GPU node."""
        return (
            f"{self.phase}: {self.active} active ({self.ready} ready), "
            f"{self.succeeded} succeeded, {self.failed} failed"
        )

    def to_outputs(self) -> dict[str, Any]:
        return {
            "phase": str(self.phase),
            "reason": self.reason,
            "message": self.message,
            "start_time": _timestamp(self.start_time),
            "completion_time": _timestamp(self.completion_time),
            "duration_seconds": self.duration_seconds,
            "succeeded": self.succeeded,
            "failed": self.failed,
        }


def _derive_phase(
    job: V1Job, status: V1JobStatus, conditions: Mapping[str, V1JobCondition]
) -> tuple[JobPhase, str | None, str | None, datetime | None]:
    """(phase, reason, message, end time). Only Complete and Failed are terminal: since
    Kubernetes 1.31 SuccessCriteriaMet/FailureTarget come first, while pods still stop."""
    if "Complete" in conditions:
        done = conditions["Complete"]
        end = status.completion_time or done.last_transition_time
        return JobPhase.SUCCEEDED, done.reason or "Complete", done.message, end
    if "Failed" in conditions:
        done = conditions["Failed"]
        return JobPhase.FAILED, done.reason or "Failed", done.message, done.last_transition_time
    if job.spec is not None and job.spec.suspend:
        return JobPhase.SUSPENDED, None, None, None
    if status.active:
        return JobPhase.RUNNING, None, None, None
    return JobPhase.PENDING, None, None, None
