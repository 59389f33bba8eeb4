"""Why a training job failed: its failed pods, their exit codes, the master's last log lines.

The completion watcher (`trainjobs.cluster.supervisor`) calls `diagnose` once a job ends without
success, and puts the result into the Pulumi outputs, the error that fails `pulumi up`,
and the output of `trainjobs watch`. The users of the old operators had no way to see why a
job failed; this module is the answer: which pod, which container, which exit code, OOMKilled
or not, and what the program printed last.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.api_error import as_api_error
from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1ContainerStatus, V1Pod

LOG_TAIL_LINES = 20
"""How many of the master pod's last log lines a failure report carries."""

JOB_NAME_LABELS = ("batch.kubernetes.io/job-name", "job-name")
"""Labels the Job controller puts on its pods. Kubernetes 1.27+ sets both; older clusters
only the unprefixed one, so it is the fallback."""

WAITING_FAILURES = frozenset(
    {
        "CrashLoopBackOff",
        "ImagePullBackOff",
        "ErrImagePull",
        "InvalidImageName",
        "CreateContainerConfigError",
        "CreateContainerError",
        "RunContainerError",
    }
)
"""Waiting reasons that mean a container cannot run, as opposed to one still starting."""


@dataclass(frozen=True)
class ContainerFailure:
    """One container that failed: exit code and reason as the kubelet reported them."""

    container: str
    init_container: bool
    exit_code: int | None
    reason: str | None
    signal: int | None = None
    message: str | None = None
    restarts: int = 0
    previous: bool = False
    """The failure is the container's previous run (it was restarted since)."""

    def describe(self) -> str:
        what = f"{'init container' if self.init_container else 'container'} {self.container}"
        if self.exit_code is None:
            text = f"{what} cannot run: {self.reason}"
        else:
            text = f"{what} exited with code {self.exit_code}"
            if self.reason:
                text += f" ({self.reason})"
        if self.signal:
            text += f", signal {self.signal}"
        if self.message:
            text += f": {self.message.strip()}"
        if self.restarts:
            text += f" [{self.restarts} restart(s)]"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.container,
            "init_container": self.init_container,
            "exit_code": self.exit_code,
            "reason": self.reason,
            "signal": self.signal,
            "message": self.message,
            "restarts": self.restarts,
        }


@dataclass(frozen=True)
class PodFailure:
    """A pod of the Job that failed, with its failed containers (init containers first)."""

    pod: str
    phase: str | None
    reason: str | None
    message: str | None
    containers: tuple[ContainerFailure, ...]

    def describe(self) -> str:
        state = self.phase or "Unknown"
        if self.reason:
            state += f", {self.reason}"
        if self.message:
            state += f": {self.message.strip()}"
        text = f"{self.pod} ({state})"
        if self.containers:
            text += ": " + "; ".join(c.describe() for c in self.containers)
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "phase": self.phase,
            "reason": self.reason,
            "message": self.message,
            "containers": [c.to_dict() for c in self.containers],
        }


@dataclass(frozen=True)
class Diagnosis:
    """Why a job did not succeed: its failed pods and the end of the master's log."""

    failed_pods: tuple[PodFailure, ...] = ()
    log_pod: str | None = None
    log_container: str | None = None
    log_tail: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    """What could not be found out (pods gone with the Job, log unreadable...)."""

    def render(self, max_pods: int = 10) -> str:
        lines: list[str] = []
        if self.failed_pods:
            lines.append("failed pods:")
            shown = self.failed_pods[-max_pods:]
            hidden = len(self.failed_pods) - len(shown)
            if hidden:
                lines.append(f"  ... {hidden} earlier failed pod(s) not shown")
            lines += [f"  {pod.describe()}" for pod in shown]
        if self.log_pod is not None:
            source = f"{self.log_pod}/{self.log_container}"
            if self.log_tail:
                lines.append(f"last {len(self.log_tail)} log line(s) of {source}:")
                lines += [f"  | {line}" for line in self.log_tail]
            else:
                lines.append(f"log of {source} is empty")
        lines += self.notes
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "failed_pods": [pod.to_dict() for pod in self.failed_pods],
            "log_pod": self.log_pod,
            "log_container": self.log_container,
            "log_tail": list(self.log_tail),
            "notes": list(self.notes),
        }


def describe_error(error: BaseException) -> str:
    """One line for an API or connection error, fit for a progress line or a note."""
    import urllib3

    refusal = as_api_error(error)
    if refusal is not None:
        return f"HTTP {refusal.status} {refusal.reason}".strip()
    if isinstance(error, urllib3.exceptions.MaxRetryError) and error.reason is not None:
        error = error.reason  # the URL around it only repeats what the caller knows
    text = f"{type(error).__name__}: {error}"
    return text if len(text) <= 200 else text[:197] + "..."


