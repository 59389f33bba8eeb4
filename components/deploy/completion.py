"""The completion watcher as a Pulumi dynamic resource: `pulumi up` lasts as long as the jobs.

One `JobCompletion` per stack sees every job of the stack through at once
(:func:`trainjobs.cluster.supervisor.see_all_through`: a thread per job), created after
every job's workloads. Per job it starts the run (the Jobs are created suspended), watches
it to its end, stops what is left per the cleanPodPolicy, records the run, and fails the
update with a diagnosis when a job failed. Its ``outcomes`` record how each job ended.

Why one per stack: the Python dynamic provider host (``pulumi/dynamic/__main__.py``) serves
every dynamic resource of a program from one process whose gRPC server has a 4-thread pool
(``futures.ThreadPoolExecutor(max_workers=4)``), and a watcher's ``create`` blocks for the
whole job. With a watcher per job, a stack of more than 4 jobs would be watched 4 at a time:
the fifth job's workers would keep their GPUs after it ended, and its timeout would start
late. One call watching every job needs one of those threads.

Lifecycle facts this relies on (checked against the Pulumi engine and the Python SDK's
dynamic provider host):

- A ``create`` that raises leaves no state, and an ``update`` that raises leaves the old
  state: the next `pulumi up` calls it again and it watches again. A job that ended
  meanwhile is seen at once (its Jobs' conditions, or its recorded run). That is how a
  timed-out or interrupted watch resumes, and why a failed job is reported again on every
  `pulumi up` until it is changed or ``failOnJobFailure`` is turned off.
- A new run of one job (a replaced workload: new uids, or a changed spec: a new run
  identity) is an in-place ``update``: it gets the old outcomes and watches only the jobs
  whose run changed, keeping the others' recorded outcomes.
- The engine never sends secrets to a dynamic provider (it does not accept them), so the
  kubeconfig arrives in plain text; ``additional_secret_outputs`` keeps it encrypted in the
  state, and the input itself is wrapped in ``Output.secret``.
- ``check`` and ``diff`` run during `pulumi preview`, which must work offline: they only
  compare inputs. Inputs not known yet (the uid of a Job about to be created) arrive as the
  SDK's UNKNOWN sentinel and differ from the old value, which shows the update to come.
- Python dynamic providers ignore ``customTimeouts`` and Ctrl-C: the provider host answers
  the engine's Cancel with nothing (``Cancel`` in ``pulumi/dynamic/__main__.py``), so a
  Ctrl-C waits for the watch to end, holding the stack's lock. The watcher has its own
  deadline (``timeout_seconds``), and ``mode`` ``start`` starts the runs and returns.
- The provider is pickled with dill. It is a class in an importable module, so it pickles by
  reference; it holds no state, and every client is imported and created inside methods.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import pulumi
import pulumi.dynamic
from pulumi.config import ConfigTypeError

from trainjobs.cluster.client import load_api_client
from trainjobs.cluster.outcome import Outcome
from trainjobs.cluster.supervisor import (
    STARTED,
    WatchOptions,
    connections_for,
    see_all_through,
)
from trainjobs.cluster.target import CLEAN_POD_POLICIES, WatchTarget
from trainjobs.cluster.watch import DEFAULT_TIMEOUT_SECONDS, PULUMI_RESUME_HINT
from trainjobs.core.durations import parse_duration
from trainjobs.core.errors import UserError
from trainjobs.core.phases import JobPhase

REPLACE_ON = ("context",)
"""Inputs that identify what is watched as a whole: another cluster is another set of runs."""

UPDATE_ON = ("jobs", "timeout_seconds", "fail_on_failure", "kubeconfig", "mode")
"""Inputs changed in place: a new run of a job (its target or uids changed) is watched by
``update``; the others only change how runs are watched."""

INPUTS = REPLACE_ON + UPDATE_ON

OUTCOME_FIELDS = (
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
    "notes",
)
"""What `outcomes` holds per job (`Outcome.to_outputs`)."""

_DEFAULTS: dict[str, Any] = {
    "jobs": [],
    "context": None,
    "timeout_seconds": DEFAULT_TIMEOUT_SECONDS,
    "fail_on_failure": True,
    "kubeconfig": None,
    "mode": "finish",
}

WatchMode = Literal["finish", "start"]
WATCH_MODES: tuple[WatchMode, ...] = ("finish", "start")
"""``trainjobs:watch``: ``finish`` sees every job through (`pulumi up` lasts as long as the
jobs), ``start`` starts each run and returns (`trainjobs watch JOB` follows a job later);
``false`` creates no watcher (true means finish)."""


class JobFailedError(Exception):
    """A job ended without success (or its workers could not be stopped): fails the update."""


# ---------------------------------------------------------------------------------------------
# Settings from the stack


@dataclass(frozen=True)
class WatchSettings:
    """How a stack wants its jobs watched, from Pulumi config.

    ``trainjobs:watch`` (default ``finish``; see :data:`WATCH_MODES`) says whether to
    create a `JobCompletion` at all, and whether it waits for the jobs' ends;
    ``trainjobs:watchTimeout`` (24h, 90m, 30s or seconds; default 24h);
    ``trainjobs:failOnJobFailure`` (default true); ``kubernetes:kubeconfig`` and
    ``kubernetes:context``, the same settings pulumi-kubernetes reads, so the watcher talks
    to the cluster the resources went to.
    """

    watch: bool = True
    mode: WatchMode = "finish"
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    fail_on_failure: bool = True
    kubeconfig: pulumi.Output[str] | None = None
    context: str | None = None

    @classmethod
    def from_config(cls, trainjobs: pulumi.Config, kubernetes: pulumi.Config) -> WatchSettings:
        timeout = trainjobs.get("watchTimeout")
        mode = _watch_mode(trainjobs.get("watch"))
        return cls(
            watch=mode is not None,
            mode=mode or "finish",
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


def _watch_mode(value: str | None) -> WatchMode | None:
    """``trainjobs:watch``: a mode of :data:`WATCH_MODES`, or None for false."""
    text = "finish" if value is None else value.strip().lower()
    if text in ("false", "no", "off"):
        return None
    if text == "true":
        return "finish"
    for mode in WATCH_MODES:
        if text == mode:
            return mode
    raise UserError(
        f"trainjobs:watch: {value!r} is not a watch mode; use finish (see every job "
        "through, the default), start (start the runs and return; follow a job with "
        "`trainjobs watch JOB`) or false (no watcher), e.g. "
        "`pulumi config set trainjobs:watch start`"
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
class WatchedJob:
    """One job for the watcher: its description and its workloads' uids (Pulumi outputs)."""

    target: WatchTarget
    uids: pulumi.Input[Mapping[str, str]]
    description: pulumi.Input[Mapping[str, Any]] | None = None
    """The target as the watcher gets it, with the Outputs the job was given in place
    (default: ``target``'s own)."""


