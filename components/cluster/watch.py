"""The watch loop: follow a training job's Jobs until the job ends.

The seed design's operator did this in a control loop; here it is one blocking call,
:func:`watch_job`, which :mod:`trainjobs.cluster.supervisor` runs for the Pulumi dynamic
resource and the `trainjobs watch` command.

How the watch works, and the Kubernetes behaviour each step handles:

- List the master Job (field selector ``metadata.name=NAME``), then watch from the list's
  resourceVersion. A Job that already finished while nobody watched is seen by the list.
- When other Jobs decide the job too (a TFJob's or PyTorchJob's Job per replica index) and
  a label selector matches all of the job's Jobs, the list and the watch use that selector
  instead: every Job arrives in one stream, with the same list/watch discipline, and
  :func:`trainjobs.cluster.rules.decide` applies Kubeflow's rules to their states (a
  failed worker fails the job at once, reason ``WorkerFailed``; an elastic job goes on
  without a lost node). Without a selector only the master Job is watched.
- Any end of a watch stream (dropped connection, read timeout, 5xx, ``410 Gone``, the
  server closing it) leads back to a fresh list. The Jobs' conditions are level state, so
  re-listing can never lose a terminal transition, however many events were missed.
  ``410 Gone`` means the resourceVersion is older than the server's watch history: only a
  new list gives a usable one.
- Terminal outcomes: the rules' Succeeded or Failed (``Complete=True``, ``Failed=True``
  with any reason: BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy...), and the
  master Job disappearing or being replaced by another Job of the same name (Deleted).
- The watcher has its own deadline (Python dynamic providers ignore Pulumi's
  customTimeouts), and tells an API server it cannot reach (:class:`ClusterUnreachable`)
  from a job that is still running (:class:`JobWatchTimeout`).

Kubernetes client imports stay inside functions: `trainjobs --help` stays fast, and the
Pulumi dynamic provider that uses this module pickles cleanly.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Iterable, Mapping
from http import HTTPStatus
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.diagnosis import describe_error
from trainjobs.cluster.errors import (
    DEFAULT_RETRY,
    MALFORMED,
    BadResponse,
    ClusterUnreachable,
    RetryPolicy,
    access_error,
    bad_response,
    is_read_timeout,
    is_transient,
)
from trainjobs.cluster.progress import PROGRESS_INTERVAL_SECONDS, Progress, Reporter, quiet
from trainjobs.cluster.rules import CompletionRules, decide
from trainjobs.cluster.status import JobStatus
from trainjobs.core.durations import format_duration
from trainjobs.core.errors import UserError
from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1Job

DEFAULT_TIMEOUT_SECONDS = 24 * 60 * 60
"""How long `pulumi up` or `trainjobs watch` waits for a job before giving up (24h)."""


PULUMI_RESUME_HINT = "run `pulumi up` again to keep watching"


_SERVER_WATCH_GRACE_SECONDS = 5
_MIN_WINDOW_SECONDS = 0.05


class JobWatchTimeout(Exception):
    """The watcher's own deadline passed while the job was still running.

    Nothing is scaled down: the job may be fine and merely long. Watching again (a new
    `pulumi up`, or the same `trainjobs watch`) picks the job up where it is.
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
    from kubernetes.client.exceptions import ApiException

    from trainjobs.cluster.responses import check_job, check_list

    what = f"list Jobs in namespace {namespace} ({', '.join(selector.values())})"
    try:
        listing = client.BatchV1Api(api).list_namespaced_job(
            namespace, **selector, _request_timeout=(min(10.0, request_timeout), request_timeout)
        )
    except ApiException as error:
        if error.status == 0:  # the client could not parse the answer (a bad date...)
            raise BadResponse(what, str(error.reason)) from None
        raise
    except MALFORMED as error:
        raise bad_response(error, what) from None
    items = check_list(listing, what, check_job)
    return items, listing.metadata.resource_version


def jobs_by_name(jobs: Iterable[V1Job]) -> dict[str, V1Job]:
    return {job.metadata.name: job for job in jobs}


def job_statuses(jobs: Mapping[str, V1Job], names: Iterable[str]) -> dict[str, JobStatus]:
    """The status of each of ``names`` that exists."""
    return {name: JobStatus.from_job(jobs[name]) for name in names if name in jobs}


