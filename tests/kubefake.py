"""A small, stateful Kubernetes API server for tests, served over real HTTP on 127.0.0.1.

The real `kubernetes` client talks to it (`FakeKube.api_client()`, or a kubeconfig from
`FakeKube.write_kubeconfig()`), so the watcher is tested through the same HTTP, chunked
watch streams, JSON and model deserialization as against a cluster. It serves:

- batch/v1 Jobs, core/v1 Pods, Services, ConfigMaps and ServiceAccounts, apps/v1
  StatefulSets, RBAC Roles and RoleBindings: get, list (fieldSelector ``metadata.name=``,
  labelSelector of equality terms ``k=v``, ``k==v``, ``k!=v`` joined by commas; anything
  else, e.g. set-based terms, is a 400) and watch (newline-delimited JSON events
  ADDED/MODIFIED/DELETED/ERROR from a resourceVersion, with the same selectors), with one
  global resourceVersion;
- POST (create): ``409 AlreadyExists`` for a name that exists, also while that object is
  being deleted (``object is being deleted: ...``, as the API server's registry says);
- DELETE with ``propagationPolicy``: Foreground keeps the object (``deletionTimestamp``,
  finalizer ``foregroundDeletion``) until the pods it owns are gone, Background removes it
  at once and its pods after, Orphan leaves the pods;
- PATCH (merge and strategic-merge patches, as the client sends for dicts), with the Job
  fields Kubernetes' ``ValidateJobSpecUpdate`` keeps immutable refused (422);
- the StatefulSet scale subresource (GET/PATCH ``.../statefulsets/NAME/scale``);
- jobset.x-k8s.io/v1alpha2 JobSets, stored as given; admission webhooks and controllers
  are plugged in through ``webhooks`` and ``observers`` (the JobSet controller and webhook
  and Kueue: tests/kubecontrollers.py);
- pod logs (GET ``.../pods/NAME/log`` with ``container``, ``tailLines``, ``previous``, and
  ``follow=true``: a chunked text stream that sends what `append_log` adds until the
  container stops running or restarts; a container still waiting to start has no log, a 400).

With ``controllers=True`` it also runs what the watcher depends on of the Job controller:
a created Job that is not suspended gets its pod; suspending a Job deletes its running pods
(condition Suspended) and resuming starts a new one; pods being deleted take
``pod_grace_seconds`` to go. `expire_ttl` plays the TTL-after-finished controller.

Tests drive the cluster from the server side (`start_job`, `complete_job`, `fail_job`,
`delete`...) and inject faults: `fail_next` (any status on the next matching requests,
e.g. 500 or a 410 on a watch), `drop_watches` (connections cut mid-stream),
`expire_watches` (an ERROR event with a 410 Status), and `stop`/`start`/`restart` on the
same port, keeping or losing state (losing it also makes every older resourceVersion 410).

Objects are complete and realistic (apiVersion, kind, metadata with uid, resourceVersion
and creationTimestamp, spec, status): the client's generated models reject incomplete ones.
"""

from __future__ import annotations

import bisect
import contextlib
import copy
import json
import select
import socket
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml

Obj = dict[str, Any]

RESOURCES: dict[str, tuple[str, str]] = {
    "jobs": ("batch/v1", "Job"),
    "pods": ("v1", "Pod"),
    "statefulsets": ("apps/v1", "StatefulSet"),
    "services": ("v1", "Service"),
    "configmaps": ("v1", "ConfigMap"),
    "secrets": ("v1", "Secret"),
    "serviceaccounts": ("v1", "ServiceAccount"),
    "roles": ("rbac.authorization.k8s.io/v1", "Role"),
    "rolebindings": ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    "jobsets": ("jobset.x-k8s.io/v1alpha2", "JobSet"),
}
_PREFIXES = {
    "api/v1": "v1",
    "apis/batch/v1": "batch/v1",
    "apis/apps/v1": "apps/v1",
    "apis/rbac.authorization.k8s.io/v1": "rbac.authorization.k8s.io/v1",
    "apis/jobset.x-k8s.io/v1alpha2": "jobset.x-k8s.io/v1alpha2",
}
_GROUPS = {
    "jobs": "jobs.batch",
    "statefulsets": "statefulsets.apps",
    "jobsets": "jobsets.jobset.x-k8s.io",
}
"""The qualified resource the API server names in its messages (core resources: plain)."""

JOB_IMMUTABLE = (
    ("template",),
    ("selector",),
    ("completions",),
    ("completionMode",),
    ("podFailurePolicy",),
    ("successPolicy",),
    ("backoffLimitPerIndex",),
    ("managedBy",),
)
"""Job spec fields an update may not change (kubernetes ``pkg/apis/batch/validation``
``ValidateJobSpecUpdate``; ``completions`` may change only with ``parallelism`` for an
elastic Indexed Job, which nothing here creates)."""


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_body(code: int, reason: str, message: str) -> Obj:
    """A metav1.Status, the body of every API error and of watch ERROR events."""
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }


def merge_patch(target: Obj, patch: Obj) -> Obj:
    """RFC 7386 merge patch (also what a strategic merge patch does to plain fields)."""
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        elif isinstance(value, dict) and isinstance(target.get(key), dict):
            merge_patch(target[key], value)
        else:
            target[key] = copy.deepcopy(value)
    return target


# ---------------------------------------------------------------------------------------------
# Container statuses for pods


def terminated(
    name: str,
    exit_code: int,
    reason: str = "Error",
    *,
    message: str | None = None,
    signal: int | None = None,
    restarts: int = 0,
) -> Obj:
    """A container status for a container that exited."""
    state: Obj = {
        "exitCode": exit_code,
        "reason": reason,
        "startedAt": now_rfc3339(),
        "finishedAt": now_rfc3339(),
        "containerID": f"containerd://{uuid.uuid4().hex}",
    }
    if message is not None:
        state["message"] = message
    if signal is not None:
        state["signal"] = signal
    return _container_status(name, {"terminated": state}, ready=False, restarts=restarts)