def diagnose(
    api: ApiClient,
    namespace: str,
    job_name: str,
    *,
    tail_lines: int = LOG_TAIL_LINES,
    request_timeout: float = 30.0,
) -> Diagnosis:
    """Find out why a job did not succeed: its failed pods and the master's last log lines.

    Best effort by design: whatever cannot be read (pods already removed with the Job, a
    log of a container that never started) becomes a note, never an exception that would
    hide the outcome itself.
    """
    from kubernetes import client

    core = client.CoreV1Api(api)
    timeout = (min(10.0, request_timeout), request_timeout)
    pods: list[V1Pod] = []
    try:
        for label in JOB_NAME_LABELS:
            pods = core.list_namespaced_pod(
                namespace, label_selector=f"{label}={job_name}", _request_timeout=timeout
            ).items
            if pods:
                break
    except Exception as error:
        return Diagnosis(notes=(f"could not list the job's pods: {describe_error(error)}",))
    if not pods:
        return Diagnosis(notes=(f"no pods of Job {namespace}/{job_name} are left to inspect",))

    pods.sort(key=lambda pod: pod.metadata.creation_timestamp or datetime.min.replace(tzinfo=UTC))
    failures = [(pod, failure) for pod in pods if (failure := _pod_failure(pod)) is not None]
    log_pod, log_failure = failures[-1] if failures else (pods[-1], None)
    failed_pods = tuple(failure for _, failure in failures)
    container, previous = _log_container(log_pod, log_failure)
    if container is None:
        return Diagnosis(
            failed_pods=failed_pods,
            notes=(f"pod {log_pod.metadata.name} has no containers to read a log from",),
        )
    try:
        response = core.read_namespaced_pod_log(
            log_pod.metadata.name,
            namespace,
            container=container,
            tail_lines=tail_lines,
            previous=previous,
            # Raw bytes: with preloaded content the client json-decodes the log, which
            # mangles logs that happen to be valid JSON.
            _preload_content=False,
            _request_timeout=timeout,
        )
    except Exception as error:
        source = f"{log_pod.metadata.name}/{container}"
        return Diagnosis(
            failed_pods=failed_pods,
            notes=(f"could not read the log of {source}: {describe_error(error)}",),
        )
    text = response.data.decode("utf-8", errors="replace")
    return Diagnosis(
        failed_pods=failed_pods,
        log_pod=log_pod.metadata.name,
        log_container=container,
        log_tail=tuple(text.splitlines()[-tail_lines:]),
    )


def _pod_failure(pod: V1Pod) -> PodFailure | None:
    status = pod.status
    if status is None:
        return None
    containers = [
        failure
        for init, statuses in (
            (True, status.init_container_statuses),
            (False, status.container_statuses),
        )
        for container_status in statuses or []
        if (failure := _container_failure(container_status, init)) is not None
    ]
    if not containers and status.phase != JobPhase.FAILED:
        return None
    return PodFailure(
        pod=pod.metadata.name,
        phase=status.phase,
        reason=status.reason,
        message=status.message,
        containers=tuple(containers),
    )


def _container_failure(status: V1ContainerStatus, init: bool) -> ContainerFailure | None:
    """A non-zero exit (the current run, else the previous one: with restartPolicy
    OnFailure the kubelet restarts the container and keeps the failure in lastState), or a
    container that cannot start at all (image pull, config errors, crash loop)."""
    state, last = status.state, status.last_state
    terminated, previous = (state.terminated if state else None), False
    if terminated is None or terminated.exit_code == 0:
        terminated, previous = (last.terminated if last else None), True
    if terminated is not None and terminated.exit_code != 0:
        return ContainerFailure(
            container=status.name,
            init_container=init,
            exit_code=terminated.exit_code,
            reason=terminated.reason,
            signal=terminated.signal,
            message=terminated.message,
            restarts=status.restart_count,
            previous=previous,
        )
    waiting = state.waiting if state else None
    if waiting is not None and waiting.reason in WAITING_FAILURES:
        return ContainerFailure(
            container=status.name,
            init_container=init,
            exit_code=None,
            reason=waiting.reason,
            message=waiting.message,
            restarts=status.restart_count,
        )
    return None


def _log_container(pod: V1Pod, failure: PodFailure | None) -> tuple[str | None, bool]:
    """The container whose log explains the failure: the first failed one (an init
    container failing means the main one never ran), else the pod's first container."""
    if failure is not None and failure.containers:
        first = failure.containers[0]
        if first.exit_code is not None:
            return first.container, first.previous
    containers = pod.spec.containers if pod.spec else []
    return (containers[0].name if containers else None), False
