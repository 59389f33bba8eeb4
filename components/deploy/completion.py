"""The completion watcher as a Pulumi dynamic resource: `pulumi up` lasts as long as the job.

`JobCompletion` is created after a job's master Job and workers. Its ``create`` blocks in
`components.cluster.supervisor.run_watch` until the master Job ends, scales the workers to 0, and
fails the update with a diagnosis when the job failed. Its outputs record how the job
ended.

Lifecycle facts this relies on (checked against the Pulumi engine and the Python SDK's
dynamic provider host):

- A ``create`` that raises leaves no state: the engine drops the pending create and records
  nothing. The next `pulumi up` therefore calls ``create`` again, which lists the Job first
  and so also sees a Job that finished while nobody watched. That is how a timed-out or
  interrupted watch resumes. The same holds for a failed job with ``fail_on_failure``:
  every `pulumi up` reports the failure again until the Job is replaced or the setting is
  turned off.
- The engine never sends secrets to a dynamic provider (it does not accept them), so the
  kubeconfig arrives in plain text; ``additional_secret_outputs`` keeps it encrypted in the
  state, and the input itself is wrapped in ``Output.secret``.
- ``check`` and ``diff`` run during `pulumi preview`, which must work offline: they only
  compare inputs. During a preview an input that is not known yet (e.g. the uid of a Job
  that is about to be replaced) arrives as the SDK's UNKNOWN sentinel, differs from the old
  value, and so shows as a replacement, which is what will happen.
- Python dynamic providers ignore ``customTimeouts`` and Ctrl-C: the watcher has its own
  deadline (``timeout_seconds``).
- The provider is pickled with dill. It is a class in an importable module, so it pickles by
  reference; it holds no state, and every client is imported and created inside methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi.dynamic
from pulumi.config import ConfigTypeError

from components.cluster.client import load_api_client
from components.cluster.scaling import WORKER_KINDS, WorkerRef
from components.cluster.status import WORKER_FAILED, JobStatus
from components.cluster.supervisor import run_watch
from components.cluster.watch import (
    DEFAULT_TIMEOUT_SECONDS,
    PULUMI_RESUME_HINT,
    read_job,
)
from components.core.durations import parse_duration
from components.core.errors import UserError

REPLACE_ON = ("namespace", "job_name", "job_uid", "template_hash", "workers", "context")
"""Inputs that identify the watched run: a change means another Job to watch."""

UPDATE_ON = ("timeout_seconds", "fail_on_failure", "kubeconfig", "selector")
"""Inputs that only change how a run is watched: an in-place update, no cluster access.