def waiting(name: str, reason: str, message: str | None = None) -> Obj:
    """A container status for a container that is not running (yet)."""
    state: Obj = {"reason": reason}
    if message is not None:
        state["message"] = message
    return _container_status(name, {"waiting": state}, ready=False, restarts=0)


def running(name: str, *, last_terminated: Obj | None = None, restarts: int = 0) -> Obj:
    """A running container; ``last_terminated`` (from `terminated`) is its previous run."""
    status = _container_status(name, {"running": {"startedAt": now_rfc3339()}}, True, restarts)
    if last_terminated is not None:
        status["lastState"] = last_terminated["state"]
    return status


def _container_status(name: str, state: Obj, ready: bool, restarts: int) -> Obj:
    return {
        "name": name,
        "image": "registry.example/train:1",
        "imageID": "registry.example/train@sha256:" + "0" * 64,
        "ready": ready,
        "restartCount": restarts,
        "started": "running" in state,
        "state": state,
        "lastState": {},
    }


# ---------------------------------------------------------------------------------------------
# The server


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]

    @property
    def watch(self) -> bool:
        # The Python client sends Python's spelling, "True".
        return self.query.get("watch", "").lower() in ("true", "1")


@dataclass
class Patch:
    at: float
    """time.perf_counter() when the server applied it."""
    resource: str
    namespace: str
    name: str
    subresource: str | None
    body: Obj


@dataclass
class _Fault:
    status: int
    method: str | None
    path: str | None
    watch: bool | None
    as_watch_event: bool
    count: int

    def matches(self, request: Request) -> bool:
        return (
            (self.method is None or self.method == request.method)
            and (self.path is None or self.path in request.path)
            and (self.watch is None or self.watch == request.watch)
        )


@dataclass
class _Event:
    rv: int
    resource: str
    namespace: str
    type: str
    obj: Obj


@dataclass
class _State:
    objects: dict[tuple[str, str, str], Obj] = field(default_factory=dict)
    events: list[_Event] = field(default_factory=list)
    logs: dict[tuple[str, str, str, bool], str] = field(default_factory=dict)
    compacted_rv: int = 0


