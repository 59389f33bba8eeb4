"""What a local run reports: its outcome, counts, and the summary.json it writes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from trainjobs.local.ledger import Cleaned


@dataclass(frozen=True)
class RunResult:
    job: str
    outcome: JobPhase
    """Succeeded, Failed or Interrupted."""
    reason: str
    """Completed, BackoffLimitExceeded, PodFailurePolicy, DeadlineExceeded, Unschedulable,
    Error (a fault of the runtime itself, or of the machine: a full disk), or the signal that
    interrupted the run (SIGINT, SIGTERM, SIGHUP). A run whose runtime was killed gets a
    summary with reason Killed from the run that cleans up after it."""
    message: str
    exit_code: int
    duration_seconds: float
    attempts: int
    """How many times a Job's pod command (or its init containers) ran, over every Job."""
    retries: int
    backoff_limit: int
    """The completion Job's."""
    run_dir: Path
    run_id: str
    network: str
    leftovers: list[str]
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per Job: its condition (Complete, Failed, or Active when stopped by the scale-to-0),
    reason, attempts, retries and succeeded indexes."""
    api_calls: dict[str, int] = field(default_factory=dict)
    """API server requests the job's pods made through kubectl, by verb and resource
    (``create pods/exec``): what a cluster's API server would have served them."""

    def summary(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "outcome": str(self.outcome),
            "reason": self.reason,
            "message": self.message,
            "exitCode": self.exit_code,
            "durationSeconds": round(self.duration_seconds, 3),
            "attempts": self.attempts,
            "retries": self.retries,
            "backoffLimit": self.backoff_limit,
            "runId": self.run_id,
            "network": self.network,
            "leftovers": self.leftovers,
            "jobs": self.jobs,
            "apiCalls": self.api_calls,
        }


def killed_summary(dead: Cleaned) -> dict[str, Any]:
    """The summary of a run whose runtime was killed, written by whoever cleaned up after it."""
    return {
        "job": dead.job,
        "outcome": str(JobPhase.INTERRUPTED),
        "reason": "Killed",
        "message": f"the runtime (pid {dead.owner_pid}) ended before the job did (it was killed "
        "or crashed)",
        "runId": dead.run_id,
        "cleanedUp": dead.removed,
        "leftovers": dead.failed,
    }
