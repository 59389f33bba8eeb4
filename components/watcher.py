"""Watch a training Job until it ends, then scale its workers to 0.

The seed design's operator did this in a control loop; here it is one blocking call,
`run_watch`, used both by the Pulumi dynamic resource (`components.completion`) and by the
`trainjobs watch` command. Nothing in this module imports Pulumi.

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
  above). Every one of them scales the workers to 0: a failed launcher must not leave GPU
  workers idling.
- The watcher has its own deadline (Python dynamic providers ignore Pulumi's
  customTimeouts). On timeout the workers are left running and the Job is untouched.

Kubernetes client imports stay inside functions: `trainjobs --help` stays fast, and the
Pulumi dynamic provider that uses this module pickles cleanly.
"""

from __future__ import annotations

import argparse
import dataclasses
import http.client
import json
import math
import os
import re
import sys
import time
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from http import HTTPStatus
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from components.diagnosis import LOG_TAIL_LINES, Diagnosis, describe_error, diagnose
from components.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1Job, V1JobCondition, V1JobStatus

DEFAULT_TIMEOUT_SECONDS = 24 * 60 * 60
"""How long `pulumi up` or `trainjobs watch` waits for a job before giving up (24h)."""

PROGRESS_INTERVAL_SECONDS = 30.0
"""A progress line at least this often while nothing changes, so a long job looks alive."""

PULUMI_RESUME_HINT = "run `pulumi up` again to keep watching"

SUCCEEDED, FAILED, DELETED = "Succeeded", "Failed", "Deleted"
TERMINAL_PHASES = frozenset({SUCCEEDED, FAILED, DELETED})
WORKER_FAILED = "WorkerFailed"
"""The reason of a job that failed because one of its worker Jobs failed."""

_SERVER_WATCH_GRACE_SECONDS = 5
_MIN_WINDOW_SECONDS = 0.05

Reporter = Callable[[str], None]
WorkerKind = Literal["StatefulSet", "Job"]
WORKER_KINDS: tuple[WorkerKind, ...] = ("StatefulSet", "Job")
_KIND_ALIASES: dict[str, WorkerKind] = {
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "sts": "StatefulSet",
    "job": "Job",
    "jobs": "Job",
}


def _ignore(_message: str) -> None:
    """The default reporter: say nothing."""


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


class ClusterAccessError(UserError):
    """The API server refused a request in a way retrying cannot fix (401, 403, 400...)."""

    exit_code = 1


# ---------------------------------------------------------------------------------------------
# Inputs


@dataclass(frozen=True)
class WorkerRef:
    """A workload that only serves the master and must stop when the master Job ends.

    StatefulSet workers are scaled to 0 through the scale subresource. Job workers (the
    Indexed Jobs later job types use) get ``spec.parallelism: 0``: the Job controller then
    removes their pods but keeps the Job, its status and the finished pods' logs.

    ``replicas`` is the declared size. The watcher owns the size once the workload exists:
    pulumi-kubernetes ignores it (ignore_changes), so that a refresh never revives workers
    the watcher stopped; in exchange the watcher restores it when a new run starts (a
    replaced master Job would otherwise wait for workers still at 0).
    """

    kind: WorkerKind
    name: str
    replicas: int | None = None

    def __post_init__(self) -> None:
        if self.kind not in WORKER_KINDS:
            raise ValueError(f"worker kind must be one of {WORKER_KINDS}, not {self.kind!r}")

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"

    @classmethod
    def parse(cls, text: str) -> WorkerRef:
        """Read ``statefulset/NAME`` or ``job/NAME`` (kubectl's spelling, any case)."""
        kind, _, name = text.partition("/")
        resolved = _KIND_ALIASES.get(kind.strip().lower())
        if resolved is None or not name.strip():
            raise UserError(f"--worker {text!r}: expected statefulset/NAME or job/NAME")
        return cls(resolved, name.strip())

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WorkerRef:
        replicas = data.get("replicas")  # the engine hands numbers back as floats
        return cls(
            cast(WorkerKind, data["kind"]),
            str(data["name"]),
            None if replicas is None else int(replicas),
        )

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.replicas is not None:
            data["replicas"] = self.replicas
        return data