class ApiError(Exception):
    """An API error the server answers with (a metav1.Status body)."""

    def __init__(self, code: int, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message


class FakeKube:
    """The fake API server. Use as a context manager, or call `start` and `stop`."""

    def __init__(self, *, controllers: bool = False, pod_grace_seconds: float = 0.2) -> None:
        self.controllers = controllers
        """Run the Job controller's part the watcher depends on (see the module docstring)."""
        self.pod_grace_seconds = pod_grace_seconds
        """How long a pod being deleted takes to go (its containers stopping)."""
        self.deletes: list[tuple[float, str, str, str | None]] = []
        """(time.perf_counter(), resource, name, propagationPolicy) of each DELETE."""
        self.creates: list[tuple[float, str, str]] = []
        """(time.perf_counter(), resource, name) of each POST that created an object."""
        self._cond = threading.Condition()
        self._state = _State()
        self._rv = 1000
        self._faults: list[_Fault] = []
        self._drop_generation = 0
        self._expire_generation = 0
        self._stopping = False
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self._connections: set[socket.socket] = set()
        self.port = 0
        self.requests: list[Request] = []
        self.patches: list[Patch] = []
        self.watches_opened = 0
        self.on_patch: Callable[[Patch], None] | None = None
        """Called (on a server thread) after each PATCH is applied; used by the benchmark."""
        self.webhooks: list[Callable[[str, str, Obj | None, Obj], None]] = []
        """Admission webhooks: called (lock held) as (operation CREATE or UPDATE, resource,
        old object or None, new object) before an object is stored; one may change the new
        object (mutating) or raise ApiError (validating). See tests/kubecontrollers.py."""
        self.observers: list[Callable[[str, str, Obj], None]] = []
        """Controllers: called (lock held) as (resource, event type, object) after each
        change; they act later, on threads of their own. See tests/kubecontrollers.py."""

    # -- lifecycle ---------------------------------------------------------------------------

    def __enter__(self) -> FakeKube:
        self.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Listen on 127.0.0.1: a free port the first time, the same port after a stop."""
        server = _Server(("127.0.0.1", self.port), _Handler)
        server.fake = self
        self.port = server.server_address[1]
        with self._cond:
            self._stopping = False
        self._server = server
        # A short poll interval: `stop` waits for the serve loop to notice.
        self._thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop listening and cut every open connection, watches included."""
        if self._server is None:
            return
        self._server.shutdown()
        with self._cond:
            self._stopping = True
            connections = list(self._connections)
            self._cond.notify_all()
        for connection in connections:
            _cut(connection)
        self._server.server_close()
        assert self._thread is not None
        self._thread.join(timeout=5)
        self._server = None

    def restart(self, *, keep_state: bool = True) -> None:
        """Stop and start on the same port. Without ``keep_state`` every object is gone and
        resourceVersions from before are too old (like an API server on a fresh etcd)."""
        self.stop()
        if not keep_state:
            with self._cond:
                self._state = _State(compacted_rv=self._rv + 1)
        self.start()

    def api_client(self) -> Any:
        """A `kubernetes.client.ApiClient` pointed at this server."""
        from kubernetes import client

        configuration = client.Configuration(host=self.url)
        return client.ApiClient(configuration)

    def write_kubeconfig(self, path: Path) -> Path:
        """A kubeconfig file whose current context is this server, as kubectl would use."""
        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
            "users": [{"name": "tester", "user": {"token": "not-a-secret"}}],
            "contexts": [
                {"name": "fake", "context": {"cluster": "fake", "user": "tester"}},
            ],
            "current-context": "fake",
        }
        path.write_text(yaml.safe_dump(document))
        return path

    # -- faults ------------------------------------------------------------------------------

    def fail_next(
        self,
        status: int = 500,
        *,
        method: str | None = None,
        path: str | None = None,
        watch: bool | None = None,
        as_watch_event: bool = False,
        count: int = 1,
    ) -> None:
        """Answer the next ``count`` matching requests with ``status`` instead. With
        ``as_watch_event`` a watch gets 200 and a single ERROR event carrying the Status."""
        with self._cond:
            self._faults.append(_Fault(status, method, path, watch, as_watch_event, count))

    def drop_watches(self) -> None:
        """Cut every open watch connection mid-stream (no final chunk)."""
        with self._cond:
            self._drop_generation += 1
            self._cond.notify_all()

    def expire_watches(self) -> None:
        """Send every open watch an ERROR event with a 410 Gone Status, then end it."""
        with self._cond:
            self._expire_generation += 1
            self._cond.notify_all()

    def wait_for_watches(self, count: int, timeout: float = 5.0) -> None:
        """Block until ``count`` watch requests have been opened since the start."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self.watches_opened < count:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self.watches_opened} watch(es) opened, not {count}")
                self._cond.wait(remaining)

    def count_requests(self, method: str, path: str, *, watch: bool | None = None) -> int:
        with self._cond:
            return sum(
                1
                for r in self.requests
                if r.method == method and r.path == path and (watch is None or r.watch == watch)
            )

    # -- objects -----------------------------------------------------------------------------

    def add_job(
        self,
        name: str,
        namespace: str = "default",
        *,
        parallelism: int = 1,
        completion_mode: str = "NonIndexed",
        backoff_limit: int = 0,
        labels: dict[str, str] | None = None,
    ) -> Obj:
        """A Job as the API server returns it right after creation (no pods yet)."""
        uid = str(uuid.uuid4())
        pod_labels = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        job = {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": self._metadata(name, namespace, uid, labels),
            "spec": {
                "parallelism": parallelism,
                "completions": parallelism,
                "completionMode": completion_mode,
                "backoffLimit": backoff_limit,
                "suspend": False,
                "manualSelector": False,
                "podReplacementPolicy": "TerminatingOrFailed",
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}},
                "template": {
                    "metadata": {"labels": pod_labels},
                    "spec": {
                        "containers": [
                            {"name": "chainer", "image": "registry.example/train:1"},
                        ],
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 30,
                        "dnsPolicy": "ClusterFirst",
                        "schedulerName": "default-scheduler",
                    },
                },
            },
            "status": {"ready": 0, "terminating": 0, "uncountedTerminatedPods": {}},
        }
        return self._put("jobs", job, "ADDED")

    def start_job(self, name: str, namespace: str = "default", *, active: int = 1) -> Obj:
        """The Job controller started its pods."""
        return self.set_job_status(
            name, namespace, startTime=now_rfc3339(), active=active, ready=active
        )

    def set_job_status(self, name: str, namespace: str = "default", **status: Any) -> Obj:
        """Merge camelCase fields into the Job's status, as its controller would."""
        return self._update(
            "jobs", namespace, name, lambda job: merge_patch(job, {"status": status})
        )

    def complete_job(
        self,
        name: str,
        namespace: str = "default",
        *,
        succeeded: int = 1,
        reason: str | None = "CompletionsReached",
    ) -> Obj:
        """SuccessCriteriaMet then Complete (Kubernetes 1.31+ order), in one update."""
        self._finish_pods(name, namespace, "Succeeded", 0)
        now = now_rfc3339()
        message = "Reached expected number of succeeded pods"
        complete = self._condition("Complete", reason, message, now)
        return self.set_job_status(
            name,
            namespace,
            active=0,
            ready=0,
            succeeded=succeeded,
            completionTime=now,
            conditions=[self._condition("SuccessCriteriaMet", reason, message, now), complete],
        )

    def fail_job(
        self,
        name: str,
        namespace: str = "default",
        *,
        reason: str = "BackoffLimitExceeded",
        message: str = "Job has reached the specified backoff limit",
        failed: int = 1,
    ) -> Obj:
        """FailureTarget then Failed with ``reason`` (BackoffLimitExceeded, DeadlineExceeded...)."""
        self._finish_pods(name, namespace, "Failed", 1)
        now = now_rfc3339()
        return self.set_job_status(
            name,
            namespace,
            active=0,
            ready=0,
            failed=failed,
            conditions=[
                self._condition("FailureTarget", reason, message, now),
                self._condition("Failed", reason, message, now),
            ],
        )

    def add_statefulset(self, name: str, namespace: str = "default", *, replicas: int = 2) -> Obj:
        labels = {"app": name}
        sts = {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": self._metadata(name, namespace, str(uuid.uuid4()), None),
            "spec": {
                "replicas": replicas,
                "serviceName": name,
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": labels},
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {
                        "containers": [{"name": "worker", "image": "registry.example/train:1"}]
                    },
                },
            },
            "status": {
                "replicas": replicas,
                "readyReplicas": replicas,
                "availableReplicas": replicas,
            },
        }
        return self._put("statefulsets", sts, "ADDED")

    def add_pod(
        self,
        name: str,
        namespace: str = "default",
        *,
        job_name: str,
        phase: str = "Failed",
        containers: list[Obj] | None = None,
        init_containers: list[Obj] | None = None,
        reason: str | None = None,
        message: str | None = None,
        legacy_label_only: bool = False,
    ) -> Obj:
        """A pod of ``job_name`` with the given container statuses (see `terminated`...).
        ``legacy_label_only`` leaves out batch.kubernetes.io/job-name, as before 1.27."""
        containers = containers if containers is not None else [running("chainer")]
        labels = {"job-name": job_name}
        if not legacy_label_only:
            labels["batch.kubernetes.io/job-name"] = job_name
        status: Obj = {
            "phase": phase,
            "containerStatuses": containers,
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.7",
            "qosClass": "BestEffort",
            "startTime": now_rfc3339(),
        }
        if init_containers:
            status["initContainerStatuses"] = init_containers
        if reason is not None:
            status["reason"] = reason
        if message is not None:
            status["message"] = message
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": self._metadata(name, namespace, str(uuid.uuid4()), labels),
            "spec": {
                "containers": [
                    {"name": c["name"], "image": "registry.example/train:1"} for c in containers
                ],
                "initContainers": [
                    {"name": c["name"], "image": "registry.example/kubectl:1"}
                    for c in init_containers or []
                ],
                "restartPolicy": "Never",
                "nodeName": "node-1",
            },
            "status": status,
        }
        return self._put("pods", pod, "ADDED")

    def set_log(
        self,
        pod: str,
        container: str,
        text: str,
        namespace: str = "default",
        *,
        previous: bool = False,
    ) -> None:
        with self._cond:
            self._state.logs[(namespace, pod, container, previous)] = text
            self._cond.notify_all()

    def append_log(self, pod: str, container: str, text: str, namespace: str = "default") -> None:
        """The container writes ``text``: a followed log stream sends it."""
        with self._cond:
            key = (namespace, pod, container, False)
            self._state.logs[key] = self._state.logs.get(key, "") + text
            self._cond.notify_all()

    def delete(self, resource: str, name: str, namespace: str = "default") -> None:
        with self._cond:
            obj = self._state.objects.pop((resource, namespace, name))
            self._rv += 1
            obj["metadata"]["resourceVersion"] = str(self._rv)
            self._record(resource, "DELETED", obj)

    def get(self, resource: str, name: str, namespace: str = "default") -> Obj:
        with self._cond:
            return copy.deepcopy(self._state.objects[(resource, namespace, name)])

    def replicas(self, name: str, namespace: str = "default") -> int:
        return int(self.get("statefulsets", name, namespace)["spec"]["replicas"])

    # -- what clients do: create, delete, patch ----------------------------------------------

    def create(self, resource: str, obj: Obj) -> Obj:
        """Create an object as the API server does: defaults, uid, resourceVersion; 409
        AlreadyExists (also while an object of that name is being deleted)."""
        obj = copy.deepcopy(obj)
        meta = obj.setdefault("metadata", {})
        namespace = meta.setdefault("namespace", "default")
        name = meta["name"]
        with self._cond:
            existing = self._state.objects.get((resource, namespace, name))
            if existing is not None:
                message = f'{_GROUPS.get(resource, resource)} "{name}" already exists'
                if existing["metadata"].get("deletionTimestamp"):
                    message = f"object is being deleted: {message}"
                raise ApiError(409, "AlreadyExists", message)
            uid = str(uuid.uuid4())
            meta.update(
                uid=uid,
                resourceVersion="0",
                generation=1,
                creationTimestamp=now_rfc3339(),
            )
            api_version, kind = RESOURCES[resource]
            obj.update(apiVersion=api_version, kind=kind)
            for admit in self.webhooks:
                admit("CREATE", resource, None, obj)
            if resource == "jobs":
                _job_defaults(obj)
            elif resource == "statefulsets":
                replicas = obj["spec"].setdefault("replicas", 1)
                obj["status"] = {
                    "replicas": replicas,
                    "readyReplicas": replicas,
                    "availableReplicas": replicas,
                }
            created = self._put(resource, obj, "ADDED")
            self.creates.append((time.perf_counter(), resource, name))
            if resource == "jobs" and self.controllers and not obj["spec"].get("suspend"):
                self._start_pod(obj)
            return created

    def request_delete(
        self, resource: str, name: str, namespace: str = "default", policy: str | None = None
    ) -> Obj:
        """DELETE as the API server and the garbage collector do it. Foreground (the default
        pulumi-kubernetes uses) keeps the object, marked, until the pods it owns are gone;
        Background removes it now and its pods after; Orphan leaves its pods."""
        with self._cond:
            obj = self._state.objects.get((resource, namespace, name))
            if obj is None:
                raise ApiError(
                    404, "NotFound", f'{_GROUPS.get(resource, resource)} "{name}" not found'
                )
            self.deletes.append((time.perf_counter(), resource, name, policy))
            policy = policy or ("Background" if resource != "pods" else None)
            dependents = self._owned_pods(obj["metadata"]["uid"], namespace)
            if policy == "Foreground" and dependents:
                if not obj["metadata"].get("deletionTimestamp"):
                    obj["metadata"]["deletionTimestamp"] = now_rfc3339()
                    obj["metadata"]["finalizers"] = ["foregroundDeletion"]
                    self._put(resource, obj, "MODIFIED")
                for pod in dependents:
                    self._terminate(pod)
                return copy.deepcopy(obj)
            if resource == "pods":
                self._terminate(obj)
                return copy.deepcopy(obj)
            self.delete(resource, name, namespace)
            for pod in dependents:
                if policy == "Orphan":
                    pod["metadata"].pop("ownerReferences", None)
                    self._put("pods", pod, "MODIFIED")
                else:
                    self._terminate(pod)
            return obj

    def patch_object(
        self, resource: str, name: str, namespace: str, body: Obj, sub: str | None = None
    ) -> Obj:
        """A merge patch, refused (422) where it changes an immutable Job field."""
        with self._cond:
            obj = self._state.objects.get((resource, namespace, name))
            if obj is None:
                raise ApiError(
                    404, "NotFound", f'{_GROUPS.get(resource, resource)} "{name}" not found'
                )
            if sub == "scale":
                replicas = body.get("spec", {}).get("replicas")
                obj["spec"]["replicas"] = replicas
                # The StatefulSet controller follows at once in this fake.
                for key in ("replicas", "readyReplicas", "availableReplicas"):
                    obj["status"][key] = replicas
                return self._put(resource, obj, "MODIFIED")
            updated = merge_patch(copy.deepcopy(obj), body)
            for admit in self.webhooks:
                admit("UPDATE", resource, obj, updated)
            if resource == "jobs":
                _check_job_update(name, obj, updated)
            suspended = bool(obj["spec"].get("suspend")) if resource == "jobs" else False
            self._state.objects[(resource, namespace, name)] = updated
            result = self._put(resource, updated, "MODIFIED")
            if resource == "jobs" and self.controllers:
                now_suspended = bool(updated["spec"].get("suspend"))
                if now_suspended and not suspended:
                    result = self._suspend(updated)
                elif suspended and not now_suspended:
                    result = self._resume(updated)
            return result

    def expire_ttl(self) -> list[str]:
        """What the TTL-after-finished controller does once every TTL has passed: delete
        each finished Job that has ``ttlSecondsAfterFinished``, in the foreground. Returns
        the names of the Jobs it deleted."""
        with self._cond:
            due = [
                obj
                for (resource, _, _), obj in self._state.objects.items()
                if resource == "jobs"
                and obj["spec"].get("ttlSecondsAfterFinished") is not None
                and any(
                    c["type"] in ("Complete", "Failed") and c["status"] == "True"
                    for c in obj.get("status", {}).get("conditions") or []
                )
            ]
            names = []
            for job in due:
                meta = job["metadata"]
                self.request_delete("jobs", meta["name"], meta["namespace"], "Foreground")
                names.append(meta["name"])
            return names

    def pods_of(self, job: str, namespace: str = "default") -> list[Obj]:
        """The pods a Job owns (being deleted or not), oldest first."""
        with self._cond:
            owner = self._state.objects.get(("jobs", namespace, job))
            uid = owner["metadata"]["uid"] if owner else None
            return [
                copy.deepcopy(pod) for pod in self._owned_pods(uid, namespace) if uid is not None
            ]

    def exists(self, resource: str, name: str, namespace: str = "default") -> bool:
        with self._cond:
            return (resource, namespace, name) in self._state.objects

    def wait_until(self, check: Callable[[], bool], timeout: float = 5.0) -> None:
        """Block until ``check()`` (called with the lock held) is true."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while not check():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError("the fake did not reach the expected state")
                self._cond.wait(min(remaining, 0.05))

    # -- the Job controller (controllers=True) -------------------------------------------------

    def _owned_pods(self, uid: str | None, namespace: str) -> list[Obj]:
        return [
            pod
            for (resource, ns, _), pod in self._state.objects.items()
            if resource == "pods"
            and ns == namespace
            and any(ref.get("uid") == uid for ref in pod["metadata"].get("ownerReferences") or [])
        ]

    def _start_pod(self, job: Obj) -> None:
        """A pod for the Job, Running at once, labelled and owned as the controller does."""
        meta, spec = job["metadata"], job["spec"]
        template = spec["template"]
        name = f"{meta['name']}-{uuid.uuid4().hex[:5]}"
        containers = template["spec"]["containers"]
        pod = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                **self._metadata(name, meta["namespace"], str(uuid.uuid4()), None),
                "labels": dict(template["metadata"]["labels"]),
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": meta["name"],
                        "uid": meta["uid"],
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {
                "containers": [
                    {"name": c["name"], "image": c.get("image", "registry.example/train:1")}
                    for c in containers
                ],
                "initContainers": [],
                "restartPolicy": template["spec"].get("restartPolicy", "Never"),
                "nodeName": "node-1",
            },
            "status": {
                "phase": "Running",
                "containerStatuses": [running(c["name"]) for c in containers],
                "startTime": now_rfc3339(),
            },
        }
        self._put("pods", pod, "ADDED")
        status = job.setdefault("status", {})
        status.update(active=1, ready=1)
        status.setdefault("startTime", now_rfc3339())
        self._put("jobs", job, "MODIFIED")

    def _finish_pods(self, job: str, namespace: str, phase: str, exit_code: int) -> None:
        """With controllers: the Job's running pods end with ``phase``."""
        if not self.controllers:
            return
        with self._cond:
            owner = self._state.objects.get(("jobs", namespace, job))
            if owner is None:
                return
            for pod in self._owned_pods(owner["metadata"]["uid"], namespace):
                if pod["status"].get("phase") != "Running" or pod["metadata"].get(
                    "deletionTimestamp"
                ):
                    continue
                pod["status"]["phase"] = phase
                pod["status"]["containerStatuses"] = [
                    terminated(c["name"], exit_code, "Completed" if exit_code == 0 else "Error")
                    for c in pod["spec"]["containers"]
                ]
                self._put("pods", pod, "MODIFIED")

    def _suspend(self, job: Obj) -> Obj:
        """The Job controller on suspension: its running pods deleted, condition Suspended,
        active 0; startTime cleared so that a resumed Job counts its deadline anew."""
        for pod in self._owned_pods(job["metadata"]["uid"], job["metadata"]["namespace"]):
            if pod["status"].get("phase") in ("Pending", "Running"):
                self._terminate(pod)
        status = job.setdefault("status", {})
        status.update(active=0, ready=0)
        status.pop("startTime", None)
        conditions = [c for c in status.get("conditions") or [] if c["type"] != "Suspended"]
        conditions.append(
            self._condition("Suspended", "JobSuspended", "Job suspended", now_rfc3339())
        )
        status["conditions"] = conditions
        return self._put("jobs", job, "MODIFIED")

    def _resume(self, job: Obj) -> Obj:
        status = job.setdefault("status", {})
        for condition in status.get("conditions") or []:
            if condition["type"] == "Suspended":
                condition.update(status="False", reason="JobResumed", message="Job resumed")
        if any(
            c["type"] in ("Complete", "Failed") and c["status"] == "True"
            for c in status.get("conditions") or []
        ):
            return self._put("jobs", job, "MODIFIED")
        self._start_pod(job)
        return copy.deepcopy(job)

    def _terminate(self, pod: Obj) -> None:
        """Mark a pod deleted; it goes after the grace period, and a Job held by a
        foreground deletion goes with its last pod."""
        meta = pod["metadata"]
        if meta.get("deletionTimestamp"):
            return
        meta["deletionTimestamp"] = now_rfc3339()
        self._put("pods", pod, "MODIFIED")
        timer = threading.Timer(
            self.pod_grace_seconds, self._gone, args=(meta["namespace"], meta["name"])
        )
        timer.daemon = True
        timer.start()

    def _gone(self, namespace: str, name: str) -> None:
        with self._cond:
            pod = self._state.objects.get(("pods", namespace, name))
            if pod is None:
                return
            self.delete("pods", name, namespace)
            for ref in pod["metadata"].get("ownerReferences") or []:
                owner = self._state.objects.get(("jobs", namespace, ref["name"]))
                if (
                    owner is not None
                    and owner["metadata"]["uid"] == ref["uid"]
                    and "foregroundDeletion" in (owner["metadata"].get("finalizers") or [])
                    and not self._owned_pods(ref["uid"], namespace)
                ):
                    self.delete("jobs", ref["name"], namespace)

    # -- internals ---------------------------------------------------------------------------

    def _metadata(self, name: str, namespace: str, uid: str, labels: dict[str, str] | None) -> Obj:
        metadata: Obj = {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": "0",
            "generation": 1,
            "creationTimestamp": now_rfc3339(),
        }
        if labels:
            metadata["labels"] = dict(labels)
        return metadata

    @staticmethod
    def _condition(kind: str, reason: str | None, message: str, now: str) -> Obj:
        condition: Obj = {
            "type": kind,
            "status": "True",
            "lastProbeTime": now,
            "lastTransitionTime": now,
            "message": message,
        }
        if reason is not None:
            condition["reason"] = reason
        return condition

    def _put(self, resource: str, obj: Obj, event: str) -> Obj:
        metadata = obj["metadata"]
        with self._cond:
            self._rv += 1
            metadata["resourceVersion"] = str(self._rv)
            self._state.objects[(resource, metadata["namespace"], metadata["name"])] = obj
            self._record(resource, event, obj)
            return copy.deepcopy(obj)

    def _update(
        self, resource: str, namespace: str, name: str, change: Callable[[Obj], Any]
    ) -> Obj:
        with self._cond:
            obj = self._state.objects[(resource, namespace, name)]
            change(obj)
            return self._put(resource, obj, "MODIFIED")

    def _record(self, resource: str, kind: str, obj: Obj) -> None:
        """Append to the watch history and wake the watch streams (lock held)."""
        namespace = obj["metadata"]["namespace"]
        self._state.events.append(_Event(self._rv, resource, namespace, kind, copy.deepcopy(obj)))
        self._cond.notify_all()
        for observe in self.observers:
            observe(resource, kind, copy.deepcopy(obj))

    def _take_fault(self, request: Request) -> _Fault | None:
        with self._cond:
            for fault in self._faults:
                if fault.matches(request):
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                    return fault
        return None