``selector`` (the labels of a TFJob's or PyTorchJob's Jobs, so that a failed worker Job ends
the job) is derived from the job's name, so it only changes along with ``job_name``, which
replaces the watcher anyway, or when a stack made before it existed gets one: then the
recorded outcome of the finished run stays, rather than the run being watched (and a failure
reported) again."""

INPUTS = REPLACE_ON + UPDATE_ON

OUTPUTS = (
    "phase",
    "reason",
    "message",
    "start_time",
    "completion_time",
    "duration_seconds",
    "succeeded",
    "failed",
    "workers_scaled_down",
    "diagnosis",
)

_STATUS_OUTPUTS = OUTPUTS[:8]
"""The outputs `read` refreshes from the Job; the rest record what the watcher did."""

_DEFAULTS: dict[str, Any] = {
    "job_uid": None,
    "template_hash": None,
    "workers": [],
    "context": None,
    "timeout_seconds": DEFAULT_TIMEOUT_SECONDS,
    "fail_on_failure": True,
    "kubeconfig": None,
    "selector": None,
}


class JobFailedError(Exception):
    """The job ended without success (or its workers could not be stopped): fails the update."""


# ---------------------------------------------------------------------------------------------
# Settings from the stack


@dataclass(frozen=True)
class WatchSettings:
    """How a stack wants its jobs watched, from Pulumi config.

    ``trainjobs:watch`` (default true) says whether to create a `JobCompletion` at all;
    ``trainjobs:watchTimeout`` (24h, 90m, 30s or seconds; default 24h);
    ``trainjobs:failOnJobFailure`` (default true); ``kubernetes:kubeconfig`` and
    ``kubernetes:context``, the same settings pulumi-kubernetes reads, so the watcher talks
    to the cluster the resources went to.
    """

    watch: bool = True
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    fail_on_failure: bool = True
    kubeconfig: pulumi.Output[str] | None = None
    context: str | None = None

    @classmethod
    def from_config(cls, trainjobs: pulumi.Config, kubernetes: pulumi.Config) -> WatchSettings:
        timeout = trainjobs.get("watchTimeout")
        return cls(
            watch=_config_bool(trainjobs, "watch", default=True),
            timeout_seconds=(
                DEFAULT_TIMEOUT_SECONDS
                if timeout is None
                else parse_duration(
                    timeout,
                    key="trainjobs:watchTimeout",
                    fix="pulumi config set trainjobs:watchTimeout 24h",
                )
            ),
            fail_on_failure=_config_bool(trainjobs, "failOnJobFailure", default=True),
            kubeconfig=kubernetes.get_secret("kubeconfig"),
            context=kubernetes.get("context"),
        )


def _config_bool(config: pulumi.Config, key: str, *, default: bool) -> bool:
    try:
        value = config.get_bool(key)
    except ConfigTypeError as error:
        full = f"{config.name}:{key}"
        raise UserError(
            f"{full}: {error.value!r} is not a boolean; use true or false, "
            f"e.g. `pulumi config set {full} {str(default).lower()}`"
        ) from error
    return default if value is None else value


# ---------------------------------------------------------------------------------------------
# The resource


@dataclass(frozen=True)
class JobCompletionArgs:
    """Inputs of `JobCompletion`.

    ``job_uid`` (the master Job's ``metadata.uid``) or ``template_hash`` tie the watcher to
    one run: when the Job is replaced they change, and so the watcher is replaced and watches
    the new run. ``workers`` are names from the graph (deterministic), not outputs.
    ``selector`` matches the master Job and the worker Jobs (see `run_watch`): with
    it, a failed worker Job fails the whole job at once.
    """

    namespace: pulumi.Input[str]
    job_name: pulumi.Input[str]
    workers: Sequence[WorkerRef] = ()
    job_uid: pulumi.Input[str] | None = None
    template_hash: pulumi.Input[str] | None = None
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    fail_on_failure: bool = True
    kubeconfig: pulumi.Input[str] | None = None
    context: pulumi.Input[str] | None = None
    selector: pulumi.Input[str] | None = None

    @classmethod
    def from_settings(
        cls,
        settings: WatchSettings,
        *,
        namespace: pulumi.Input[str],
        job_name: pulumi.Input[str],
        workers: Sequence[WorkerRef] = (),
        job_uid: pulumi.Input[str] | None = None,
        template_hash: pulumi.Input[str] | None = None,
        selector: pulumi.Input[str] | None = None,
    ) -> JobCompletionArgs:
        return cls(
            namespace=namespace,
            job_name=job_name,
            workers=tuple(workers),
            job_uid=job_uid,
            template_hash=template_hash,
            timeout_seconds=settings.timeout_seconds,
            fail_on_failure=settings.fail_on_failure,
            kubeconfig=settings.kubeconfig,
            context=settings.context,
            selector=selector,
        )


class JobCompletion(pulumi.dynamic.Resource, module="trainjobs", name="JobCompletion"):
    """Waits for a master Job to end, scales its workers to 0, records the outcome.

    Type token ``pulumi-python:dynamic/trainjobs:JobCompletion``. Create it with
    ``depends_on`` the master Job and the workers, so the watch starts once they exist.
    """

    phase: pulumi.Output[str]
    """Succeeded, Failed or Deleted."""
    reason: pulumi.Output[str | None]
    """The terminal condition's reason: CompletionsReached, BackoffLimitExceeded,
    DeadlineExceeded, PodFailurePolicy, Deleted, WorkerFailed (a worker Job failed; the
    message names it and its own reason)..."""
    message: pulumi.Output[str | None]
    start_time: pulumi.Output[str | None]
    completion_time: pulumi.Output[str | None]
    duration_seconds: pulumi.Output[float | None]
    succeeded: pulumi.Output[int]
    """Pods that succeeded."""
    failed: pulumi.Output[int]
    """Pods that failed."""
    workers_scaled_down: pulumi.Output[bool]
    diagnosis: pulumi.Output[dict[str, Any] | None]
    """For a job that did not succeed: failed pods with exit codes, the master's log tail."""

    def __init__(
        self, name: str, args: JobCompletionArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        kubeconfig = None if args.kubeconfig is None else pulumi.Output.secret(args.kubeconfig)
        props: dict[str, Any] = {
            "namespace": args.namespace,
            "job_name": args.job_name,
            "job_uid": args.job_uid,
            "template_hash": args.template_hash,
            "workers": [worker.to_dict() for worker in args.workers],
            "context": args.context,
            "timeout_seconds": args.timeout_seconds,
            "fail_on_failure": args.fail_on_failure,
            "kubeconfig": kubeconfig,
            "selector": args.selector,
            **dict.fromkeys(OUTPUTS),
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(
            JobCompletionProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret)
        )


# ---------------------------------------------------------------------------------------------
# The provider


def _report(message: str) -> None:
    """Progress lines. In the provider process `pulumi.log` has no engine connection and
    writes to stderr, which the engine shows as the provider's diagnostics."""
    pulumi.log.info(message)


def _inputs(props: Mapping[str, Any]) -> dict[str, Any]:
    """The input properties with defaults filled in, nothing else (no outputs, no
    ``__provider``), so old state and new inputs compare like for like."""
    return {key: props.get(key, _DEFAULTS.get(key)) for key in INPUTS}


def _unknown(value: Any) -> bool:
    from pulumi.runtime import rpc

    return value == rpc.UNKNOWN


def _check_failures(inputs: Mapping[str, Any]) -> list[pulumi.dynamic.CheckFailure]:
    failures = []

    def fail(prop: str, reason: str) -> None:
        failures.append(pulumi.dynamic.CheckFailure(prop, reason))

    for key in ("namespace", "job_name"):
        value = inputs[key]
        if not _unknown(value) and (not isinstance(value, str) or not value):
            fail(key, f"must be a non-empty string, not {value!r}")
    for key in ("job_uid", "template_hash", "context", "kubeconfig", "selector"):
        value = inputs[key]
        if value is not None and not _unknown(value) and not isinstance(value, str):
            fail(key, f"must be a string, not {type(value).__name__}")
    workers = inputs["workers"]
    if not _unknown(workers):
        if not isinstance(workers, list):
            fail("workers", "must be a list of {kind, name}")
        else:
            for index, worker in enumerate(workers):
                if not isinstance(worker, Mapping):
                    fail(f"workers[{index}]", "must be a mapping {kind, name}")
                    continue
                kind, name = worker.get("kind"), worker.get("name")
                if not _unknown(kind) and kind not in WORKER_KINDS:
                    fail(f"workers[{index}].kind", f"must be StatefulSet or Job, not {kind!r}")
                if not _unknown(name) and (not isinstance(name, str) or not name):
                    fail(f"workers[{index}].name", f"must be a non-empty string, not {name!r}")
    timeout = inputs["timeout_seconds"]
    if not _unknown(timeout) and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        fail("timeout_seconds", f"must be a positive number of seconds, not {timeout!r}")
    if not _unknown(inputs["fail_on_failure"]) and not isinstance(inputs["fail_on_failure"], bool):
        fail("fail_on_failure", "must be true or false")
    return failures


def _resource_id(inputs: Mapping[str, Any], uid: str | None) -> str:
    return f"{inputs['namespace']}/{inputs['job_name']}" + (f"@{uid}" if uid else "")


class JobCompletionProvider(pulumi.dynamic.ResourceProvider):
    """The dynamic provider behind `JobCompletion`. Stateless; the cluster is only touched
    by ``create`` (the watch) and ``read`` (`pulumi refresh`)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        """Validate and normalize the inputs, offline."""
        inputs = _inputs(news)
        return pulumi.dynamic.CheckResult(inputs, _check_failures(inputs))

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for another run (job name, uid, template hash, workers, namespace,
        context); update in place for watch settings (and the selector, see `UPDATE_ON`).
        Offline; ``__provider`` is ignored (it changes with the code, not with the job)."""
        old, new = _inputs(olds), _inputs(news)
        changed = [key for key in INPUTS if old[key] != new[key]]
        return pulumi.dynamic.DiffResult(
            changes=bool(changed),
            replaces=[key for key in changed if key in REPLACE_ON],
            stables=[],
            delete_before_replace=False,
        )

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """Watch the Job to its end, scale the workers to 0; fail `pulumi up` with the
        diagnosis when the job did not succeed (unless ``fail_on_failure`` is off), or when
        the workers could not be stopped (the next `pulumi up` retries). A timeout raises
        `JobWatchTimeout`: workers left running, the next `pulumi up` resumes."""
        inputs = _inputs(props)
        api = load_api_client(inputs["kubeconfig"], inputs["context"])
        try:
            outcome = run_watch(
                api,
                inputs["namespace"],
                inputs["job_name"],
                [WorkerRef.from_dict(worker) for worker in inputs["workers"]],
                job_uid=inputs["job_uid"],
                selector=inputs["selector"],
                timeout_seconds=float(inputs["timeout_seconds"]),
                report=_report,
                resume_hint=PULUMI_RESUME_HINT,
            )
        finally:
            api.close()
        if not outcome.workers_scaled_down:
            raise JobFailedError(f"{outcome.describe()}\nrun `pulumi up` again to retry")
        if not outcome.succeeded and inputs["fail_on_failure"]:
            raise JobFailedError(outcome.describe())
        return pulumi.dynamic.CreateResult(
            _resource_id(inputs, outcome.status.uid), {**inputs, **outcome.to_outputs()}
        )

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """`pulumi refresh`: the Job's current status into the outputs. A Job that is gone
        (e.g. removed by ttlSecondsAfterFinished) or replaced leaves the recorded outcome as
        it was: it still describes the run this resource watched. So does a run ended by a
        failed worker Job: the watcher stopped the master Job, whose later state (no pods,
        or DeadlineExceeded) is not how the run ended; the cluster is not read."""
        inputs = _inputs(props)
        outs = {**inputs, **{key: props.get(key) for key in OUTPUTS}}
        if props.get("reason") == WORKER_FAILED:
            return pulumi.dynamic.ReadResult(id_, outs)
        api = load_api_client(inputs["kubeconfig"], inputs["context"])
        try:
            job, _ = read_job(api, inputs["namespace"], inputs["job_name"])
        finally:
            api.close()
        if job is not None and inputs["job_uid"] in (None, job.metadata.uid):
            status = JobStatus.from_job(job).to_outputs()
            outs.update({key: status[key] for key in _STATUS_OUTPUTS})
        return pulumi.dynamic.ReadResult(id_, outs)

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """Only watch settings changed (see `diff`): keep the recorded outcome."""
        return pulumi.dynamic.UpdateResult(
            {**_inputs(news), **{key: olds.get(key) for key in OUTPUTS}}
        )

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to do: the Job and the workers belong to their pulumi-kubernetes
        resources, which delete them; the watcher must never touch them."""
