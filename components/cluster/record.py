"""The record of a job's finished run, kept in the cluster on the job's anchor object.

Why it exists: ``ttlSecondsAfterFinished`` removes a finished job's Jobs, Pulumi's state
still lists them, and `pulumi up --refresh` then drops them from the state (pulumi-kubernetes
``Read`` answers a 404 with an empty response) so that the next `pulumi up` creates them
again: without a guard, the training would run a second time. The guard has two halves:

- with the completion watcher, the Pulumi program creates every Job suspended and only the
  watcher starts a run (:mod:`trainjobs.cluster.supervisor`);
- when a run ends, the watcher writes ``trainjobs.io/finished-run`` on the job's anchor (the
  deciding replica's Service, or a ChainerJob's assets ConfigMap: objects no TTL removes):
  the run's identity (a hash of the job's workloads as declared) and how it ended. A Job
  created again for a run that is recorded as ended stays suspended. A changed job (a new
  identity) is a new run.

The annotation is not in the program's manifest, so Pulumi never sees it: a refresh keeps
only the fields the program declares (pulumi-kubernetes ``pruneLiveState``), and server-side
apply leaves a field that another field manager owns alone. The record goes with its
anchor when the stack is destroyed.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.errors import DEFAULT_RETRY, RetryPolicy, best_effort, call_with_retries
from trainjobs.cluster.objects import read_object
from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from trainjobs.cluster.rest import JsonClient

RECORD_ANNOTATION = "trainjobs.io/finished-run"
ANCHOR_RESOURCES = {"Service": "services", "ConfigMap": "configmaps"}
"""The kinds a job's anchor may be, and their resources in the core API group."""


@dataclass(frozen=True)
class FinishedRun:
    """How a run ended, as recorded: its identity, phase, reason, message and end time."""

    run: str
    phase: JobPhase
    reason: str | None = None
    message: str | None = None
    completion_time: str | None = None

    def to_json(self) -> str:
        return json.dumps(
            {
                "run": self.run,
                "phase": str(self.phase),
                "reason": self.reason,
                "message": self.message,
                "completionTime": self.completion_time,
            },
            sort_keys=True,
            separators=(",", ":"),
        )

    @classmethod
    def from_json(cls, text: str) -> FinishedRun | None:
        """None for anything that is not a record (an unreadable one is not a finished run)."""
        try:
            data = json.loads(text)
            return cls(
                run=str(data["run"]),
                phase=JobPhase(str(data["phase"])),
                reason=data.get("reason"),
                message=data.get("message"),
                completion_time=data.get("completionTime"),
            )
        except (ValueError, KeyError, TypeError, AttributeError):
            return None


def _patch(api: ApiClient, kind: str) -> Any:
    """The patch method for the anchor's kind."""
    from kubernetes import client

    core = client.CoreV1Api(api)
    if kind == "Service":
        return core.patch_namespaced_service
    if kind == "ConfigMap":
        return core.patch_namespaced_config_map
    raise ValueError(f"a run record lives on a Service or a ConfigMap, not a {kind}")


def annotations_of(obj: Any) -> Mapping[str, str]:
    metadata = getattr(obj, "metadata", None)
    return (metadata.annotations if metadata is not None else None) or {}


def read_record(
    api: ApiClient | JsonClient,
    namespace: str,
    anchor: tuple[str, str],
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> FinishedRun | None:
    """The recorded run, or None (no anchor, no record). Transient errors are retried; what
    remains propagates (ClusterUnreachable, ClusterAccessError): the caller must not start
    a run it cannot check. Read as JSON: the anchor's annotations are all it needs."""
    from trainjobs.cluster.rest import JsonClient, segment

    kind, name = anchor
    if kind not in ANCHOR_RESOURCES:
        raise ValueError(f"a run record lives on a Service or a ConfigMap, not a {kind}")
    client = api if isinstance(api, JsonClient) else JsonClient.through(api)
    path = f"/api/v1/namespaces/{segment(namespace)}/{ANCHOR_RESOURCES[kind]}/{segment(name)}"
    what = f"get {kind} {namespace}/{name}"
    timeout = (retry.connect_timeout, retry.request_timeout)
    obj = call_with_retries(
        api,
        what,
        namespace,
        lambda: read_object(client.get(path, {}, timeout), what),
        retry,
        missing_ok=True,
    )
    if obj is None:
        return None
    text = annotations_of(obj).get(RECORD_ANNOTATION)
    return FinishedRun.from_json(text) if text else None


def write_record(
    api: ApiClient,
    namespace: str,
    anchor: tuple[str, str],
    finished: FinishedRun,
    *,
    retry: RetryPolicy = DEFAULT_RETRY,
) -> str | None:
    """Record the run on its anchor; None when done, else why not (never raises: the run's
    outcome stands either way). Transient failures are retried as reading is: the merge
    patch sets one annotation, so sending it again changes nothing more."""
    kind, name = anchor
    patch = _patch(api, kind)
    body = {"metadata": {"annotations": {RECORD_ANNOTATION: finished.to_json()}}}
    timeout = (retry.connect_timeout, retry.request_timeout)
    return best_effort(
        api,
        f"patch {kind} {namespace}/{name}",
        namespace,
        lambda: patch(name, namespace, body, _request_timeout=timeout),
        retry,
    )
