"""Following the deciding pod's log while a job runs: `trainjobs watch JOB --logs`.

As ``kubectl logs -f``: the log of the master Job's pod (the chief or master whose end
decides the job) is read with ``follow=true``, which the API server streams from the
kubelet until the container stops (kubernetes pkg/registry/core/pod/rest/log.go hands the
request to the kubelet; pkg/kubelet/kuberuntime/logs/logs.go stops following when the
container is no longer running). A container that has not started yet has no log (the
kubelet answers 400, "container ... is waiting to start", pkg/kubelet/kubelet_pods.go
``validateContainerLogStatus``): it is asked again a moment later.

Each container instance (a pod's uid and its container's restart count) is followed to its
end once. When the container restarts (restartPolicy OnFailure) or the Job replaces the pod
(restartPolicy Never, within backoffLimit), the new instance is followed next. A stream that
breaks before its container ended is opened again, and the lines already shown are skipped.

Every line goes through :func:`~trainjobs.core.terminal.escape`; every request through the
bounded transport (:func:`~trainjobs.cluster.transport.stream_lines`: the caller's deadline,
and no line over :data:`~trainjobs.cluster.transport.MAX_EVENT_BYTES`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.diagnosis import JOB_NAME_LABELS
from trainjobs.cluster.errors import DEFAULT_RETRY, BadResponse, RetryPolicy
from trainjobs.cluster.transport import MAX_EVENT_BYTES, stream_lines
from trainjobs.core.terminal import escape

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

LOG_POLL_SECONDS = 1.0
"""How long to wait before looking again for a pod whose container has started."""

FINISH_GRACE_SECONDS = 5.0
"""How long the lines a pod wrote last may take to arrive once the job has ended."""


@dataclass(frozen=True)
class _Instance:
    """One run of the pod's log container: what to follow, and whether it has ended."""

    pod: str
    uid: str
    container: str
    restarts: int
    created: datetime
    ended: bool

    @property
    def key(self) -> tuple[str, int]:
        return self.uid, self.restarts


class LogFollower:
    """Follows the log of Job ``job_name``'s pods in a thread; each line goes to ``emit``
    as ``[POD] line``. :meth:`finish` stops it once the job has ended."""

    def __init__(
        self,
        api: ApiClient,
        namespace: str,
        job_name: str,
        emit: Callable[[str], None],
        *,
        timeout_seconds: float,
        retry: RetryPolicy = DEFAULT_RETRY,
        poll_seconds: float = LOG_POLL_SECONDS,
    ) -> None:
        self.api, self.namespace, self.job_name = api, namespace, job_name
        self.retry, self.poll_seconds = retry, poll_seconds
        self._emit = emit
        self._deadline = time.monotonic() + timeout_seconds
        self._shown: dict[tuple[str, int], int] = {}
        self._done: set[tuple[str, int]] = set()
        self._stopping = threading.Event()
        self._lock = threading.Lock()
        self._silent = False
        self._thread = threading.Thread(target=self._run, daemon=True, name="log-follower")

    def start(self) -> LogFollower:
        self._thread.start()
        return self

    def finish(self, grace_seconds: float = FINISH_GRACE_SECONDS) -> None:
        """The job has ended: show what its pods still write, for at most ``grace_seconds``,
        then nothing more (the report of the outcome comes after the log)."""
        self._stopping.set()
        self._thread.join(grace_seconds)
        with self._lock:
            self._silent = True

    def _say(self, pod: str, line: str) -> None:
        with self._lock:
            if not self._silent:
                self._emit(f"[{escape(pod)}] {escape(line)}")

    def _run(self) -> None:
        while time.monotonic() < self._deadline:
            try:
                followed = self._step()
            except Exception:  # best effort: the watch reports the cluster's state
                followed = False
            if self._stopping.is_set() and not followed:
                return
            if not followed:
                self._stopping.wait(self.poll_seconds)

    def _step(self) -> bool:
        """Follow the oldest container instance not yet followed to its end; False when
        there is none (yet)."""
        pending = [i for i in self._instances() if i.key not in self._done]
        if not pending:
            return False
        instance = min(pending, key=lambda i: (i.created, not i.ended, i.pod))
        if self._follow(instance):
            self._done.add(instance.key)
            return True
        # The stream ended: the instance is done if its container has stopped (its last
        # lines were sent before the stream ended) or its pod is gone; else open it again.
        now = {i.key: i for i in self._instances()}
        current = now.get(instance.key)
        if current is None or (current.ended and instance.ended):
            self._done.add(instance.key)
            return True
        # Stopped since the stream opened: its last lines are read at once; still running
        # (the stream broke): read again after a pause.
        return current.ended

    def _instances(self) -> list[_Instance]:
        from kubernetes import client

        core = client.CoreV1Api(self.api)
        timeout = (self.retry.connect_timeout, self.retry.request_timeout)
        for label in JOB_NAME_LABELS:
            listing = core.list_namespaced_pod(
                self.namespace, label_selector=f"{label}={self.job_name}", _request_timeout=timeout
            )
            found = [i for pod in listing.items or [] if (i := _instance(pod)) is not None]
            if found:
                return found
        return []

    def _follow(self, instance: _Instance) -> bool:
        """Stream the instance's log until it ends; True when it is not to be read again (a
        line over the bound)."""
        from kubernetes import client

        skip = self._shown.get(instance.key, 0)
        what = f"follow the log of pod {self.namespace}/{instance.pod}"
        try:
            response = client.CoreV1Api(self.api).read_namespaced_pod_log(
                instance.pod,
                self.namespace,
                container=instance.container,
                follow=True,
                # Raw bytes: preloaded, the client json-decodes a log that looks like JSON.
                _preload_content=False,
                _request_timeout=(self.retry.connect_timeout, self.retry.request_timeout),
            )
            for raw in stream_lines(response, self._deadline, what):
                if skip:
                    skip -= 1
                    continue
                self._shown[instance.key] = self._shown.get(instance.key, 0) + 1
                self._say(instance.pod, raw.decode("utf-8", errors="replace").removesuffix("\r"))
        except BadResponse:  # stream_lines' bound on one line
            limit = MAX_EVENT_BYTES // (1024 * 1024)
            self._say(instance.pod, f"(a line longer than {limit} MiB: the log is not followed on)")
            return True
        except Exception:  # the pod went, the connection broke: see _step
            return False
        return False


def _instance(pod: Any) -> _Instance | None:
    """The pod's first container as a followable instance; None before it has started
    (nothing to read yet) or for a pod being deleted before it ran."""
    metadata, spec, status = pod.metadata, pod.spec, pod.status
    if metadata is None or spec is None or not spec.containers or status is None:
        return None
    name = spec.containers[0].name
    found = [s for s in status.container_statuses or [] if s.name == name]
    state = found[0].state if found else None
    if state is None or (state.running is None and state.terminated is None):
        return None
    restarts = found[0].restart_count
    return _Instance(
        pod=str(metadata.name),
        uid=str(metadata.uid),
        container=str(name),
        restarts=restarts if isinstance(restarts, int) else 0,
        created=metadata.creation_timestamp or datetime.min.replace(tzinfo=UTC),
        ended=state.running is None,
    )
