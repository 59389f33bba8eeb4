"""Stopping a job's workloads when it ends and restoring them when a new run starts.

Also the removal of the pods a cleanPodPolicy of All leaves no reason to keep.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import TYPE_CHECKING, Any, Literal, cast

from trainjobs.cluster.diagnosis import describe_error
from trainjobs.cluster.errors import DEFAULT_RETRY, RetryPolicy, is_transient
from trainjobs.cluster.progress import Reporter, quiet
from trainjobs.core.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient


WorkerKind = Literal["StatefulSet", "Job"]


WORKER_KINDS: tuple[WorkerKind, ...] = ("StatefulSet", "Job")


_KIND_ALIASES: dict[str, WorkerKind] = {
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "sts": "StatefulSet",
    "job": "Job",
    "jobs": "Job",
}


@dataclass(frozen=True)
class WorkerRef:
    """A workload that only serves the master and must stop when the master Job ends.

    StatefulSet workers are scaled to 0 through the scale subresource. Jobs are suspended
    (``spec.suspend: true``, Kubernetes' Job suspension): the Job controller deletes their
    running pods but keeps the Job, its status and the finished pods' logs, and resuming
    the Job starts its pods again.

    ``replicas`` is a StatefulSet's declared size. The watcher owns that size and every
    Job's ``spec.suspend`` once the workload exists: pulumi-kubernetes ignores them
    (ignore_changes), so that a refresh never revives workers the watcher stopped; in
    exchange the watcher restores them when a new run starts.
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
class ScaleResult:
    """What happened when one worker was told to stop."""

    worker: WorkerRef
    scaled_down: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {**self.worker.to_dict(), "scaled_down": self.scaled_down, "detail": self.detail}


def scale_down_workers(
    api: ApiClient,
    namespace: str,
    workers: Sequence[WorkerRef],
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    report: Reporter = quiet,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[ScaleResult, ...]:
    """Stop every worker (a StatefulSet at 0 replicas, a Job suspended), retrying transient
    errors; never raises.

    A worker that no longer exists (404) counts as scaled down: nothing of it runs. The
    patches are idempotent, so a second watcher (a resumed `pulumi up`) can repeat them.
    """
    return _scale_all(api, namespace, [(w, 0) for w in workers], retry, report, sleep)


def restore_workers(
    api: ApiClient,
    namespace: str,
    workers: Sequence[WorkerRef],
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    report: Reporter = quiet,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[ScaleResult, ...]:
    """Start every worker again at the start of a run: a StatefulSet back to its declared
    size (if it has one), a Job resumed.

    Idempotent: a fresh workload is already at its size, and the patch changes nothing.
    """
    targets: list[tuple[WorkerRef, int]] = []
    for worker in workers:
        if worker.kind == "Job":
            targets.append((worker, 1))
        elif worker.replicas is not None:
            targets.append((worker, worker.replicas))
    return _scale_all(api, namespace, targets, retry, report, sleep)


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
                    {"spec": {"suspend": count == 0}},
                    _request_timeout=timeout,
                )
        except ApiException as error:
            if error.status == HTTPStatus.NOT_FOUND:
                detail = "not found; nothing left to scale down" if count == 0 else "not found"
                return ScaleResult(worker, count == 0, detail)
            if error.status != HTTPStatus.CONFLICT and not is_transient(error):
                return ScaleResult(worker, False, describe_error(error))
            last_error = error
        except Exception as error:
            if not is_transient(error):
                raise
            last_error = error
        else:
            return ScaleResult(worker, True, _done(worker, count))
    assert last_error is not None
    return ScaleResult(
        worker, False, f"{describe_error(last_error)} after {retry.scale_attempts} attempts"
    )


def _done(worker: WorkerRef, count: int) -> str:
    if worker.kind == "Job":
        return "suspended" if count == 0 else "resumed"
    return f"scaled to {count}"


def delete_pods(
    api: ApiClient,
    namespace: str,
    selector: str,
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
    report: Reporter = quiet,
) -> tuple[str, ...]:
    """Delete every pod the label selector matches (cleanPodPolicy All: the finished ones
    too, as training-operator's ``DeletePodsAndServices`` does once a job has finished).
    Returns the names of the pods deleted; failures are reported, never raised: the job's
    outcome is already known."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    timeout = (retry.connect_timeout, retry.request_timeout)
    try:
        pods = core.list_namespaced_pod(
            namespace, label_selector=selector, _request_timeout=timeout
        ).items
    except Exception as error:
        report(f"could not list the pods to remove ({describe_error(error)})")
        return ()
    deleted = []
    for pod in pods:
        name = pod.metadata.name
        try:
            core.delete_namespaced_pod(name, namespace, _request_timeout=timeout)
        except Exception as error:
            report(f"pod {namespace}/{name}: not removed ({describe_error(error)})")
            continue
        deleted.append(name)
    if deleted:
        report(f"cleanPodPolicy All: removed pod(s) {', '.join(deleted)}")
    return tuple(deleted)