def _in_namespace(obj: Obj, namespace: str) -> Obj:
    """A created object's namespace is the request path's."""
    return {**obj, "metadata": {**(obj.get("metadata") or {}), "namespace": namespace}}


def _job_defaults(job: Obj) -> None:
    """What the API server adds to a created Job: the selector and pod labels keyed by its
    uid, and the spec's defaults."""
    meta, spec = job["metadata"], job.setdefault("spec", {})
    uid = meta["uid"]
    spec.setdefault("parallelism", 1)
    spec.setdefault("completions", 1)
    spec.setdefault("completionMode", "NonIndexed")
    spec.setdefault("backoffLimit", 6)
    spec.setdefault("suspend", False)
    spec.setdefault("manualSelector", False)
    spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}
    template = spec.setdefault("template", {})
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    # generateSelector (pkg/registry/batch/job/strategy.go) adds each label the template does
    # not set already: a template's own job-name (Kubeflow's label) stays.
    for key, value in {
        "batch.kubernetes.io/controller-uid": uid,
        "batch.kubernetes.io/job-name": meta["name"],
        "controller-uid": uid,
        "job-name": meta["name"],
    }.items():
        labels.setdefault(key, value)
    job["status"] = {"ready": 0, "terminating": 0, "uncountedTerminatedPods": {}}


