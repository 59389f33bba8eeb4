"""Progress lines while a job runs: at a steady pace, and on every change of its state."""

from __future__ import annotations

from collections.abc import Callable

from trainjobs.cluster.status import JobStatus
from trainjobs.core.durations import format_duration

PROGRESS_INTERVAL_SECONDS = 30.0
"""A progress line at least this often while nothing changes, so a long job looks alive."""


Reporter = Callable[[str], None]


def quiet(_message: str) -> None:
    """The default reporter: say nothing."""


class Progress:
    """Progress lines at a steady pace and on every change of phase or pod counts."""

    def __init__(self, report: Reporter, label: str, clock: Callable[[], float], interval: float):
        self.report = report
        self.label = label
        self.clock = clock
        self.interval = interval
        self.started = clock()
        self.next_at = self.started + interval
        self.last_key: tuple[str, int, int, int, int] | None = None

    def observe(self, status: JobStatus) -> None:
        key = (status.phase, status.active, status.ready, status.succeeded, status.failed)
        if key != self.last_key:
            self.last_key = key
            self._emit(status)

    def tick(self, status: JobStatus | None) -> None:
        if status is not None and self.clock() >= self.next_at:
            self._emit(status)

    def _emit(self, status: JobStatus) -> None:
        now = self.clock()
        self.next_at = now + self.interval
        elapsed = format_duration(round(now - self.started))
        self.report(f"job {self.label}: {status.counts()}, {elapsed} elapsed")
