"""One batch/v1 Job of a local run: a pod per completion index, judged as the controller does."""

from __future__ import annotations

import time
from collections.abc import Set
from dataclasses import dataclass
from typing import Any

from trainjobs.local.cluster import ExitCodeRule, JobPlan
from trainjobs.local.pod_run import LocalPod
from trainjobs.local.run_context import RunContext


@dataclass
class ContainerFailure:
    container: str
    code: int
    init: bool

    def __str__(self) -> str:
        kind = "init container" if self.init else "container"
        return f"{kind} {self.container} exited with code {self.code}"


class JobRun:
    """One batch/v1 Job: a pod per completion index, retried and judged as the Job controller
    judges it (see the module docstring). ``condition`` is None while the Job is active."""

    def __init__(self, plan: JobPlan, pods: list[LocalPod], run: RunContext) -> None:
        self.plan = plan
        self.pods = pods
        self.run = run
        self.attempts = 0
        self.retries = 0
        self.failures = 0
        """Failures counted against backoffLimit (not those a podFailurePolicy Ignores)."""
        self.succeeded: set[int] = set()
        self.condition: tuple[str, str, str] | None = None
        """(Complete or Failed, reason, message) once the Job is finished."""
        self.waiting: dict[LocalPod, float] = {}
        """Failed pods (restartPolicy Never) whose next pod starts at this time."""

    @property
    def name(self) -> str:
        return self.plan.name

    def active(self) -> list[LocalPod]:
        """Pods created and not finished (Pending while init containers run)."""
        return [
            pod
            for pod in self.pods
            if pod.sandbox is not None and pod.phase in ("Pending", "Running")
        ]

    def status(self) -> dict[str, Any]:
        state, reason, _ = self.condition or ("Active", None, None)
        return {
            "condition": state,
            "reason": reason,
            "attempts": self.attempts,
            "retries": self.retries,
            "succeededIndexes": sorted(self.succeeded),
        }

    def start(self) -> None:
        """Create a pod for every index; unschedulable ones stay Pending."""
        for pod in self.pods:
            if pod.unschedulable:
                self.run.sink.event(
                    f"pod {pod.name} stays Pending (Unschedulable): {pod.unschedulable}"
                )
                continue
            self._begin_attempt(pod)

    def check_deadline(self, elapsed: float) -> None:
        """activeDeadlineSeconds: stop the Job's pods and fail it once the deadline passed."""
        deadline = self.plan.active_deadline_seconds
        if self.condition is not None or deadline is None or elapsed < deadline:
            return
        active = self.active()
        if active:
            names = ", ".join(pod.name for pod in active)
            self.run.sink.event(
                f"activeDeadlineSeconds ({deadline}s) exceeded: stopping "
                f"pod{'s' if len(active) > 1 else ''} {names}"
            )
        for pod in active:
            pod.stop(pod.plan.grace_seconds)
            pod.phase = "Failed"
        self.run.publish()
        self.condition = (
            "Failed",
            "DeadlineExceeded",
            f"Job was active longer than specified deadline ({deadline}s), during attempt "
            f"{self.attempts}",
        )

    def step(self) -> None:
        """Advance every running pod; set ``condition`` when the Job finishes."""
        now = time.monotonic()
        for pod, start_at in list(self.waiting.items()):
            if now >= start_at:
                del self.waiting[pod]
                self._begin_attempt(pod)
        for pod in self.active():
            if pod.restart_at:
                # A container in its restart back-off: the pod waits (CrashLoopBackOff).
                for name, start_at in list(pod.restart_at.items()):
                    if now >= start_at:
                        del pod.restart_at[name]
                        pod.start(name)
                continue
            failure = self._step_pod(pod)
            if failure is not None:
                self._failed(pod, failure)
                if self.condition is not None:
                    return
        required: Set[int] = (
            self.plan.succeeded_indexes
            if self.plan.succeeded_indexes is not None
            else {pod.plan.index or 0 for pod in self.pods}
        )
        if required <= self.succeeded:
            names = [pod.name for pod in self.pods if (pod.plan.index or 0) in required]
            policy = " (successPolicy)" if self.plan.succeeded_indexes is not None else ""
            self.condition = (
                "Complete",
                "Completed",
                f"pod{'s' if len(names) > 1 else ''} {', '.join(names)} succeeded{policy}",
            )

    def _begin_attempt(self, pod: LocalPod) -> None:
        self.attempts += 1
        pod.attempts += 1
        total = self.plan.backoff_limit + 1
        self.run.sink.event(f"pod {pod.name}: attempt {pod.attempts} of at most {total}")
        pod.create()
        pod.stage = 0
        self._start_stage(pod)

    def _start_stage(self, pod: LocalPod) -> None:
        """Stage i < len(init) runs init container i; the last stage runs all containers."""
        if pod.stage < len(pod.init_names):
            pod.start(pod.init_names[pod.stage])
            return
        pod.phase = "Running"
        for name in pod.main_names:
            pod.start(name)

    def _step_pod(self, pod: LocalPod) -> ContainerFailure | None:
        init = pod.stage < len(pod.init_names)
        names = [pod.init_names[pod.stage]] if init else pod.main_names
        codes = {name: pod.processes[name].poll() for name in names}
        failed = [(name, code) for name, code in codes.items() if code not in (None, 0)]
        if failed and (pod.plan.restart_policy == "OnFailure" or None not in codes.values()):
            name, code = failed[0]
            pod.finish(name)
            return ContainerFailure(name, int(code or 0), init)
        if None in codes.values():
            return None
        for name in names:
            pod.finish(name)
        if init:
            pod.stage += 1
            self._start_stage(pod)
            return None
        pod.phase = "Succeeded"
        self.succeeded.add(pod.plan.index or 0)
        self.run.publish()
        return None

    def _failed(self, pod: LocalPod, failure: ContainerFailure) -> None:
        """podFailurePolicy first (its first matching rule wins), then backoffLimit."""
        rule = matching_rule(self.plan.exit_code_rules, failure)
        if rule is not None and rule.action == "FailJob":
            pod.phase = "Failed"
            self.run.publish()
            self.condition = (
                "Failed",
                "PodFailurePolicy",
                f"Container {failure.container} for pod {self.run.plan.namespace}/{pod.name} "
                f"failed with exit code {failure.code} matching FailJob rule at index "
                f"{rule.position}",
            )
            return
        counted = rule is None or rule.action == "Count"
        if counted:
            self.failures += 1
        limit = self.plan.backoff_limit
        if self.failures > limit:
            pod.phase = "Failed"
            self.run.publish()
            detail = (
                f"{self.failures} failed pod(s); last: pod {pod.name}: {failure}"
                if self.plan.indexed
                else f"pod {pod.name} failed {self.failures} time(s); last: {failure}"
            )
            self.condition = (
                "Failed",
                "BackoffLimitExceeded",
                f"Job has reached the specified backoff limit ({limit}): {detail}",
            )
            return
        used = (
            f"{self.failures} of backoffLimit {limit}"
            if counted or rule is None
            else f"not counted: podFailurePolicy rule {rule.position} Ignore"
        )
        self._retry(pod, failure, used)

    def _retry(self, pod: LocalPod, failure: ContainerFailure, used: str) -> None:
        self.retries += 1
        now = time.monotonic()
        if pod.plan.restart_policy == "OnFailure":
            self.attempts += 1
            pod.attempts += 1
            start_at = self.run.restart_backoff.exited((pod.name, failure.container), now)
            self.run.sink.event(
                f"pod {pod.name}: {failure}; restarting the container in place"
                f"{_after(start_at - now)} (restartPolicy OnFailure, retry {used})"
            )
            if start_at <= now:
                pod.start(failure.container)
            else:
                pod.restart_at[failure.container] = start_at
            return
        start_at = self.run.restart_backoff.exited((pod.name, ""), now)
        self.run.sink.event(
            f"pod {pod.name} failed: {failure}; creating a new pod{_after(start_at - now)} "
            f"(restartPolicy Never, retry {used})"
        )
        pod.stop(pod.plan.grace_seconds)
        pod.phase = "Failed"
        if start_at <= now:
            self._begin_attempt(pod)
        else:
            self.waiting[pod] = start_at


def _after(delay: float) -> str:
    return f" in {delay:g}s (back-off)" if delay > 0 else ""


def matching_rule(
    rules: tuple[ExitCodeRule, ...], failure: ContainerFailure
) -> ExitCodeRule | None:
    return next((rule for rule in rules if rule.matches(failure.container, failure.code)), None)
