"""Finding training jobs by name, and how each stands: `trainjobs watch JOB` and `status`.

Every object trainjobs creates carries Kubeflow's ``training.kubeflow.org/job-name`` label
and ``app.kubernetes.io/managed-by: trainjobs``; a job's anchor object (the deciding
replica's Service, or a ChainerJob's assets ConfigMap) carries its description for the
watcher (:data:`~trainjobs.cluster.target.WATCH_ANNOTATION`). Requests are retried while
the API server cannot be reached, for as long as the retry policy gives a first contact;
then :class:`~trainjobs.cluster.errors.ClusterUnreachable`. Everything here only reads, as
JSON (:class:`~trainjobs.cluster.rest.JsonClient`): no model of the kubernetes client is loaded
before the first request.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.errors import DEFAULT_RETRY, RetryPolicy, call_with_retries
from trainjobs.cluster.objects import read_list
from trainjobs.cluster.responses import check_list, check_metadata
from trainjobs.cluster.rest import segment
from trainjobs.core.errors import UserError
from trainjobs.core.labels import JOB_NAME, MANAGED_BY
from trainjobs.core.phases import JobPhase

# The first requests go out before the rest loads: a job's target, rules and phase are
# read from their answers.
if TYPE_CHECKING:
    from trainjobs.cluster.record import FinishedRun
    from trainjobs.cluster.rest import JsonClient
    from trainjobs.cluster.status import JobStatus
    from trainjobs.cluster.target import WatchTarget

MANAGED = f"app.kubernetes.io/managed-by={MANAGED_BY}"


def _anchors(
    api: JsonClient, namespace: str, selector: str, retry: RetryPolicy
) -> list[tuple[str, Any]]:
    """(kind, object) of every Service and ConfigMap the selector matches."""
    timeout = (retry.connect_timeout, retry.request_timeout)
    found: list[tuple[str, Any]] = []
    for kind, resource in (("Service", "services"), ("ConfigMap", "configmaps")):
        what = f"list {resource}"
        path = f"/api/v1/namespaces/{segment(namespace)}/{resource}"
        listing = call_with_retries(
            api,
            what,
            namespace,
            lambda path=path, what=what: read_list(  # type: ignore[misc]
                api.get(path, {"labelSelector": selector}, timeout), what
            ),
            retry,
        )
        if listing is not None:
            found += [(kind, item) for item in check_list(listing, what, check_metadata)]
    return found


def _target_of(kind: str, obj: Any) -> WatchTarget | None:
    from trainjobs.cluster.record import annotations_of
    from trainjobs.cluster.target import WATCH_ANNOTATION, WatchTarget

    text = annotations_of(obj).get(WATCH_ANNOTATION)
    if not text:
        return None
    where = f"{kind} {obj.metadata.namespace}/{obj.metadata.name}"
    return WatchTarget.from_annotation(text, where)


def list_targets(
    api: JsonClient, namespace: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> list[WatchTarget]:
    """Every training job trainjobs deployed in the namespace, by name."""
    targets = {
        target.name: target
        for kind, obj in _anchors(api, namespace, MANAGED, retry)
        if (target := _target_of(kind, obj)) is not None
    }
    return [targets[name] for name in sorted(targets)]


def find_target(
    api: JsonClient, namespace: str, name: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> WatchTarget | None:
    """The training job called ``name``, found by its job-name label; None if there is none."""
    for kind, obj in _anchors(api, namespace, f"{JOB_NAME}={name}", retry):
        target = _target_of(kind, obj)
        if target is not None and target.name == name:
            return target
    return None


def job_exists(
    api: JsonClient, namespace: str, name: str, *, retry: RetryPolicy = DEFAULT_RETRY
) -> bool:
    """Whether a batch/v1 Job called ``name`` exists (the explicit `trainjobs watch` form)."""
    timeout = (retry.connect_timeout, retry.request_timeout)
    job = call_with_retries(
        api,
        f"get Job {namespace}/{name}",
        namespace,
        lambda: api.get(
            f"/apis/batch/v1/namespaces/{segment(namespace)}/jobs/{segment(name)}", {}, timeout
        ),
        retry,
        missing_ok=True,
    )
    return job is not None


def unknown_job(name: str, namespace: str, targets: list[WatchTarget]) -> UserError:
    """The error for a name that matches no training job, naming those that exist."""
    known = ", ".join(target.name for target in targets) or "none"
    return UserError(
        f"no training job {name!r} in namespace {namespace} (training jobs there: {known}); "
        "give a job's metadata.name, or a Job with --worker/--selector"
    )


@dataclass(frozen=True)
class JobState:
    """How a training job stands: a phase and one line of detail; and, as kubectl shows a
    Job's AGE and DURATION, its master Job's creation, start and end (None when unknown)."""

    name: str
    kind: str
    phase: JobPhase
    detail: str
    created: datetime | None = None
    started: datetime | None = None
    ended: datetime | None = None

    def age_seconds(self, now: datetime) -> float | None:
        """Since the master Job's creation."""
        return None if self.created is None else (now - self.created).total_seconds()

    def duration_seconds(self, now: datetime) -> float | None:
        """From the run's start to its end, or to ``now`` while it runs (kubectl's
        DURATION); None before it starts, or once its Jobs are gone."""
        if self.started is None:
            return None
        if self.ended is None and JobPhase(self.phase).is_terminal():
            return None
        return ((self.ended or now) - self.started).total_seconds()

    def to_json(self, now: datetime) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "phase": str(self.phase),
            "detail": self.detail,
            "created": _iso(self.created),
            "started": _iso(self.started),
            "ended": _iso(self.ended),
            "age_seconds": self.age_seconds(now),
            "duration_seconds": self.duration_seconds(now),
        }


