"""A training job's phase, one type for local runs and jobs watched on a cluster."""

from __future__ import annotations

from enum import StrEnum


class JobPhase(StrEnum):
    """Where a training job stands. A ``str``: printed, compared and written to JSON as its
    name, so summaries, records and outputs read as they always did.

    Kubernetes Jobs have no phase: on a cluster it is derived from the Job's conditions
    (:mod:`trainjobs.cluster.status`), locally from the run's Jobs (:mod:`trainjobs.local`).
    """

    PENDING = "Pending"
    RUNNING = "Running"
    SUSPENDED = "Suspended"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    DELETED = "Deleted"
    """Its Job was deleted before it finished (cluster)."""
    INTERRUPTED = "Interrupted"
    """A signal stopped the local run, or its runtime was killed."""
    MISSING = "Missing"
    """``trainjobs status``: the job's Jobs do not exist (never made, or no longer deployed)."""
    UNKNOWN = "Unknown"
    """``trainjobs runs``: a local run ended without a summary (killed, not yet cleaned up
    after)."""

    def is_terminal(self) -> bool:
        """The job has ended and will not change again."""
        return self in _TERMINAL


_TERMINAL = frozenset({JobPhase.SUCCEEDED, JobPhase.FAILED, JobPhase.DELETED, JobPhase.INTERRUPTED})