class JobCompletion(pulumi.dynamic.Resource, module="trainjobs", name="JobCompletion"):
    """Sees every job of a stack through and records how each ended.

    Type token ``pulumi-python:dynamic/trainjobs:JobCompletion``. Create it with
    ``depends_on`` every job's workloads, so the watch starts once they exist.
    """

    outcomes: pulumi.Output[dict[str, dict[str, Any]]]
    """Per job (``namespace/name``): phase (Succeeded, Failed, Deleted or Suspended), reason
    (CompletionsReached, BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy, Deleted,
    WorkerFailed...), message, start and completion time, duration, pod counts, whether its
    workers were stopped, the diagnosis of a failure, and notes."""

    def __init__(
        self,
        name: str,
        jobs: Sequence[WatchedJob],
        settings: WatchSettings,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        cluster: pulumi.Input[str] | None = settings.kubeconfig
        context: pulumi.Input[str] | None = settings.context
        provider = kubernetes_provider(name, opts)
        if provider is not None:
            # A provider resource's state is its inputs (the engine's provider registry), so
            # its settings are the provider's output properties.
            cluster, context = (
                getattr(provider, "kubeconfig", None),
                getattr(provider, "context", None),
            )
        kubeconfig = None if cluster is None else pulumi.Output.secret(cluster)
        props: dict[str, Any] = {
            "jobs": [
                {
                    "target": job.target.to_dict() if job.description is None else job.description,
                    "uids": job.uids,
                }
                for job in jobs
            ],
            "context": context,
            "timeout_seconds": settings.timeout_seconds,
            "fail_on_failure": settings.fail_on_failure,
            "kubeconfig": kubeconfig,
            "mode": settings.mode,
            "outcomes": None,
        }
        secret = pulumi.ResourceOptions(additional_secret_outputs=["kubeconfig"])
        super().__init__(
            JobCompletionProvider(), name, props, pulumi.ResourceOptions.merge(opts, secret)
        )


def kubernetes_provider(
    name: str, opts: pulumi.ResourceOptions | None
) -> pulumi.ProviderResource | None:
    """The pulumi-kubernetes provider of watcher ``name``: the one ``opts`` give resources of
    package kubernetes (``provider``, else the ``providers`` entry), else the one of the
    objects it waits for (``depends_on``: its jobs' objects), else the parent's. The SDK
    picks a child's provider in that order of options (pulumi/resource.py
    ``Resource._get_providers``), and an object's provider is its job component's.

    The watcher must talk to the cluster its jobs' objects went to. pulumi-kubernetes reads
    the stack's ``kubernetes:kubeconfig`` and ``kubernetes:context`` for its default provider
    only: an explicit provider without them uses the ambient kubeconfig. Raises
    ``pulumi.RunError`` when the objects go to several clusters.
    """
    if opts is None:
        return None
    if isinstance(opts.provider, pulumi.ProviderResource) and opts.provider.package == "kubernetes":
        return opts.provider
    providers = opts.providers
    if isinstance(providers, Mapping):
        provider = providers.get("kubernetes")
        if provider is not None:
            return provider
    elif providers:
        for provider in providers:
            if provider.package == "kubernetes":
                return provider
    objects = opts.depends_on if isinstance(opts.depends_on, list) else [opts.depends_on]
    found = {
        provider
        for resource in objects
        if isinstance(resource, pulumi.Resource)
        for provider in [resource.get_provider("kubernetes::")]
        if provider is not None
    }
    if len(found) > 1:
        names = ", ".join(sorted(provider.pulumi_resource_name for provider in found))
        raise pulumi.RunError(
            f"JobCompletion {name}: its jobs' objects go to {len(found)} clusters (the "
            f"kubernetes providers {names}); a watcher talks to one: make a JobCompletion "
            "per provider"
        )
    if found:
        return found.pop()
    if opts.parent is not None:
        return opts.parent.get_provider("kubernetes::")
    return None


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

    jobs = inputs["jobs"]
    if not _unknown(jobs):
        if not isinstance(jobs, list):
            fail("jobs", "must be a list of {target, uids}")
        else:
            seen: set[str] = set()
            for index, job in enumerate(jobs):
                for problem in _job_problems(job, seen):
                    fail(f"jobs[{index}]", problem)
    for key in ("context", "kubeconfig"):
        value = inputs[key]
        if value is not None and not _unknown(value) and not isinstance(value, str):
            fail(key, f"must be a string, not {type(value).__name__}")
    timeout = inputs["timeout_seconds"]
    if not _unknown(timeout) and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        fail("timeout_seconds", f"must be a positive number of seconds, not {timeout!r}")
    if not _unknown(inputs["fail_on_failure"]) and not isinstance(inputs["fail_on_failure"], bool):
        fail("fail_on_failure", "must be true or false")
    if not _unknown(inputs["mode"]) and inputs["mode"] not in WATCH_MODES:
        fail("mode", f"must be one of {', '.join(WATCH_MODES)}, not {inputs['mode']!r}")
    return failures


def _job_problems(job: Any, seen: set[str]) -> list[str]:
    if _unknown(job):
        return []
    if not isinstance(job, Mapping) or _unknown(job.get("target")):
        return [] if isinstance(job, Mapping) else ["must be a mapping {target, uids}"]
    try:
        target = WatchTarget.from_dict(job["target"])
    except (KeyError, TypeError, ValueError, IndexError) as error:
        return [f"target is not a watch description ({type(error).__name__}: {error})"]
    problems = []
    if target.key in seen:
        problems.append(f"job {target.key} is watched twice")
    seen.add(target.key)
    if target.clean_pod_policy not in CLEAN_POD_POLICIES:
        problems.append(
            f"target.clean_pod_policy must be one of {', '.join(CLEAN_POD_POLICIES)}, not "
            f"{target.clean_pod_policy!r}"
        )
    uids = job.get("uids")
    if uids is not None and not _unknown(uids) and not isinstance(uids, Mapping):
        problems.append(f"uids must be a mapping of Job name to uid, not {type(uids).__name__}")
    return problems


def _jobs(inputs: Mapping[str, Any]) -> dict[str, tuple[WatchTarget, dict[str, str]]]:
    """The watched jobs by key, with the uids Pulumi knows (unknown ones left out)."""
    jobs = {}
    for job in inputs["jobs"]:
        target = WatchTarget.from_dict(job["target"])
        uids = {
            str(name): str(uid)
            for name, uid in (job.get("uids") or {}).items()
            if isinstance(uid, str) and not _unknown(uid)
        }
        jobs[target.key] = (target, uids)
    return jobs


class JobCompletionProvider(pulumi.dynamic.ResourceProvider):
    """The dynamic provider behind `JobCompletion`. Stateless; the cluster is only touched
    by ``create`` and ``update`` (the watch)."""

    def check(self, _olds: dict[str, Any], news: dict[str, Any]) -> pulumi.dynamic.CheckResult:
        """Validate and normalize the inputs, offline."""
        inputs = _inputs(news)
        return pulumi.dynamic.CheckResult(inputs, _check_failures(inputs))

    def diff(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.DiffResult:
        """Replace for another cluster (context); update in place for everything else (a
        new run of a job is watched by ``update``). Offline; ``__provider`` is ignored (it
        changes with the code, not with the jobs)."""
        old, new = _inputs(olds), _inputs(news)
        changed = [key for key in INPUTS if old[key] != new[key]]
        return pulumi.dynamic.DiffResult(
            changes=bool(changed),
            replaces=[key for key in changed if key in REPLACE_ON],
            stables=[],
            delete_before_replace=False,
        )

    def create(self, props: dict[str, Any]) -> pulumi.dynamic.CreateResult:
        """Watch every job to its end (see :func:`_watch`)."""
        inputs = _inputs(props)
        jobs = _jobs(inputs)
        outcomes = _watch(inputs, jobs, list(jobs))
        return pulumi.dynamic.CreateResult("trainjobs-completion", {**inputs, "outcomes": outcomes})

    def update(
        self, _id: str, olds: dict[str, Any], news: dict[str, Any]
    ) -> pulumi.dynamic.UpdateResult:
        """Watch the jobs whose run is new (another description, other workload uids, no
        recorded outcome); keep the others' outcomes. Jobs no longer in the stack drop out."""
        inputs = _inputs(news)
        jobs = _jobs(inputs)
        previous = _jobs(_inputs(olds)) if olds.get("jobs") else {}
        recorded = olds.get("outcomes") or {}
        if inputs["context"] != _inputs(olds)["context"]:
            previous = {}
        new_runs = [
            key
            for key, job in jobs.items()
            if previous.get(key) != job
            or not isinstance(recorded.get(key), Mapping)
            or (inputs["mode"] == "finish" and recorded[key].get("reason") == STARTED)
        ]
        outcomes = {key: recorded[key] for key in jobs if key not in new_runs}
        if new_runs:
            outcomes.update(_watch(inputs, jobs, new_runs))
        return pulumi.dynamic.UpdateResult({**inputs, "outcomes": outcomes})

    def read(self, id_: str, props: dict[str, Any]) -> pulumi.dynamic.ReadResult:
        """`pulumi refresh`: the recorded outcomes stay. Each describes how a watched run
        ended; the cluster's later state (Jobs removed by a TTL, a job stopped) is not how
        it ended. Offline."""
        return pulumi.dynamic.ReadResult(
            id_, {**_inputs(props), "outcomes": props.get("outcomes") or {}}
        )

    def delete(self, _id: str, _props: dict[str, Any]) -> None:
        """Nothing to do: the Jobs and the workers belong to their pulumi-kubernetes
        resources, which delete them; the watcher must never touch them."""


def _watch(
    inputs: Mapping[str, Any],
    jobs: Mapping[str, tuple[WatchTarget, dict[str, str]]],
    keys: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Watch the jobs ``keys`` at once to their ends and return their outcomes. Fails the
    update (after every job has ended or given up) when a job failed (unless
    ``fail_on_failure`` is off), when its workers could not be stopped, when its watch
    timed out (workers left running: the next `pulumi up` resumes) or could not reach the
    cluster."""
    targets = [jobs[key][0] for key in keys]
    api = load_api_client(
        inputs["kubeconfig"], inputs["context"], connections=connections_for(targets)
    )
    try:
        results = see_all_through(
            api,
            targets,
            uids={key: jobs[key][1] for key in keys},
            options=WatchOptions(
                timeout_seconds=float(inputs["timeout_seconds"]),
                report=_report,
                resume_hint=PULUMI_RESUME_HINT,
                start_only=inputs["mode"] == "start",
            ),
        )
    finally:
        api.close()
    problems: list[str] = []
    outcomes: dict[str, dict[str, Any]] = {}
    for key in keys:
        result = results[key]
        if not isinstance(result, Outcome):
            problems.append(str(result))
            continue
        outcomes[key] = result.to_outputs()
        if not result.workers_scaled_down:
            problems.append(f"{result.describe()}\nrun `pulumi up` again to retry")
        elif (
            not result.succeeded
            and result.status.phase != JobPhase.SUSPENDED
            and result.status.reason != STARTED
            and inputs["fail_on_failure"]
        ):
            problems.append(result.describe())
    if problems:
        raise JobFailedError("\n\n".join(problems))
    return outcomes
