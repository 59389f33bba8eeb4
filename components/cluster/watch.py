"""The watch loop: follow a training Job (and its worker Jobs) until it ends.

The seed design's operator did this in a control loop; here it is one blocking call,
:func:`watch_job`, which :mod:`components.cluster.supervisor` runs for both the Pulumi dynamic
resource and the `trainjobs watch` command.

How the watch works, and the Kubernetes behaviour each step handles:

- List the one Job (field selector ``metadata.name=NAME``), then watch from the list's
  resourceVersion. A Job that already finished while nobody watched is seen by the list.
- With worker Jobs (TFJob/PyTorchJob replicas) and a label selector that matches all of the
  job's Jobs, the list and the watch use that selector instead: the master Job and the
  worker Jobs arrive in one stream, with the same list/watch discipline. A worker Job that
  fails (Failed=True: PodFailurePolicy, BackoffLimitExceeded...) fails the whole job at
  once, as in Kubeflow: the master would otherwise wait for that worker until its deadline.
  The outcome is Failed with reason ``WorkerFailed``, the master Job is stopped too
  (``spec.parallelism: 0``) and the diagnosis reads the failed worker's pods. A worker Job
  that completes is not terminal (workers may finish before the chief). Without worker
  Jobs (ChainerJob) the selector is ignored and only the master Job is watched.
- Any end of a watch stream (dropped connection, read timeout, 5xx, ``410 Gone``, the
  server closing it) leads back to a fresh list. The Job's conditions are level state, so
  re-listing can never lose the terminal transition, however many events were missed.
  ``410 Gone`` means the resourceVersion is older than the server's watch history: only a
  new list gives a usable one.
- Terminal outcomes: condition ``Complete=True`` (Succeeded), ``Failed=True`` with any reason
  (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy...), and the Job disappearing
  or being replaced by another Job of the same name (Deleted), and a failed worker Job (see
  above). The supervisor then scales the workers to 0 in every case: a failed launcher
  must not leave GPU workers idling.
- The watcher has its own deadline (Python dynamic providers ignore Pulumi's
  customTimeouts). On timeout the workers are left running and the Job is untouched.

Kubernetes client imports stay inside functions: `trainjobs --help` stays fast, and the
Pulumi dynamic provider that uses this module pickles cleanly.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Collection, Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from components.cluster.diagnosis import describe_error
from components.cluster.errors import (
    DEFAULT_RETRY,
    RetryPolicy,
    access_error,
    is_read_timeout,
    is_transient,
)
from components.cluster.progress import PROGRESS_INTERVAL_SECONDS, Progress, Reporter, quiet
from components.cluster.status import FAILED, SUCCEEDED, WORKER_FAILED, JobStatus
from components.core.durations import format_duration
from components.core.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1Job

DEFAULT_TIMEOUT_SECONDS = 24 * 60 * 60
"""How long `pulumi up` or `trainjobs watch` waits for a job before giving up (24h)."""


PULUMI_RESUME_HINT = "run `pulumi up` again to keep watching"


_SERVER_WATCH_GRACE_SECONDS = 5
_MIN_WINDOW_SECONDS = 0.05


# ---------------------------------------------------------------------------------------------
# Errors


class JobWatchTimeout(Exception):
    """The watcher's own deadline passed while the Job was still running.

    Nothing is scaled down: the job may be fine and merely long. Watching again (a new
    `pulumi up`, or the same `trainjobs watch`) picks the Job up where it is.
    """

    def __init__(
        self,
        namespace: str,
        job_name: str,
        timeout_seconds: float,
        status: JobStatus | None,
        resume_hint: str = PULUMI_RESUME_HINT,
    ) -> None:
        self.namespace = namespace
        self.job_name = job_name
        self.timeout_seconds = timeout_seconds
        self.status = status
        state = f" ({status.counts()})" if status is not None else ""
        super().__init__(
            f"job {namespace}/{job_name} still running after {format_duration(timeout_seconds)}"
            f"{state}; workers left running; {resume_hint}"
        )

    def to_json(self) -> dict[str, Any]:
        """The `--json` form: the last seen status, marked as timed out."""
        outputs = self.status.to_outputs() if self.status is not None else {}
        return {
            "job": f"{self.namespace}/{self.job_name}",
            **outputs,
            "workers_scaled_down": False,
            "diagnosis": None,
            "timed_out": True,
            "error": str(self),
        }


# ---------------------------------------------------------------------------------------------
# Inputs


# ---------------------------------------------------------------------------------------------
# Results


# ---------------------------------------------------------------------------------------------
# Durations


# ---------------------------------------------------------------------------------------------
# Connecting


# ---------------------------------------------------------------------------------------------
# Watching


def read_job(
    api: ApiClient, namespace: str, job_name: str, *, request_timeout: float = 30.0
) -> tuple[V1Job | None, str]:
    """The Job (None if absent) and the list's resourceVersion to watch from.

    A list with a field selector, not a GET: a GET's object resourceVersion is not a safe
    starting point for a watch of the collection, the list's is.
    """
    items, resource_version = _list_jobs(
        api, namespace, {"field_selector": f"metadata.name={job_name}"}, request_timeout
    )
    return (items[0] if items else None), resource_version


def list_jobs(
    api: ApiClient, namespace: str, selector: str, *, request_timeout: float = 30.0
) -> tuple[list[V1Job], str]:
    """The Jobs that match a label selector and the list's resourceVersion to watch from."""
    return _list_jobs(api, namespace, {"label_selector": selector}, request_timeout)