class _JobWatch:
    """One watch of a training job's Jobs: list, watch, and back to list whenever the
    stream ends. The master Job alone, or every Job the rules name through a selector."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        rules: CompletionRules,
        *,
        job_uid: str | None,
        selector: str | None,
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
        self.job_name = rules.master
        self.job_uid = job_uid
        # Without a selector only the master Job can be watched, and only it decides.
        self.rules = rules if selector is not None else CompletionRules(rules.master)
        self.selector = selector if self.rules.others else None
        self.jobs: dict[str, V1Job] = {}
        self.reported: set[str] = set()
        self.timeout_seconds = timeout_seconds
        self.report = report
        self.resume_hint = resume_hint
        self.retry = retry
        self.clock = clock
        self.sleep = sleep
        self.label = f"{namespace}/{self.job_name}"
        self.progress = Progress(report, self.label, clock, progress_interval)
        self.deadline = self.progress.started + timeout_seconds
        self.backoff = retry.initial_backoff
        self.last: JobStatus | None = None
        self.connected = False
        self.failing_since: float | None = None
        self.last_error = ""
        self.relist_backoff = retry.initial_backoff
        self.events_seen = True
        self.stream_ended_early = False

    def run(self) -> JobStatus:
        from kubernetes.client.exceptions import ApiException

        while True:
            self.progress.tick(self.last)
            self._check_time()
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
                if is_read_timeout(error) and self.failing_since is None:
                    continue  # a quiet window ended: re-list, which also proves the link is up
                if not is_transient(error):
                    raise
                self._pause(error)
                continue
            if final is not None:
                return final
            self._relist_pause()

    def _relist_pause(self) -> None:
        """A watch that a server closes at once, with nothing to say, is re-listed after a
        pause that doubles up to the policy's cap; any event, or a stream that lasted,
        resets it. client-go's reflector paces its list-and-watch loop the same way
        (tools/cache/reflector.go: ``wait.NewExponentialBackoffManager``, 800 ms doubling
        to 30 s); here the pauses are the retry policy's."""
        if self.events_seen or not self.stream_ended_early:
            self.relist_backoff = self.retry.initial_backoff
            return
        delay = max(0.0, min(self.relist_backoff, self.deadline - self.clock()))
        self.sleep(delay)
        self.relist_backoff = min(self.relist_backoff * 2, self.retry.max_backoff)

    def _check_time(self) -> None:
        """The deadline, and how long every request has failed: an API server that never
        answered, or stopped answering for longer than the policy allows, is reported as
        unreachable, never as a job that is still running."""
        now = self.clock()
        if self.failing_since is not None:
            limit = (
                self.retry.unreachable_seconds
                if self.connected
                else self.retry.first_contact_seconds
            )
            if now - self.failing_since >= limit or now >= self.deadline:
                raise ClusterUnreachable(
                    self._url(), now - self.failing_since, self.last_error, self.connected
                )
        if now >= self.deadline:
            raise JobWatchTimeout(
                self.namespace, self.job_name, self.timeout_seconds, self.last, self.resume_hint
            )

    def _url(self) -> str:
        return str(self.api.configuration.host)

    def _action(self) -> str:
        if self.selector is None:
            return f"watch Job {self.label}"
        return f"watch Job {self.label} and the job's other Jobs (label selector {self.selector!r})"

    def _contact(self) -> None:
        self.connected = True
        self.failing_since = None
        self.backoff = self.retry.initial_backoff

    def _list_then_watch(self) -> JobStatus | None:
        timeout = self.retry.request_timeout
        if self.selector is None:
            job, resource_version = read_job(
                self.api, self.namespace, self.job_name, request_timeout=timeout
            )
            self._contact()
            self.jobs = {self.job_name: job} if job is not None else {}
        else:
            jobs, resource_version = list_jobs(
                self.api, self.namespace, self.selector, request_timeout=timeout
            )
            self._contact()
            self.jobs = jobs_by_name(jobs)
            if self.job_name not in self.jobs:
                self._check_unlabelled_master()
        final = self._evaluate(deleted=False)
        if final is not None:
            return final
        return self._watch(resource_version)

    def _check_unlabelled_master(self) -> None:
        """The master Job is not among the Jobs the selector matches. Absent (or replaced),
        it ends the watch as Deleted; present with our uid, the selector is wrong, and
        watching through it would call a running job deleted."""
        job, _ = read_job(
            self.api, self.namespace, self.job_name, request_timeout=self.retry.request_timeout
        )
        if job is not None and self.job_uid in (None, job.metadata.uid):
            raise UserError(
                f"Job {self.label} does not match the label selector {self.selector!r}, which "
                "must match it and the job's other Jobs; check the selector (e.g. "
                "training.kubeflow.org/job-name=JOB) and the Job's labels"
            )

    def _watch(self, resource_version: str) -> JobStatus | None:
        """Follow events until the job ends; None when the stream ends first.

        The client-side read timeout is the time to the next progress line or the deadline,
        so a quiet watch wakes up on time, and a half-open connection (a load balancer that
        silently dropped it) is noticed within one window. The server-side timeoutSeconds is
        only a backstop a little later.
        """
        from trainjobs.cluster.responses import check_job, watch_events

        now = self.clock()
        window = max(_MIN_WINDOW_SECONDS, min(self.deadline - now, self.progress.next_at - now))
        selector = (
            {"field_selector": f"metadata.name={self.job_name}"}
            if self.selector is None
            else {"label_selector": self.selector}
        )
        started = time.monotonic()
        response = self.batch.list_namespaced_job(
            self.namespace,
            **selector,
            watch=True,
            allow_watch_bookmarks=False,
            resource_version=resource_version,
            timeout_seconds=math.ceil(window) + _SERVER_WATCH_GRACE_SECONDS,
            _request_timeout=(self.retry.connect_timeout, window),
            _preload_content=False,
        )
        # The stream ends by the window whatever the server trickles (a deadline, not a
        # per-read timeout: one byte a second would hold a read timeout off forever).
        events = watch_events(
            self.api, response, started + window, self._action(), "V1Job", check_job
        )
        self.events_seen = False
        try:
            for kind, job in events:
                self.events_seen = True
                if kind not in ("ADDED", "MODIFIED", "DELETED"):
                    continue  # BOOKMARK: nothing to learn, we re-list after every stream
                name = job.metadata.name
                if name not in self.rules.watched:
                    continue  # another Job the selector matches changes nothing
                deleted = kind == "DELETED"
                if deleted and name != self.job_name:
                    self.jobs.pop(name, None)
                else:
                    self.jobs[name] = job
                final = self._evaluate(deleted=deleted and name == self.job_name)
                if final is not None:
                    return final
                if self.clock() >= self.deadline:
                    return None
                self.progress.tick(self.last)
        finally:
            events.close()  # releases the connection now, not when garbage collected
        self.stream_ended_early = time.monotonic() - started < window / 2
        return None

    def _evaluate(self, *, deleted: bool) -> JobStatus | None:
        """Record the job's state; return it if the job is over.

        A master Job that is absent, or present under our name with another uid (deleted and
        recreated behind our back), ends the watch as Deleted: the run we watched is gone.
        A DELETED event whose object already carries Complete/Failed keeps that outcome
        (e.g. ttlSecondsAfterFinished removed it right after it finished).
        """
        final: JobStatus | None
        master = self.jobs.get(self.job_name)
        if master is None or (self.job_uid and master.metadata.uid != self.job_uid):
            if master is None:
                message = f"Job {self.label} no longer exists; it was deleted before it finished"
            else:
                message = (
                    f"Job {self.label} was replaced by another Job with the same name "
                    f"(uid {master.metadata.uid}, expected {self.job_uid})"
                )
            final = (self.last or JobStatus(phase=JobPhase.PENDING, uid=self.job_uid)).as_deleted(
                message
            )
            self.last = final
            return final
        statuses = job_statuses(self.jobs, self.rules.watched)
        status = statuses[self.job_name]
        if deleted and not status.terminal:
            final = status.as_deleted(f"Job {self.label} was deleted before it finished")
            self.last = final
            return final
        final, notes = decide(self.rules, statuses, self.namespace)
        for note in notes:
            if note not in self.reported:
                self.reported.add(note)
                self.report(f"job {self.label}: {note}")
        self._report_finished_others(statuses)
        if final is not None:
            self.last = final
            self.progress.observe(final)
            return final
        if status.terminal:
            # The master is done but the job is not (other Jobs decide it too): running.
            status = dataclasses.replace(status, phase=JobPhase.RUNNING)
        self.last = status
        self.progress.observe(status)
        return None

    def _report_finished_others(self, statuses: Mapping[str, JobStatus]) -> None:
        for name in self.rules.others:
            status = statuses.get(name)
            if status is None or status.phase != JobPhase.SUCCEEDED or name in self.reported:
                continue
            self.reported.add(name)
            self.report(
                f"job {self.label}: Job {self.namespace}/{name} succeeded; waiting for the "
                "Jobs that decide the job"
            )

    def _pause(self, error: BaseException) -> None:
        now = self.clock()
        if self.failing_since is None:
            self.failing_since = now
        self.last_error = describe_error(error)
        delay = max(0.0, min(self.backoff, self.deadline - now))
        self.report(
            f"job {self.label}: API server unavailable ({self.last_error}); "
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
    rules: CompletionRules | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    report: Reporter = quiet,
    resume_hint: str = PULUMI_RESUME_HINT,
    progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    retry: RetryPolicy = DEFAULT_RETRY,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> JobStatus:
    """Block until the job is decided (the master Job alone, or ``rules``), or its master
    Job is gone, and return the final status (``failed_worker`` names the Job whose failure
    ended it, when that is not the master).

    ``selector`` is a label selector that matches every Job the rules name; without it only
    the master Job is watched. Raises JobWatchTimeout after ``timeout_seconds``,
    ClusterUnreachable when the API server cannot be reached for longer than the retry
    policy allows, ClusterAccessError when it refuses the watcher (401/403), and UserError
    when the selector does not match the master Job; everything transient is retried until
    then.
    """
    return _JobWatch(
        api,
        namespace,
        rules or CompletionRules(job_name),
        job_uid=job_uid,
        selector=selector,
        timeout_seconds=timeout_seconds,
        report=report,
        resume_hint=resume_hint,
        progress_interval=progress_interval,
        retry=retry,
        clock=clock,
        sleep=sleep,
    ).run()
