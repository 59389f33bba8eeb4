"""How a watched job ended, what was done about its workers, and the report for a person."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainjobs.cluster.diagnosis import Diagnosis
from trainjobs.cluster.scaling import ScaleResult
from trainjobs.cluster.status import JobStatus
from trainjobs.core.durations import format_duration
from trainjobs.core.phases import JobPhase


@dataclass(frozen=True)
class Outcome:
    """How a watched job ended and what the watcher did about it."""

    namespace: str
    job_name: str
    status: JobStatus
    workers: tuple[ScaleResult, ...] = ()
    diagnosis: Diagnosis | None = None
    notes: tuple[str, ...] = ()
    """What else a person should know: pods a cleanPodPolicy left running, a run that had
    already ended, a record or TTL that could not be written."""

    @property
    def succeeded(self) -> bool:
        return self.status.phase == JobPhase.SUCCEEDED

    @property
    def workers_scaled_down(self) -> bool:
        return all(result.scaled_down for result in self.workers)

    def to_outputs(self) -> dict[str, Any]:
        """Plain JSON-able values: the Pulumi resource's outputs and `--json`'s fields."""
        return {
            **self.status.to_outputs(),
            "workers_scaled_down": self.workers_scaled_down,
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis is not None else None,
            "notes": list(self.notes),
        }

    def to_json(self) -> dict[str, Any]:
        return {
            "job": f"{self.namespace}/{self.job_name}",
            **self.to_outputs(),
            "workers": [result.to_dict() for result in self.workers],
            "timed_out": False,
        }

    def describe(self) -> str:
        """A report a person can act on: the outcome, the workers, and on failure why."""
        status = self.status
        head = f"job {self.namespace}/{self.job_name} {status.phase}"
        detail = ": ".join(part for part in (status.reason, status.message) if part)
        if detail:
            head += f" ({detail})"
        if status.duration_seconds is not None:
            verb = "in" if self.succeeded else "after"
            head += f" {verb} {format_duration(status.duration_seconds)}"
        head += f"; {status.succeeded} succeeded, {status.failed} failed pod(s)"
        lines = [head, self._workers_line(), *self.notes]
        if self.diagnosis is not None:
            rendered = self.diagnosis.render()
            if rendered:
                lines.append(rendered)
        return "\n".join(lines)

    def _workers_line(self) -> str:
        if not self.workers:
            return "no workers to stop"
        done = [str(r.worker) for r in self.workers if r.scaled_down]
        stuck = [f"{r.worker} ({r.detail})" for r in self.workers if not r.scaled_down]
        parts = []
        if done:
            parts.append("workers stopped: " + ", ".join(done))
        if stuck:
            parts.append("workers NOT stopped: " + ", ".join(stuck))
        return "; ".join(parts)