@dataclass(frozen=True)
class RetryPolicy:
    """How the watcher copes with an API server that is slow, restarting or overloaded."""

    initial_backoff: float = 0.2
    """First pause after a failed request; doubles on each further failure."""
    max_backoff: float = 10.0
    connect_timeout: float = 10.0
    request_timeout: float = 30.0
    """Read timeout of list, patch and log requests (a half-open connection must not hang)."""
    scale_attempts: int = 6
    """Tries per worker before scale-down is reported as failed."""


# ---------------------------------------------------------------------------------------------
# Results


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

    phase: str
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
    """The worker Job whose failure ended the job (reason ``WorkerFailed``), else None. The
    counts and times are still the master Job's; the end time is the worker's failure."""

    @property
    def terminal(self) -> bool:
        return self.phase in TERMINAL_PHASES

    @property
    def duration_seconds(self) -> float | None:
        if self.start_time is None or self.completion_time is None:
            return None
        return (self.completion_time - self.start_time).total_seconds()

    @classmethod
    def from_job(cls, job: V1Job) -> JobStatus:
        from kubernetes.client import V1JobStatus

        status = job.status or V1JobStatus()
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
            self, phase=DELETED, reason=DELETED, message=message, completion_time=None
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
            "phase": self.phase,
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
) -> tuple[str, str | None, str | None, datetime | None]:
    """(phase, reason, message, end time). Only Complete and Failed are terminal: since
    Kubernetes 1.31 SuccessCriteriaMet/FailureTarget come first, while pods still stop."""
    if "Complete" in conditions:
        done = conditions["Complete"]
        end = status.completion_time or done.last_transition_time
        return SUCCEEDED, done.reason or "Complete", done.message, end
    if "Failed" in conditions:
        done = conditions["Failed"]
        return FAILED, done.reason or "Failed", done.message, done.last_transition_time
    if job.spec is not None and job.spec.suspend:
        return "Suspended", None, None, None
    if status.active:
        return "Running", None, None, None
    return "Pending", None, None, None


@dataclass(frozen=True)
class ScaleResult:
    """What happened when one worker was told to stop."""

    worker: WorkerRef
    scaled_down: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.worker.to_dict(), "scaled_down": self.scaled_down, "detail": self.detail}