def _list_jobs(
    api: ApiClient, namespace: str, selector: Mapping[str, str], request_timeout: float
) -> tuple[list[V1Job], str]:
    from kubernetes import client

    listing = client.BatchV1Api(api).list_namespaced_job(
        namespace, **selector, _request_timeout=(min(10.0, request_timeout), request_timeout)
    )
    return list(listing.items or []), listing.metadata.resource_version


def jobs_by_name(jobs: Iterable[V1Job]) -> dict[str, V1Job]:
    return {job.metadata.name: job for job in jobs}


def failed_worker_job(jobs: Mapping[str, V1Job], worker_jobs: Iterable[str]) -> str | None:
    """The first worker Job (in name order) that has failed, if any."""
    for name in sorted(worker_jobs):
        job = jobs.get(name)
        if job is not None and JobStatus.from_job(job).phase == FAILED:
            return name
    return None


class _JobWatch:
    """One watch of one Job (and of its worker Jobs, through a label selector): list, watch,
    and back to list whenever the stream ends."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        job_name: str,
        *,
        job_uid: str | None,
        selector: str | None,
        worker_jobs: Collection[str],
        timeout_seconds: float,
        report: Reporter,
        resume_hint: str,
        progress_interval: float,
        retry: RetryPolicy,
        clock: Callable[[], float],
        sleep: Callable[[float], None],
    ) -> None:
        from kubernetes import client

        self.api = api
        self.batch = client.BatchV1Api(api)
        self.namespace = namespace
        self.job_name = job_name
        self.job_uid = job_uid
        self.worker_jobs = frozenset(worker_jobs) - {job_name}
        # Only worker Jobs need the wider stream: without them, watch the one Job as ever.
        self.selector = selector if self.worker_jobs else None
        self.workers_done: set[str] = set()
        self.timeout_seconds = timeout_seconds
        self.report = report
        self.resume_hint = resume_hint
        self.retry = retry
        self.clock = clock
        self.sleep = sleep
        self.label = f"{namespace}/{job_name}"
        self.progress = Progress(report, self.label, clock, progress_interval)
        self.deadline = self.progress.started + timeout_seconds
        self.backoff = retry.initial_backoff
        self.last: JobStatus | None = None

    def run(self) -> JobStatus:
        from kubernetes.client.exceptions import ApiException

        while True:
            self.progress.tick(self.last)
            if self.clock() >= self.deadline:
                raise JobWatchTimeout(
                    self.namespace,
                    self.job_name,
                    self.timeout_seconds,
                    self.last,
                    self.resume_hint,
                )
            try:
                final = self._list_then_watch()
            except ApiException as error:
                if error.status == HTTPStatus.GONE:
                    # The resourceVersion fell out of the server's watch history (410 Gone):
                    # only a new list gives a valid one. No pause: the server is healthy.
                    self.report(f"job {self.label}: watch expired (410 Gone); re-listing")
                    continue
                if not is_transient(error):
                    raise access_error(error, self._action(), self.namespace) from error
                self._pause(error)
                continue
            except Exception as error:
                if is_read_timeout(error):
                    continue  # a quiet window ended: re-list, which also proves the link is up
                if not is_transient(error):
                    raise
                self._pause(error)
                continue
            if final is not None:
                return final

    def _action(self) -> str:
        if self.selector is None:
            return f"watch Job {self.label}"
        return f"watch Job {self.label} and its worker Jobs (label selector {self.selector!r})"

    def _list_then_watch(self) -> JobStatus | None:
        timeout = self.retry.request_timeout
        if self.selector is None:
            job, resource_version = read_job(
                self.api, self.namespace, self.job_name, request_timeout=timeout
            )
            self.backoff = self.retry.initial_backoff
            final = self._observe(job, deleted=False)
        else:
            jobs, resource_version = list_jobs(
                self.api, self.namespace, self.selector, request_timeout=timeout
            )
            self.backoff = self.retry.initial_backoff
            final = self._observe_listed(jobs_by_name(jobs))
        if final is not None:
            return final
        return self._watch(resource_version)

    def _observe_listed(self, jobs: Mapping[str, V1Job]) -> JobStatus | None:
        """The master Job first: when a list shows it ended, that is the outcome (a chief that
        succeeded decides the job, as in Kubeflow); then the worker Jobs."""
        master = jobs.get(self.job_name)
        if master is None:
            master = self._unlabelled_master()
        final = self._observe(master, deleted=False)
        if final is not None:
            return final
        for name in sorted(self.worker_jobs):
            if name in jobs and (final := self._observe_worker(jobs[name])) is not None:
                return final
        return None

    def _unlabelled_master(self) -> V1Job | None:
        """The master Job is not among the Jobs the selector matches. Absent (or replaced),
        it ends the watch as Deleted; present with our uid, the selector is wrong, and
        watching through it would call a running job deleted."""
        job, _ = read_job(
            self.api, self.namespace, self.job_name, request_timeout=self.retry.request_timeout
        )
        if job is not None and self.job_uid in (None, job.metadata.uid):
            raise UserError(
                f"Job {self.label} does not match the label selector {self.selector!r}, which "
                "must match it and its worker Jobs; check the selector (e.g. "
                "training.kubeflow.org/job-name=JOB) and the Job's labels"
            )
        return job

    def _watch(self, resource_version: str) -> JobStatus | None:
        """Follow events until the Job ends; None when the stream ends first.

        The client-side read timeout is the time to the next progress line or the deadline,
        so a quiet watch wakes up on time, and a half-open connection (a load balancer that
        silently dropped it) is noticed within one window. The server-side timeoutSeconds is
        only a backstop a little later.
        """
        from kubernetes import watch

        now = self.clock()
        window = max(_MIN_WINDOW_SECONDS, min(self.deadline - now, self.progress.next_at - now))
        selector = (
            {"field_selector": f"metadata.name={self.job_name}"}
            if self.selector is None
            else {"label_selector": self.selector}
        )
        stream = watch.Watch().stream(
            self.batch.list_namespaced_job,
            self.namespace,
            **selector,
            resource_version=resource_version,
            timeout_seconds=math.ceil(window) + _SERVER_WATCH_GRACE_SECONDS,
            _request_timeout=(self.retry.connect_timeout, window),
        )
        try:
            for event in stream:
                kind = event["type"]
                if kind not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK: nothing to learn, we re-list after every stream
                final = self._observe_event(event["object"], deleted=kind == "DELETED")
                if final is not None:
                    return final
                if self.clock() >= self.deadline:
                    return None
                self.progress.tick(self.last)
        finally:
            stream.close()  # releases the connection now, not when garbage collected
        return None

    def _observe_event(self, job: V1Job, *, deleted: bool) -> JobStatus | None:
        """An event of the master Job or of a worker Job; other Jobs the selector matches
        (and a worker Job deleted without having failed) change nothing."""
        name = job.metadata.name
        if name == self.job_name:
            return self._observe(job, deleted=deleted)
        if name in self.worker_jobs:
            return self._observe_worker(job)
        return None

    def _observe_worker(self, job: V1Job) -> JobStatus | None:
        """A failed worker Job ends the job as Failed (WorkerFailed), with the master Job's
        last seen counts; a completed one is only reported."""
        name = job.metadata.name
        worker = JobStatus.from_job(job)
        if worker.phase == FAILED:
            detail = ": ".join(part for part in (worker.reason, worker.message) if part)
            message = f"worker Job {self.namespace}/{name} failed" + (
                f" ({detail})" if detail else ""
            )
            base = self.last or JobStatus(phase="Pending", uid=self.job_uid)
            final = dataclasses.replace(
                base,
                phase=FAILED,
                reason=WORKER_FAILED,
                message=message,
                completion_time=worker.completion_time,
                failed_worker=name,
            )
            self.last = final
            self.progress.observe(final)
            return final
        if worker.phase == SUCCEEDED and name not in self.workers_done:
            self.workers_done.add(name)
            self.report(
                f"job {self.label}: worker Job {self.namespace}/{name} succeeded; "
                f"waiting for Job {self.label}"
            )
        return None

    def _observe(self, job: V1Job | None, *, deleted: bool) -> JobStatus | None:
        """Record the master Job's state; return it if the job is over.

        A Job that is absent, or present under our name with another uid (deleted and
        recreated behind our back), ends the watch as Deleted: the run we watched is gone.
        A DELETED event whose object already carries Complete/Failed keeps that outcome
        (e.g. ttlSecondsAfterFinished removed it right after it finished).
        """
        if job is None or (self.job_uid and job.metadata.uid != self.job_uid):
            if job is None:
                message = f"Job {self.label} no longer exists; it was deleted before it finished"
            else:
                message = (
                    f"Job {self.label} was replaced by another Job with the same name "
                    f"(uid {job.metadata.uid}, expected {self.job_uid})"
                )
            final = (self.last or JobStatus(phase="Pending", uid=self.job_uid)).as_deleted(message)
            self.last = final
            return final
        status = JobStatus.from_job(job)
        if deleted and not status.terminal:
            status = status.as_deleted(f"Job {self.label} was deleted before it finished")
        self.last = status
        self.progress.observe(status)
        return status if status.terminal else None

    def _pause(self, error: BaseException) -> None:
        delay = max(0.0, min(self.backoff, self.deadline - self.clock()))
        self.report(
            f"job {self.label}: API server unavailable ({describe_error(error)}); "
            f"retrying in {delay:.1f}s"
        )
        self.sleep(delay)
        self.backoff = min(self.backoff * 2, self.retry.max_backoff)


def watch_job(
    api: ApiClient,
    namespace: str,
    job_name: str,
    *,
    job_uid: str | None = None,
    selector: str | None = None,
    worker_jobs: Collection[str] = (),
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    report: Reporter = quiet,
    resume_hint: str = PULUMI_RESUME_HINT,
    progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    retry: RetryPolicy = DEFAULT_RETRY,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> JobStatus:
    """Block until the Job is Complete, Failed or gone, or one of ``worker_jobs`` failed, and
    return the final status (``failed_worker`` names the worker Job in the last case).

    ``selector`` is a label selector that matches the master Job and the worker Jobs; it is
    used only with ``worker_jobs`` (and needed for them to be watched at all). Raises
    JobWatchTimeout after ``timeout_seconds``, ClusterAccessError when the API server refuses
    the watcher (401/403), and UserError when the selector does not match the master Job;
    everything transient is retried until then.
    """
    return _JobWatch(
        api,
        namespace,
        job_name,
        job_uid=job_uid,
        selector=selector,
        worker_jobs=worker_jobs if selector is not None else (),
        timeout_seconds=timeout_seconds,
        report=report,
        resume_hint=resume_hint,
        progress_interval=progress_interval,
        retry=retry,
        clock=clock,
        sleep=sleep,
    ).run()


# ---------------------------------------------------------------------------------------------
# Scaling down


# ---------------------------------------------------------------------------------------------
# The whole job


# ---------------------------------------------------------------------------------------------
# `trainjobs watch`