def _check_job_update(name: str, old: Obj, new: Obj) -> None:
    for path in JOB_IMMUTABLE:
        before, after = old["spec"], new["spec"]
        for key in path:
            before = before.get(key) if isinstance(before, dict) else None
            after = after.get(key) if isinstance(after, dict) else None
        if before != after:
            field_path = "spec." + ".".join(path)
            raise ApiError(
                422,
                "Invalid",
                f'Job.batch "{name}" is invalid: {field_path}: Invalid value: '
                f"{json.dumps(after, sort_keys=True)}: field is immutable",
            )


def _cut(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: FakeKube

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Quiet: a client that hangs up on a watch is normal (the watcher closes the
        stream as soon as the Job ends); anything else is still reported."""
        if not isinstance(sys.exc_info()[1], ConnectionError | OSError):
            super().handle_error(request, client_address)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.fake._cond:
            self.fake._connections.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.fake._cond:
            self.fake._connections.discard(request)
        super().shutdown_request(request)


def parse_label_selector(text: str) -> list[tuple[str, bool, str]]:
    """(key, equal, value) per term of an equality-based selector (``k=v``, ``k==v``,
    ``k!=v``, comma-separated). ValueError for anything else: the fake must not quietly
    match what it does not understand."""
    terms = []
    for term in text.split(","):
        term = term.strip()
        if "!=" in term:
            key, _, value = term.partition("!=")
            equal = False
        else:
            key, _, value = term.partition("==") if "==" in term else term.partition("=")
            equal = True
        key, value = key.strip(), value.strip()
        if not key or "=" not in term or any(c in key + value for c in "()!= "):
            raise ValueError(f"unable to parse requirement: {term!r}")
        terms.append((key, equal, value))
    return terms


def _selector_matches(obj: Obj, query: dict[str, str]) -> bool:
    fields = query.get("fieldSelector")
    if fields:
        for term in fields.split(","):
            key, _, value = term.partition("=")
            if key == "metadata.name" and obj["metadata"]["name"] != value:
                return False
    labels = query.get("labelSelector")
    if labels:
        have = obj["metadata"].get("labels") or {}
        for key, equal, value in parse_label_selector(labels):
            if (have.get(key) == value) != equal:
                return False
    return True


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as Go's net package (the real API server) sets by default. Without it a
    # watch event written shortly after the stream's headers waits for the client's delayed
    # ACK (Nagle's algorithm): 20 to 40 ms of latency that no real cluster has.
    disable_nagle_algorithm = True
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: tests read `FakeKube.requests` instead."""

    # -- dispatch ----------------------------------------------------------------------------

    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_PATCH(self) -> None:
        self._dispatch("PATCH")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def do_DELETE(self) -> None:
        self._dispatch("DELETE")

    def _dispatch(self, method: str) -> None:
        fake = self.server.fake
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
        request = Request(method, parts.path, query)
        with fake._cond:
            fake.requests.append(request)
        body = self._read_body()
        fault = fake._take_fault(request)
        if fault is not None:
            error = status_body(fault.status, _reason(fault.status), "injected fault")
            if fault.as_watch_event:
                self._start_stream()
                self._chunk({"type": "ERROR", "object": error})
                self._end_stream()
            else:
                self._json(fault.status, error)
            return
        route = _route(parts.path)
        if route is None:
            self._json(404, status_body(404, "NotFound", f"no route for {parts.path}"))
            return
        resource, namespace, name, sub = route
        if method == "GET" and name is None:
            try:
                if query.get("labelSelector"):
                    parse_label_selector(query["labelSelector"])
            except ValueError as error:
                self._json(400, status_body(400, "BadRequest", str(error)))
                return
            if request.watch:
                self._watch(resource, namespace, query)
            else:
                self._list(resource, namespace, query)
        elif method == "GET" and sub == "log":
            self._log(namespace, name, query)
        elif method == "GET":
            self._get(resource, namespace, name, sub)
        elif method == "PATCH" and name is not None:
            self._patch(resource, namespace, name, sub, body)
        elif method == "POST" and name is None and isinstance(body, dict):
            self._answer(201, lambda: fake.create(resource, _in_namespace(body, namespace)))
        elif method == "DELETE" and name is not None and sub is None:
            policy = (body or {}).get("propagationPolicy") if isinstance(body, dict) else None
            policy = query.get("propagationPolicy", policy)
            self._answer(200, lambda: fake.request_delete(resource, name, namespace, policy))
        else:
            self._json(405, status_body(405, "MethodNotAllowed", f"{method} {parts.path}"))

    def _read_body(self) -> Obj | list[Any] | None:
        length = int(self.headers.get("Content-Length") or 0)
        if not length:
            return None
        return json.loads(self.rfile.read(length))

    # -- verbs -------------------------------------------------------------------------------

    def _list(self, resource: str, namespace: str, query: dict[str, str]) -> None:
        fake = self.server.fake
        api_version, kind = RESOURCES[resource]
        with fake._cond:
            items = [
                copy.deepcopy(obj)
                for (res, ns, _), obj in sorted(fake._state.objects.items())
                if res == resource and ns == namespace and _selector_matches(obj, query)
            ]
            rv = fake._rv
        self._json(
            200,
            {
                "apiVersion": api_version,
                "kind": f"{kind}List",
                "metadata": {"resourceVersion": str(rv)},
                "items": items,
            },
        )

    def _get(self, resource: str, namespace: str, name: str, sub: str | None) -> None:
        fake = self.server.fake
        with fake._cond:
            obj = copy.deepcopy(fake._state.objects.get((resource, namespace, name)))
        if obj is None:
            self._not_found(resource, name)
        elif sub == "scale" and resource == "statefulsets":
            self._json(200, _scale(obj))
        elif sub is None:
            self._json(200, obj)
        else:
            self._json(404, status_body(404, "NotFound", f"no subresource {sub}"))

    def _patch(self, resource: str, namespace: str, name: str, sub: str | None, body: Any) -> None:
        fake = self.server.fake
        content_type = self.headers.get("Content-Type", "")
        if not isinstance(body, dict) or "json-patch" in content_type:
            self._json(415, status_body(415, "UnsupportedMediaType", "only merge patches"))
            return
        if sub not in (None, "scale") or (sub == "scale" and resource != "statefulsets"):
            self._json(404, status_body(404, "NotFound", f"no subresource {sub}"))
            return
        try:
            updated = fake.patch_object(resource, name, namespace, body, sub)
        except ApiError as error:
            self._error(error, resource, name)
            return
        patch = Patch(time.perf_counter(), resource, namespace, name, sub, body)
        with fake._cond:
            fake.patches.append(patch)
        if fake.on_patch is not None:
            fake.on_patch(patch)
        self._json(200, _scale(updated) if sub == "scale" else updated)

    def _answer(self, code: int, action: Callable[[], Obj]) -> None:
        try:
            result = action()
        except ApiError as error:
            self._json(error.code, status_body(error.code, error.reason, error.message))
            return
        self._json(code, result)

    def _error(self, error: ApiError, resource: str, name: str) -> None:
        if error.code == 404:
            self._not_found(resource, name)
        else:
            self._json(error.code, status_body(error.code, error.reason, error.message))

    def _log(self, namespace: str, name: str, query: dict[str, str]) -> None:
        fake = self.server.fake
        with fake._cond:
            pod = fake._state.objects.get(("pods", namespace, name))
            logs = dict(fake._state.logs)
        if pod is None:
            self._not_found("pods", name)
            return
        names = [c["name"] for c in pod["spec"]["containers"] + pod["spec"]["initContainers"]]
        container = query.get("container")
        if container is None and len(pod["spec"]["containers"]) == 1:
            container = pod["spec"]["containers"][0]["name"]
        if container not in names:
            message = f"a container name must be specified for pod {name}, choose one of: {names}"
            self._json(400, status_body(400, "BadRequest", message))
            return
        previous = query.get("previous", "").lower() in ("true", "1")
        state = _container_state(pod, container)
        if (
            "waiting" in state
            and not previous
            and not _container_state(pod, container, "lastState")
        ):
            # kubernetes pkg/kubelet/kubelet_pods.go validateContainerLogStatus: no log yet
            # (a container waiting to run again still shows its last run's log).
            reason = state["waiting"].get("reason", "")
            message = f'container "{container}" in pod "{name}" is waiting to start: {reason}'
            self._json(400, status_body(400, "BadRequest", message))
            return
        if query.get("follow", "").lower() in ("true", "1") and not previous:
            self._follow_log(namespace, name, container)
            return
        text = logs.get((namespace, name, container, previous), "")
        if "tailLines" in query:
            lines = text.splitlines(keepends=True)
            text = "".join(lines[-int(query["tailLines"]) :]) if int(query["tailLines"]) else ""
        self._send(200, "text/plain", text.encode())

    def _follow_log(self, namespace: str, name: str, container: str) -> None:
        """``follow=true``: the log so far, then what is appended, until the container is no
        longer running (kubernetes pkg/kubelet/kuberuntime/logs/logs.go stops following a
        container that has exited) or its pod is gone; the stream then ends."""
        fake = self.server.fake
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        sent = 0
        with fake._cond:
            run = _restarts(fake._state.objects.get(("pods", namespace, name)), container)
        while True:
            with fake._cond:
                text = fake._state.logs.get((namespace, name, container, False), "")
                pod = fake._state.objects.get(("pods", namespace, name))
                # The container followed is still running, not restarted as a new one.
                running = (
                    pod is not None
                    and "running" in _container_state(pod, container)
                    and _restarts(pod, container) == run
                )
                if len(text) == sent and running and not fake._stopping:
                    fake._cond.wait(0.2)
                    text = fake._state.logs.get((namespace, name, container, False), "")
                stopping = fake._stopping
            if len(text) > sent:
                data = text[sent:].encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                sent = len(text)
            if stopping or self._client_gone():
                _cut(self.connection)
                self.close_connection = True
                return
            if not running:
                self._end_stream()
                return

    def _watch(self, resource: str, namespace: str, query: dict[str, str]) -> None:
        """Stream events after ``resourceVersion`` until timeoutSeconds, a drop, an expiry
        or the server stopping. A resourceVersion older than the compacted history gets an
        ERROR event with a 410 Status, like a real API server."""
        fake = self.server.fake
        timeout = float(query.get("timeoutSeconds") or 1800)
        deadline = time.monotonic() + timeout
        requested = query.get("resourceVersion")
        with fake._cond:
            fake.watches_opened += 1
            fake._cond.notify_all()
            drop_generation = fake._drop_generation
            expire_generation = fake._expire_generation
            if requested not in (None, "", "0") and int(requested) < fake._state.compacted_rv:
                gone = f"too old resource version: {requested} ({fake._state.compacted_rv})"
            else:
                gone = None
            if requested in (None, "", "0"):
                pending = [
                    {"type": "ADDED", "object": copy.deepcopy(obj)}
                    for (res, ns, _), obj in sorted(fake._state.objects.items())
                    if res == resource and ns == namespace and _selector_matches(obj, query)
                ]
                cursor = fake._rv
            else:
                pending, cursor = [], int(requested)
            events = fake._state.events  # append-only, ordered by resourceVersion
            position = bisect.bisect_right(events, cursor, key=lambda event: event.rv)
        self._start_stream()
        if gone is not None:
            self._chunk({"type": "ERROR", "object": status_body(410, "Expired", gone)})
            self._end_stream()
            return
        while True:
            for event in pending:
                self._chunk(event)
            with fake._cond:
                while True:
                    if fake._stopping or fake._drop_generation != drop_generation:
                        action = "drop"
                        break
                    if fake._expire_generation != expire_generation:
                        action = "expire"
                        break
                    pending = [
                        {"type": event.type, "object": event.obj}
                        for event in events[position:]
                        if (event.resource, event.namespace) == (resource, namespace)
                        and _selector_matches(event.obj, query)
                    ]
                    position = len(events)
                    if pending:
                        action = "send"
                        break
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        action = "end"
                        break
                    if self._client_gone():
                        action = "gone"
                        break
                    fake._cond.wait(min(remaining, 0.2))
            if action == "send":
                continue
            if action in ("drop", "gone"):
                _cut(self.connection)
                self.close_connection = True
                return
            if action == "expire":
                expired = status_body(410, "Expired", "too old resource version")
                self._chunk({"type": "ERROR", "object": expired})
            self._end_stream()
            return

    def _client_gone(self) -> bool:
        """The client closed the stream (the watcher does as soon as the Job ends): stop
        waiting for events instead of lingering until timeoutSeconds."""
        readable, _, _ = select.select([self.connection], [], [], 0)
        if not readable:
            return False
        try:
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    # -- responses ---------------------------------------------------------------------------

    def _not_found(self, resource: str, name: str) -> None:
        kind = RESOURCES[resource][1]
        message = f'{resource} "{name}" not found'
        body = status_body(404, "NotFound", message)
        body["details"] = {"name": name, "kind": resource, "group": kind}
        self._json(404, body)

    def _json(self, code: int, body: Obj) -> None:
        self._send(code, "application/json", json.dumps(body).encode())

    def _send(self, code: int, content_type: str, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()

    def _chunk(self, event: Obj) -> None:
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _end_stream(self) -> None:
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()


def _route(path: str) -> tuple[str, str, str | None, str | None] | None:
    """(resource, namespace, name, subresource) for a namespaced resource path."""
    for prefix, api_version in _PREFIXES.items():
        head = f"/{prefix}/namespaces/"
        if not path.startswith(head):
            continue
        rest = path[len(head) :].split("/")
        if len(rest) < 2 or len(rest) > 4:
            return None
        namespace, resource = rest[0], rest[1]
        if RESOURCES.get(resource, ("", ""))[0] != api_version:
            return None
        name = rest[2] if len(rest) > 2 else None
        sub = rest[3] if len(rest) > 3 else None
        return resource, namespace, name, sub
    return None


def _container_state(pod: Obj, container: str, field: str = "state") -> Obj:
    """The container's ``state`` (or ``lastState``) in the pod's status (``{}`` if none)."""
    for status in pod.get("status", {}).get("containerStatuses") or []:
        if status["name"] == container:
            return dict(status.get(field) or {})
    return {}


def _restarts(pod: Obj | None, container: str) -> int:
    for status in (pod or {}).get("status", {}).get("containerStatuses") or []:
        if status["name"] == container:
            return int(status.get("restartCount") or 0)
    return 0


def _scale(sts: Obj) -> Obj:
    metadata = sts["metadata"]
    return {
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": {
            k: metadata[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
        },
        "spec": {"replicas": sts["spec"]["replicas"]},
        "status": {"replicas": sts["status"]["replicas"], "selector": f"app={metadata['name']}"},
    }


def _reason(code: int) -> str:
    return {
        404: "NotFound",
        403: "Forbidden",
        401: "Unauthorized",
        409: "Conflict",
        410: "Expired",
        429: "TooManyRequests",
        500: "InternalError",
        503: "ServiceUnavailable",
    }.get(code, "Unknown")


def running_fake() -> Iterator[FakeKube]:
    """For a pytest fixture: ``yield from running_fake()``."""
    with FakeKube() as fake:
        yield fake