@dataclass(frozen=True)
class Outcome:
    """How a watched job ended and what the watcher did about it."""

    namespace: str
    job_name: str
    status: JobStatus
    workers: tuple[ScaleResult, ...] = ()
    diagnosis: Diagnosis | None = None

    @property
    def succeeded(self) -> bool:
        return self.status.phase == SUCCEEDED

    @property
    def workers_scaled_down(self) -> bool:
        return all(result.scaled_down for result in self.workers)

    def to_outputs(self) -> dict[str, Any]:
        """Plain JSON-able values: the Pulumi resource's outputs and `--json`'s fields."""
        return {
            **self.status.to_outputs(),
            "workers_scaled_down": self.workers_scaled_down,
            "diagnosis": self.diagnosis.to_dict() if self.diagnosis is not None else None,
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
        lines = [head, self._workers_line()]
        if self.diagnosis is not None:
            rendered = self.diagnosis.render()
            if rendered:
                lines.append(rendered)
        return "\n".join(lines)

    def _workers_line(self) -> str:
        if not self.workers:
            return "no workers to scale down"
        done = [str(r.worker) for r in self.workers if r.scaled_down]
        stuck = [f"{r.worker} ({r.detail})" for r in self.workers if not r.scaled_down]
        parts = []
        if done:
            parts.append("workers scaled to 0: " + ", ".join(done))
        if stuck:
            parts.append("workers NOT scaled to 0: " + ", ".join(stuck))
        return "; ".join(parts)


# ---------------------------------------------------------------------------------------------
# Durations


_DURATION = re.compile(r"(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?")


def parse_duration(value: str | float, *, key: str, fix: str) -> float:
    """Seconds from ``24h``, ``90m``, ``30s``, ``1h30m`` or a plain number of seconds.

    ``key`` names the setting and ``fix`` the command that sets it right, so a typo in a
    stack file or a flag gives one message that says where and how to fix it.
    """
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and (match := _DURATION.fullmatch(text)):
            seconds = (
                int(match["h"] or 0) * 3600 + int(match["m"] or 0) * 60 + float(match["s"] or 0)
            )
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise UserError(
            f"{key}: {value!r} is not a positive duration; use seconds (3600) or a duration "
            f"such as 24h, 90m, 30s or 1h30m, e.g. `{fix}`"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """``86400`` -> ``24h``, ``5400`` -> ``1h30m``, ``0.5`` -> ``0.5s``."""
    if 0 < seconds < 1:
        return f"{seconds:.3g}s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts) or "0s"


# ---------------------------------------------------------------------------------------------
# Connecting


def _looks_like_path(kubeconfig: str) -> bool:
    """pulumi-kubernetes' ``kubernetes:kubeconfig`` holds either the file's content or its
    path; content is YAML or JSON and always spans several lines or starts with a brace."""
    text = kubeconfig.strip()
    return "\n" not in text and not text.startswith("{")


def load_api_client(kubeconfig: str | None = None, context: str | None = None) -> ApiClient:
    """An API client found the way kubectl finds one.

    Order: the given kubeconfig (content or path), else ``$KUBECONFIG`` (which may list
    several files), else ``~/.kube/config``, else the in-cluster service account. The
    configuration is private to the returned client: watchers for different clusters in one
    process must not share the kubernetes package's global default. Refreshed tokens are
    not written back into the user's kubeconfig.
    """
    import yaml
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        if kubeconfig and not _looks_like_path(kubeconfig):
            data = yaml.safe_load(kubeconfig)
            if not isinstance(data, dict):
                raise UserError("kubeconfig: the given content is not a kubeconfig mapping")
            config.load_kube_config_from_dict(
                data, context=context, client_configuration=configuration, persist_config=False
            )
        else:
            path = _kubeconfig_path(kubeconfig)
            if path is not None:
                config.load_kube_config(
                    config_file=path,
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                )
            elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                config.load_incluster_config(client_configuration=configuration)
            else:
                raise UserError(
                    "no Kubernetes credentials found: set KUBECONFIG, create ~/.kube/config, "
                    "set `pulumi config set --secret kubernetes:kubeconfig ...`, "
                    "or run inside a cluster"
                )
    except config.ConfigException as error:
        raise UserError(f"cannot load Kubernetes credentials: {error}") from error
    return client.ApiClient(configuration)


def _kubeconfig_path(kubeconfig: str | None) -> str | None:
    """The kubeconfig file(s) to read, or None when only in-cluster config is left."""
    if kubeconfig:
        path = Path(kubeconfig.strip()).expanduser()
        if not path.is_file():
            raise UserError(f"kubeconfig file {str(path)!r} does not exist")
        return str(path)
    from_env = os.environ.get("KUBECONFIG")
    if from_env:
        return from_env
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.is_file() else None


def _transient(error: BaseException) -> bool:
    """Worth retrying: connection trouble, timeouts, 429 and 5xx (an API server restarting,
    overloaded or behind a load balancer that is rolling)."""
    import urllib3
    from kubernetes.client.exceptions import ApiException

    if isinstance(error, ApiException):
        status = error.status or 0
        return status in (HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS) or status >= 500
    return isinstance(error, urllib3.exceptions.HTTPError | http.client.HTTPException | OSError)


def _read_timeout(error: BaseException) -> bool:
    import urllib3

    if isinstance(error, urllib3.exceptions.MaxRetryError):
        return isinstance(error.reason, urllib3.exceptions.ReadTimeoutError)
    return isinstance(error, urllib3.exceptions.ReadTimeoutError)


def _access_error(error: BaseException, action: str, namespace: str) -> ClusterAccessError:
    from kubernetes.client.exceptions import ApiException

    status = error.status if isinstance(error, ApiException) else None
    hint = ""
    if status == HTTPStatus.UNAUTHORIZED:
        hint = "; check the credentials in the kubeconfig"
    elif status == HTTPStatus.FORBIDDEN:
        hint = (
            f"; the kubeconfig's identity needs, in namespace {namespace}: get/list/watch on "
            "jobs, list on pods, get on pods/log, patch on statefulsets/scale and jobs"
        )
    return ClusterAccessError(
        f"the Kubernetes API refused to {action} ({describe_error(error)}){hint}"
    )


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


def _by_name(jobs: Iterable[V1Job]) -> dict[str, V1Job]:
    return {job.metadata.name: job for job in jobs}


def _failed_worker(jobs: Mapping[str, V1Job], worker_jobs: Iterable[str]) -> str | None:
    """The first worker Job (in name order) that has failed, if any."""
    for name in sorted(worker_jobs):
        job = jobs.get(name)
        if job is not None and JobStatus.from_job(job).phase == FAILED:
            return name
    return None


class _Progress:
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
        self.progress = _Progress(report, self.label, clock, progress_interval)
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
                if not _transient(error):
                    raise _access_error(error, self._action(), self.namespace) from error
                self._pause(error)
                continue
            except Exception as error:
                if _read_timeout(error):
                    continue  # a quiet window ended: re-list, which also proves the link is up
                if not _transient(error):
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
            final = self._observe_listed(_by_name(jobs))
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
    report: Reporter = _ignore,
    resume_hint: str = PULUMI_RESUME_HINT,
    progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    retry: RetryPolicy = RetryPolicy(),
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


def scale_down_workers(
    api: ApiClient,
    namespace: str,
    workers: Sequence[WorkerRef],
    *,
    retry: RetryPolicy = RetryPolicy(),
    report: Reporter = _ignore,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[ScaleResult, ...]:
    """Set every worker to 0 pods, retrying transient errors; never raises.

    A worker that no longer exists (404) counts as scaled down: nothing of it runs. The
    patches are idempotent, so a second watcher (a resumed `pulumi up`) can repeat them.
    """
    return _scale_all(api, namespace, [(w, 0) for w in workers], retry, report, sleep)


def restore_workers(
    api: ApiClient,
    namespace: str,
    workers: Sequence[WorkerRef],
    *,
    retry: RetryPolicy = RetryPolicy(),
    report: Reporter = _ignore,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[ScaleResult, ...]:
    """Set every worker with a declared size back to it, at the start of a run.

    Idempotent: a fresh workload is already at its size, and the patch changes nothing.
    """
    sized = [(w, w.replicas) for w in workers if w.replicas is not None]
    return _scale_all(api, namespace, sized, retry, report, sleep)


def _scale_all(
    api: ApiClient,
    namespace: str,
    targets: Sequence[tuple[WorkerRef, int]],
    retry: RetryPolicy,
    report: Reporter,
    sleep: Callable[[float], None],
) -> tuple[ScaleResult, ...]:
    results = []
    for worker, count in targets:
        result = _scale(api, namespace, worker, count, retry, sleep)
        report(f"{worker}: {result.detail}")
        results.append(result)
    return tuple(results)


def _scale(
    api: ApiClient,
    namespace: str,
    worker: WorkerRef,
    count: int,
    retry: RetryPolicy,
    sleep: Callable[[float], None],
) -> ScaleResult:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    timeout = (retry.connect_timeout, retry.request_timeout)
    backoff = retry.initial_backoff
    last_error: BaseException | None = None
    for attempt in range(retry.scale_attempts):
        if attempt:
            sleep(backoff)
            backoff = min(backoff * 2, retry.max_backoff)
        try:
            if worker.kind == "StatefulSet":
                client.AppsV1Api(api).patch_namespaced_stateful_set_scale(
                    worker.name, namespace, {"spec": {"replicas": count}}, _request_timeout=timeout
                )
            else:
                client.BatchV1Api(api).patch_namespaced_job(
                    worker.name,
                    namespace,
                    {"spec": {"parallelism": count}},
                    _request_timeout=timeout,
                )
        except ApiException as error:
            if error.status == HTTPStatus.NOT_FOUND:
                detail = "not found; nothing left to scale down" if count == 0 else "not found"
                return ScaleResult(worker, count == 0, detail)
            if error.status != HTTPStatus.CONFLICT and not _transient(error):
                return ScaleResult(worker, False, describe_error(error))
            last_error = error
        except Exception as error:
            if not _transient(error):
                raise
            last_error = error
        else:
            return ScaleResult(worker, True, f"scaled to {count}")
    assert last_error is not None
    return ScaleResult(
        worker, False, f"{describe_error(last_error)} after {retry.scale_attempts} attempts"
    )


# ---------------------------------------------------------------------------------------------
# The whole job


def _restore_if_running(
    api: ApiClient,
    namespace: str,
    job_name: str,
    job_uid: str | None,
    workers: Sequence[WorkerRef],
    selector: str | None,
    worker_jobs: Collection[str],
    retry: RetryPolicy,
    report: Reporter,
    sleep: Callable[[float], None],
) -> None:
    """Best effort: a failure here is reported, and the watch that follows handles the
    cluster's errors properly (retries, clear access errors). A run whose master Job ended,
    or one of whose worker Jobs failed, is over: its workers stay stopped."""
    timeout = retry.request_timeout
    try:
        if selector is not None and worker_jobs:
            jobs = _by_name(list_jobs(api, namespace, selector, request_timeout=timeout)[0])
        else:
            job, _ = read_job(api, namespace, job_name, request_timeout=timeout)
            jobs = {job_name: job} if job is not None else {}
    except Exception as error:
        report(f"could not read Job {job_name} to restore workers: {describe_error(error)}")
        return
    job = jobs.get(job_name)
    if job is None or job_uid not in (None, job.metadata.uid):
        return
    if not JobStatus.from_job(job).terminal and _failed_worker(jobs, worker_jobs) is None:
        restore_workers(api, namespace, workers, retry=retry, report=report, sleep=sleep)


def run_watch(
    api: ApiClient,
    namespace: str,
    job_name: str,
    workers: Sequence[WorkerRef] = (),
    *,
    job_uid: str | None = None,
    selector: str | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    report: Reporter = _ignore,
    resume_hint: str = PULUMI_RESUME_HINT,
    progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    tail_lines: int = LOG_TAIL_LINES,
    retry: RetryPolicy = RetryPolicy(),
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Watch the master Job to its end, scale the workers to 0, and diagnose a failure.

    With ``selector`` (labels that match the master Job and its worker Jobs), a failure of a
    ``Job`` worker ends the job too (reason ``WorkerFailed``): the master Job, which would
    wait for that worker until its deadline, is then stopped with the workers
    (``spec.parallelism: 0``, reported among them), and the diagnosis reads the failed worker
    Job's pods. Without worker Jobs the selector is not used.

    A run that has not ended yet first gets its workers back to their declared size (see
    :class:`WorkerRef`). Workers are scaled down before the diagnosis is gathered: that is
    what saves GPU time, and the diagnosis reads the master's pods (or the failed worker's),
    not the others'. Raises JobWatchTimeout (workers left running), ClusterAccessError, or
    UserError for a selector that does not match the master Job.
    """
    worker_jobs = (
        [w.name for w in workers if w.kind == "Job" and w.name != job_name] if selector else []
    )
    if any(worker.replicas is not None for worker in workers):
        _restore_if_running(
            api, namespace, job_name, job_uid, workers, selector, worker_jobs, retry, report, sleep
        )
    status = watch_job(
        api,
        namespace,
        job_name,
        job_uid=job_uid,
        selector=selector,
        worker_jobs=worker_jobs,
        timeout_seconds=timeout_seconds,
        report=report,
        resume_hint=resume_hint,
        progress_interval=progress_interval,
        retry=retry,
        clock=clock,
        sleep=sleep,
    )
    stop = list(workers)
    if status.failed_worker is not None and ("Job", job_name) not in {
        (w.kind, w.name) for w in workers
    }:
        # The master waits for the failed worker (a TensorFlow or torch.distributed
        # rendezvous) and would hold its pods until activeDeadlineSeconds: stop it as well.
        stop.append(WorkerRef("Job", job_name))
    results = scale_down_workers(api, namespace, stop, retry=retry, report=report, sleep=sleep)
    diagnosis = None
    if status.phase != SUCCEEDED:
        diagnosis = diagnose(
            api,
            namespace,
            status.failed_worker or job_name,
            tail_lines=tail_lines,
            request_timeout=retry.request_timeout,
        )
    return Outcome(namespace, job_name, status, results, diagnosis)


# ---------------------------------------------------------------------------------------------
# `trainjobs watch`


def register_commands(subparsers: argparse._SubParsersAction) -> None:
    """Add `trainjobs watch` to the command line."""
    parser = subparsers.add_parser(
        "watch",
        help="wait for a training Job to finish, then scale its workers to 0",
        description=(
            "Watch a master Job until it completes, fails or is deleted, scale the given "
            "workers to 0, and explain a failure (exit codes, the last log lines). With "
            "--selector, a failure of any job/ worker also ends the job (and stops the "
            "master). Exits 0 when the job succeeded, 1 when it failed, was deleted or is "
            "still running at the timeout. Credentials are found as kubectl finds them."
        ),
    )
    parser.add_argument("name", metavar="NAME", help="the master Job (`kubectl get job NAME`)")
    parser.add_argument("-n", "--namespace", default="default", metavar="NS")
    parser.add_argument(
        "--timeout",
        default="24h",
        help="stop watching after this long (24h, 90m, 30s or seconds); the job keeps running",
    )
    parser.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="KIND/NAME",
        help="a workload to scale to 0 when the job ends: statefulset/NAME or job/NAME "
        "(repeatable)",
    )
    parser.add_argument(
        "--selector",
        metavar="LABELS",
        help="labels of the master Job and its job/ workers, e.g. "
        "training.kubeflow.org/job-name=JOB: they are watched together, and a failed "
        "job/ worker fails the whole job at once (Kubeflow semantics)",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="instead of $KUBECONFIG")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(handler=watch_command)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def watch_command(args: argparse.Namespace) -> int:
    """`trainjobs watch`: 0 if the job succeeded and its workers stopped, else 1."""
    timeout = parse_duration(
        args.timeout, key="--timeout", fix=f"trainjobs watch {args.name} --timeout 24h"
    )
    workers = [WorkerRef.parse(text) for text in args.worker]
    if args.selector is not None and not args.selector.strip():
        raise UserError("--selector: expected labels such as training.kubeflow.org/job-name=JOB")
    selector = args.selector.strip() if args.selector else None
    job_workers = [str(w) for w in workers if w.kind == "Job"]
    if job_workers and selector is None:
        _stderr(
            f"note: without --selector, a failure of {', '.join(job_workers)} is only seen "
            f"when {args.name} ends; add e.g. --selector training.kubeflow.org/job-name=JOB"
        )
    api = load_api_client(args.kubeconfig, args.context)
    resume = (
        f"run `trainjobs watch {args.name} --namespace {args.namespace}` again to keep watching"
    )
    try:
        outcome = run_watch(
            api,
            args.namespace,
            args.name,
            workers,
            selector=selector,
            timeout_seconds=timeout,
            report=_stderr,
            resume_hint=resume,
        )
    except JobWatchTimeout as timed_out:
        if args.json:
            print(json.dumps(timed_out.to_json(), indent=2))
        else:
            print(f"error: {timed_out}", file=sys.stderr)
        return 1
    finally:
        api.close()
    ok = outcome.succeeded and outcome.workers_scaled_down
    if args.json:
        print(json.dumps(outcome.to_json(), indent=2))
    elif ok:
        print(outcome.describe())
    else:
        print(f"error: {outcome.describe()}", file=sys.stderr)
    return 0 if ok else 1