def _iso(value: datetime | None) -> str | None:
    return None if value is None else value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def job_state(
    api: JsonClient, target: WatchTarget, *, retry: RetryPolicy = DEFAULT_RETRY
) -> JobState:
    """The job's phase from its Jobs (Kubeflow's rules, as the watcher applies them) and
    its recorded run: Pending, Running, Suspended, Succeeded, Failed, or Missing."""
    from trainjobs.cluster.responses import check_job
    from trainjobs.cluster.rules import decide
    from trainjobs.cluster.watch import job_statuses, jobs_by_name

    timeout = (retry.connect_timeout, retry.request_timeout)
    what = f"list the Jobs of {target.key}"
    path = f"/apis/batch/v1/namespaces/{segment(target.namespace)}/jobs"
    listing = call_with_retries(
        api,
        what,
        target.namespace,
        lambda: read_list(api.get(path, {"labelSelector": target.selector}, timeout), what),
        retry,
    )
    jobs = jobs_by_name(check_list(listing, what, check_job) if listing is not None else [])
    finished = _recorded(api, target, retry)
    statuses = job_statuses(jobs, target.rules.watched)
    master = statuses.get(target.rules.master)
    ended = finished is not None and finished.run == target.run
    if master is None:
        if ended and finished is not None:
            return _from_record(target, finished, "its Jobs were removed")
        return JobState(target.name, target.kind, JobPhase.MISSING, "its Jobs do not exist")
    if master.phase == JobPhase.SUSPENDED and ended and finished is not None:
        return _from_record(target, finished, "its Jobs stay suspended")
    created = jobs[target.rules.master].metadata.creation_timestamp
    final, _ = decide(target.rules, statuses, target.namespace)
    if final is not None:
        detail = ": ".join(part for part in (final.reason, final.message) if part)
        return JobState(
            target.name,
            target.kind,
            final.phase,
            detail,
            created,
            master.start_time,
            final.completion_time or master.completion_time,
        )
    return JobState(
        target.name, target.kind, master.phase, _counts(statuses), created, master.start_time
    )


def _recorded(api: JsonClient, target: WatchTarget, retry: RetryPolicy) -> FinishedRun | None:
    from trainjobs.cluster.record import read_record

    if target.anchor is None:
        return None
    return read_record(api, target.namespace, target.anchor, retry=retry)


def _from_record(target: WatchTarget, finished: FinishedRun, why: str) -> JobState:
    detail = ": ".join(part for part in (finished.reason, finished.message) if part)
    note = f"recorded run ({why})"
    return JobState(
        target.name, target.kind, finished.phase, f"{detail}; {note}" if detail else note
    )


def _counts(statuses: Mapping[str, JobStatus]) -> str:
    active = sum(s.active for s in statuses.values())
    ready = sum(s.ready for s in statuses.values())
    succeeded = sum(s.succeeded for s in statuses.values())
    failed = sum(s.failed for s in statuses.values())
    return (
        f"{len(statuses)} Job(s): {active} active ({ready} ready), {succeeded} succeeded, "
        f"{failed} failed pod(s)"
    )
