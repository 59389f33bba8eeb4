"""The spec side of replica-typed jobs (TFJob, PyTorchJob): shared models, policies, the plan.

Every released Kubeflow version of these kinds describes a job the same way underneath: replica
types (chief, master, ps, worker, evaluator), each with a count, a pod template and a restart
policy, plus run-wide policies. :mod:`trainjobs.kinds.replica.parser` reads each kind's
versions into the :class:`ReplicaJobPlan` defined here, with the version's defaults and
environment already decided; :mod:`trainjobs.core.replica_graph` turns the plan into
Kubernetes objects.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from trainjobs.core.bounds import replicas_problem, total_pods_problem
from trainjobs.core.errors import Problem
from trainjobs.core.gang import (
    DEFAULT_SCHEDULER_PLUGINS_NAME,
    VOLCANO,
    Gang,
    sum_requests,
)
from trainjobs.core.graph import Manifest
from trainjobs.core.jobset import pod_name_problem
from trainjobs.core.labels import OperatorLabels
from trainjobs.core.names import LABEL_MAX, STATEFULSET_MAX, job_name_problem
from trainjobs.core.pod_template import PodTemplate, check_pod_template, default_field
from trainjobs.core.spec_model import SpecModel

RESTART_POLICIES = ("Always", "OnFailure", "Never", "ExitCode")
CLEAN_POD_POLICIES = ("None", "Running", "All")
if TYPE_CHECKING:
    from pulumi_kubernetes.core.v1 import PodTemplateSpecArgs

    # What a program may write, so that a type checker flags a misspelled policy.
    RestartPolicy = Literal["Always", "OnFailure", "Never", "ExitCode"]
    CleanPodPolicy = Literal["None", "Running", "All"]
    # A pod template as pulumi-kubernetes types it is read as its mapping (SpecModel).
    Template = dict[str, Any] | PodTemplateSpecArgs
else:
    Template = dict[str, Any]
    # Any string at run time: a spec read from YAML gets the kinds' own messages for a bad
    # one ("must be one of ..."), as Kubeflow's validation words them, not pydantic's.
    RestartPolicy = str
    CleanPodPolicy = str
PERMANENT_EXIT_CODES = list(range(1, 128))
"""Kubeflow's ExitCode policy: 1-127 are the program's own errors, retrying cannot help; 128
and above (a signal: 137 killed, 143 terminated) are retried (training-operator 1.5+,
``IsRetryableExitCode``: ``exitCode >= 128``)."""


class ReplicaSpec(SpecModel):
    """A value of ``tfReplicaSpecs`` / ``pytorchReplicaSpecs`` (v1alpha2 onwards)."""

    replicas: int | None = None
    """Number of pods. Default: 1."""
    restart_policy: RestartPolicy | None = None
    """Always, OnFailure, Never or ExitCode (1-127 fail the job, others are retried)."""
    template: Template | None = None
    """The pods' template: command, args and image are never rewritten."""


class ReplicaSpecBeforeV1(ReplicaSpec):
    """The same, as Go's encoding/json read it before ``v1``: field names in any case."""

    case_insensitive = True


class SchedulingPolicy(SpecModel):
    """``runPolicy.schedulingPolicy``: what a gang scheduler needs to place the job at once."""

    min_available: int | None = None
    """Pods that must be placed together. Default: every pod of the job."""
    queue: str | None = None
    """The scheduler's queue (Volcano)."""
    min_resources: dict[str, Any] | None = None
    """Resources the group needs. Default: the sum over minAvailable pods."""
    priority_class: str | None = None
    """PriorityClass of the group."""
    schedule_timeout_seconds: int | None = None
    """How long the group may wait to be placed (scheduler-plugins)."""


class RunPolicy(SpecModel):
    """``runPolicy`` (training-operator 1.3+; tf-operator 1.1 as an inlined section)."""

    clean_pod_policy: CleanPodPolicy | None = None
    """What happens to pods when the job ends: None, Running or All."""
    ttl_seconds_after_finished: int | None = None
    """Seconds after the job ends before its objects are removed."""
    active_deadline_seconds: int | None = None
    """Wall-clock limit of the job; on expiry it fails."""
    backoff_limit: int | None = None
    """Retries of a replica before the job fails."""
    scheduling_policy: SchedulingPolicy | None = None
    """Gang scheduling: what a scheduler needs to place the job at once."""
    suspend: bool | None = None
    """True: no pods run (running ones are deleted); false resumes the job."""
    managed_by: str | None = None
    """The controller of the job (Kueue's MultiKueue); informational here."""


class ReplicatedJobSpec(SpecModel):
    """The ``v1`` spec fields TFJob and PyTorchJob share (Kubeflow's common RunPolicy).

    training-operator's ``TFJobSpec`` and ``PyTorchJobSpec`` both embed ``RunPolicy`` and a
    map of replica type to ``ReplicaSpec`` (``pkg/apis/kubeflow.org/v1/common_types.go``);
    the kinds' models add their replica map and their own policies. Every field defaults to
    None (not set).
    """

    run_policy: RunPolicy | None = None
    """Run-wide policies (training-operator 1.3+). Default: None (the operator's defaults)."""
    # tf-operator 1.0 and pytorch-operator (Kubeflow 1.0-1.3) read these at the top of spec;
    # training-operator reads them in runPolicy.
    clean_pod_policy: CleanPodPolicy | None = None
    """Early v1: runPolicy.cleanPodPolicy. Default: None."""
    ttl_seconds_after_finished: int | None = None
    """Early v1: runPolicy.ttlSecondsAfterFinished. Default: None."""
    active_deadline_seconds: int | None = None
    """Early v1: runPolicy.activeDeadlineSeconds. Default: None."""
    backoff_limit: int | None = None
    """Early v1: runPolicy.backoffLimit. Default: None."""


@dataclass(frozen=True)
class Restart:
    """How a replica's pods are restarted: Kubeflow's policy mapped onto batch/v1.

    ``pod`` is the pod's restartPolicy (``Always`` means a StatefulSet: batch/v1 Jobs allow
    only OnFailure and Never). ``permanent_exit_codes``: a podFailurePolicy fails the replica
    at once on 1-127 (ExitCode). ``backoff_limit``: None leaves Kubernetes' default (6).
    """

    policy: str
    pod: Literal["Always", "OnFailure", "Never"]
    permanent_exit_codes: bool = False
    backoff_limit: int | None = None


def restart_for(policy: str, backoff_limit: int | None) -> Restart:
    """Kubeflow's replica restartPolicy (v1alpha2 onwards) as batch/v1 semantics.

    - ExitCode: pod Never; exit codes 1-127 fail the replica at once, others are retried
      (a new pod each time) up to backoffLimit.
    - OnFailure: the container restarts in place; restarts count against backoffLimit.
    - Never: Kubeflow never replaces a failed pod, so one failure fails the job unless the
      spec sets backoffLimit, which then allows that many new pods.
    - Always: a one-pod StatefulSet, restarted whatever its exit code, as the kubelet does
      for Kubeflow's pod; it never completes on its own.
    """
    if policy == "ExitCode":
        return Restart(policy, "Never", permanent_exit_codes=True, backoff_limit=backoff_limit)
    if policy == "Never":
        return Restart(policy, "Never", backoff_limit=0 if backoff_limit is None else backoff_limit)
    if policy == "Always":
        return Restart(policy, "Always")
    return Restart(policy, "OnFailure", backoff_limit=backoff_limit)


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica type of a job, validated, with the version's defaults applied."""

    type: str
    """Lowercase replica type as TF_CONFIG and the labels spell it (chief, worker, ps...)."""
    replicas: int
    template: PodTemplate
    container: str
    """The default container (``tensorflow``, ``pytorch``): it gets the port and the env."""
    restart: Restart
    source_path: str
    port: int

    def name(self, job: str, index: int) -> str:
        """Pod, Service and workload name of one replica, as Kubeflow names its pod."""
        return f"{job}-{self.type}-{index}"


@dataclass(frozen=True)
class RunSettings:
    """The run-wide policies, wherever the version put them."""

    clean_pod_policy: str
    ttl_seconds_after_finished: int | None = None
    active_deadline_seconds: int | None = None
    backoff_limit: int | None = None
    scheduling: SchedulingPolicy | None = None
    suspend: bool = False
    scheduler_name: str | None = None
    """v1alpha1's ``spec.schedulerName``: the operator set it on every pod."""


@dataclass(frozen=True)
class Success:
    """Which replicas decide that the job succeeded: all of them, or any one (elastic)."""

    type: str
    indexes: tuple[int, ...]
    any: bool = False
    min_members: int | None = None
    """Elastic: the replicas torchrun's group needs (elasticPolicy.minReplicas); with fewer
    left, the group cannot go on."""


EnvTarget = Literal["default", "first-default", "all"]
"""Which containers get the operator's env: every container named like the default one, the
first such container only, or every container of the pod."""


MasterRole = Callable[[Collection[str], str, int], bool]
"""A controller's ``IsMasterRole``: whether the pod of (replica type, index) gets
``training.kubeflow.org/job-role: master``, given the job's replica types."""


def leader_else_worker_0(types: Collection[str], replica_type: str, index: int) -> bool:
    """TFJob's and PyTorchJob's: the chief or master, else worker 0 (JAXJob's ``index == 0``
    is the same, its only type being Worker)."""
    if "chief" in types or "master" in types:
        return replica_type in ("chief", "master")
    return replica_type == "worker" and index == 0


def master_only(types: Collection[str], replica_type: str, index: int) -> bool:
    """XGBoostJob's and PaddleJob's: the Master only; a job without one has no such pod."""
    return replica_type == "master"


@dataclass(frozen=True)
class ReplicaJobPlan:
    """A validated TFJob or PyTorchJob, everything about its version already decided."""

    kind: str
    api_version: str
    job: str
    namespace: str
    labels: dict[str, str]
    groups: list[ReplicaGroup]
    run: RunSettings
    success: Success
    env: dict[tuple[str, int], list[Manifest]]
    """The operator's env for each (replica type, index), in the operator's order."""
    env_target: EnvTarget
    assets: dict[str, str] = field(default_factory=dict)
    """Files of the assets ConfigMap, when a replica needs one (TFJob v1alpha1's default PS)."""
    gang: Gang | None = None
    """The PodGroup every pod joins, when the job is gang-scheduled."""
    operator_labels: OperatorLabels = field(default_factory=OperatorLabels)
    """The pod labels the spec version's operators wrote besides ``training.kubeflow.org/*``."""
    master_role: MasterRole = leader_else_worker_0
    warnings: list[Problem] = field(default_factory=list)

    @property
    def groups_by_type(self) -> dict[str, ReplicaGroup]:
        return {group.type: group for group in self.groups}

    @property
    def total_replicas(self) -> int:
        return sum(g.replicas for g in self.groups)


def check_replica_template(
    template: Any,
    path: str,
    default_container: str,
    problems: list[Problem],
    warnings: list[Problem],
    *,
    first_if_unnamed: bool = False,
) -> tuple[PodTemplate, str]:
    """A replica's pod template and its main container: containers with names and images, one
    named like the operator's default container (every released operator refuses a job
    without it). ``first_if_unnamed``: the v1alpha1 designs, whose examples name containers
    otherwise, use the first container instead, with a warning."""
    if not isinstance(template, dict):
        problems.append(Problem(path, "required: the replica's pod template"))
        return {}, default_container
    containers = (template.get("spec") or {}).get("containers")
    if isinstance(containers, list):
        for index, container in enumerate(containers):
            if isinstance(container, dict) and not container.get("name"):
                problems.append(
                    Problem(
                        f"{path}.spec.containers[{index}].name",
                        f"required by the API server; name the main container "
                        f"{default_container!r}",
                    )
                )
    checked, _ = check_pod_template(template, path, problems, warnings, default_container)
    containers = (checked.get("spec") or {}).get("containers") or []
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    if not containers or not all(names) or default_container in names:
        return checked, default_container
    if first_if_unnamed:
        warnings.append(
            Problem(
                f"{path}.spec.containers",
                f"no container is named {default_container!r}: the released operator refused "
                f"this, the design this version follows did not; the first container, "
                f"{names[0]!r}, gets the job's environment",
            )
        )
        return checked, str(names[0])
    problems.append(
        Problem(
            f"{path}.spec.containers",
            f"must have a container named {default_container!r} (got {names}): Kubeflow "
            "puts the job's port and environment on it; rename the main container",
        )
    )
    return checked, default_container


def container_port(template: PodTemplate, container: str, port_name: str, default: int) -> int:
    """The container port named ``port_name`` on the default container (Kubeflow's custom
    port), else ``default``; the port is added to the container when missing, as the
    operator's defaulting does."""
    main = next(c for c in template["spec"]["containers"] if c.get("name") == container)
    ports = default_field(main, "ports", [])
    for port in ports:
        if isinstance(port, dict) and port.get("name") == port_name:
            return int(port.get("containerPort", default))
    ports.append({"name": port_name, "containerPort": default})
    return default


def replica_group(
    *,
    replica_type: str,
    replicas: int,
    template: Any,
    restart: Restart,
    source_path: str,
    default_container: str,
    port_name: str,
    default_port: int,
    problems: list[Problem],
    warnings: list[Problem],
    first_if_unnamed: bool = False,
) -> ReplicaGroup:
    """One replica type, its template checked and given the operator's defaults."""
    checked, container = check_replica_template(
        template,
        f"{source_path}.template",
        default_container,
        problems,
        warnings,
        first_if_unnamed=first_if_unnamed,
    )
    port = default_port
    if not any(p.path.startswith(f"{source_path}.template") for p in problems):
        checked = copy.deepcopy(checked)
        port = container_port(checked, container, port_name, default_port)
    return ReplicaGroup(
        type=replica_type,
        replicas=replicas,
        template=checked,
        container=container,
        restart=restart,
        source_path=source_path,
        port=port,
    )


RUN_POLICY_FIELDS = (
    "clean_pod_policy",
    "ttl_seconds_after_finished",
    "active_deadline_seconds",
    "backoff_limit",
)


def run_settings(spec: SpecModel, default_clean_pod_policy: str, problems: list[Problem]):
    """The run policies wherever the version put them: at the top of ``spec`` (every version
    before training-operator 1.3 read them there) or in ``runPolicy``; both is ambiguous."""
    values = {key: getattr(spec, key, None) for key in RUN_POLICY_FIELDS}
    values = {key: value for key, value in values.items() if value is not None}
    path = "spec"
    run_policy = getattr(spec, "run_policy", None)
    if run_policy is not None:
        nested = {k: v for k, v in run_policy.model_dump().items() if v is not None}
        for key in sorted(set(values) & set(nested)):
            wire = RunPolicy.model_fields[key].alias
            problems.append(
                Problem(
                    f"spec.{wire}",
                    f"also set as spec.runPolicy.{wire}; keep one (runPolicy is where "
                    "training-operator 1.3+ reads it)",
                )
            )
        if not values:
            path = "spec.runPolicy"
        values = {**values, **nested, "scheduling_policy": run_policy.scheduling_policy}
    return check_run_policy(values, path, default_clean_pod_policy, problems)


def v1alpha1_restart(
    template: Any, path: str, warnings: list[Problem]
) -> Literal["OnFailure", "Never"]:
    """v1alpha1: the pod template's restartPolicy is the replica's. Unset (the API server's
    Always) runs as OnFailure: those operators judged a replica by its container's exit code,
    so its first exit 0 finished it and a failure was retried."""
    written = (
        ((template or {}).get("spec") or {}).get("restartPolicy")
        if isinstance(template, dict)
        else None
    )
    if written == "Always":
        warnings.append(
            Problem(
                f"{path}.template.spec.restartPolicy",
                "'Always' runs as 'OnFailure': the v1alpha1 operator finished a replica at "
                "its first exit 0 and retried failures, which is what OnFailure does",
            )
        )
    return "Never" if written == "Never" else "OnFailure"


def env_override_warnings(
    groups: list[ReplicaGroup],
    env: dict[tuple[str, int], list[Manifest]],
    target: EnvTarget,
) -> list[Problem]:
    """A warning for each env var the spec sets that the operator's own value replaces."""
    warnings = []
    for group in groups:
        names = {item["name"] for item in env.get((group.type, 0), [])}
        containers = (group.template.get("spec") or {}).get("containers") or []
        for index, container in enumerate(containers):
            if target != "all" and container.get("name") != group.container:
                continue
            for position, item in enumerate(container.get("env") or []):
                if isinstance(item, dict) and item.get("name") in names:
                    warnings.append(
                        Problem(
                            f"{group.source_path}.template.spec.containers[{index}]"
                            f".env[{position}]",
                            f"{item['name']} is set by Kubeflow's operator, whose value "
                            "replaces this one",
                        )
                    )
            if target == "first-default":
                break
    return warnings


def deciding_restart(
    group: ReplicaGroup, success: Success, warnings: list[Problem]
) -> ReplicaGroup:
    """A replica that decides the job's success cannot be restarted whatever its exit code
    (restartPolicy Always): under Kubeflow such a job never succeeds. It runs as OnFailure,
    so that its success ends the job; the spec is told so."""
    if group.type != success.type or group.restart.pod != "Always":
        return group
    warnings.append(
        Problem(
            f"{group.source_path}.restartPolicy",
            f"'Always' restarts the {group.type} even after it succeeds, so the job could never "
            "end: it runs as 'OnFailure', which restarts it only when it fails",
        )
    )
    return dataclasses.replace(
        group, restart=Restart("Always", "OnFailure", backoff_limit=group.restart.backoff_limit)
    )


def gang_for(
    groups: list[ReplicaGroup],
    run: RunSettings,
    gang_scheduler: str | None,
    gang_scheduler_name: str | None,
    warnings: list[Problem],
) -> Gang | None:
    """The job's PodGroup terms, when a gang scheduler places it (see :mod:`..gang`): the
    stack's ``trainjobs:gangScheduler``, else Volcano for pods that name it."""
    scheduler = gang_scheduler
    scheduling = run.scheduling
    names = {(g.template.get("spec") or {}).get("schedulerName") for g in groups}
    names.add(run.scheduler_name)
    if scheduler is None and VOLCANO in names:
        scheduler = VOLCANO
    if scheduler is None:
        if scheduling is not None:
            warnings.append(
                Problem(
                    "spec.runPolicy.schedulingPolicy",
                    "no gang scheduler places this job, so its pods are scheduled one by one: "
                    "set the stack's trainjobs:gangScheduler (volcano, scheduler-plugins) or the "
                    "pods' schedulerName: volcano",
                )
            )
        return None
    policy = scheduling or SchedulingPolicy()
    pods = [g.template for g in groups for _ in range(g.replicas)]
    members = policy.min_available or len(pods)
    return Gang(
        scheduler=scheduler,  # type: ignore[arg-type]
        scheduler_name=VOLCANO
        if scheduler == VOLCANO
        else gang_scheduler_name or DEFAULT_SCHEDULER_PLUGINS_NAME,
        min_member=members,
        queue=policy.queue,
        priority_class=policy.priority_class,
        min_resources=policy.min_resources or sum_requests(pods[:members]) or None,
        schedule_timeout_seconds=policy.schedule_timeout_seconds,
    )


def template_restart_warning(group: ReplicaGroup) -> Problem | None:
    """The pod template's own restartPolicy, when the replica's replaces it (v1alpha2 on)."""
    written = (group.template.get("spec") or {}).get("restartPolicy")
    if written is None or written == group.restart.pod:
        return None
    return Problem(
        f"{group.source_path}.template.spec.restartPolicy",
        f"{written!r} is replaced by the replica's restartPolicy {group.restart.policy!r}, "
        "as Kubeflow's operator replaces it",
    )


def check_run_policy(
    values: dict[str, Any], path: str, default_clean_pod_policy: str, problems: list[Problem]
) -> RunSettings:
    """Run-wide settings from a dict of the fields that were given, at ``path``."""
    clean = values.get("clean_pod_policy")
    if clean is not None and clean not in CLEAN_POD_POLICIES:
        problems.append(
            Problem(
                f"{path}.cleanPodPolicy",
                f"must be one of {', '.join(CLEAN_POD_POLICIES)} (got {clean!r})",
            )
        )
    for key, wire, minimum in (
        ("ttl_seconds_after_finished", "ttlSecondsAfterFinished", 0),
        ("active_deadline_seconds", "activeDeadlineSeconds", 1),
        ("backoff_limit", "backoffLimit", 0),
    ):
        value = values.get(key)
        if value is not None and value < minimum:
            problems.append(Problem(f"{path}.{wire}", f"must be at least {minimum} (got {value})"))
    return RunSettings(
        clean_pod_policy=clean if clean in CLEAN_POD_POLICIES else default_clean_pod_policy,
        ttl_seconds_after_finished=values.get("ttl_seconds_after_finished"),
        active_deadline_seconds=values.get("active_deadline_seconds"),
        backoff_limit=values.get("backoff_limit"),
        scheduling=values.get("scheduling_policy"),
        suspend=bool(values.get("suspend")),
        scheduler_name=values.get("scheduler_name"),
    )


def check_restart_policy(
    value: str | None, default: str, path: str, problems: list[Problem]
) -> str:
    if value is None:
        return default
    if value not in RESTART_POLICIES:
        problems.append(
            Problem(path, f"must be one of {', '.join(RESTART_POLICIES)} (got {value!r})")
        )
        return default
    return value


REPLICA_SPEC_FIELDS = ("replicas", "restartPolicy", "template")


def misplaced_replica_fields(
    replica_specs: dict[str, Any], path: str, example: str
) -> Problem | None:
    """A replica spec's own fields written straight under the replica map at ``path``: the
    replica type key above them is missing (a spec cut from a larger one, or indented once
    too little). One problem naming the fields and the missing key, e.g. ``Worker:``."""
    known = {name.lower() for name in REPLICA_SPEC_FIELDS}
    fields = [str(key) for key in replica_specs if str(key).lower() in known]
    if not fields:
        return None
    if len(fields) == 1:
        what = f"{fields[0]!r} is a replica spec's field, not a replica type: put it"
    else:
        listed = ", ".join(repr(name) for name in fields[:-1]) + f" and {fields[-1]!r}"
        what = f"{listed} are a replica spec's fields, not replica types: put them"
    return Problem(path, f"{what} under a replica type such as {example}")


def check_replicas(value: int | None, path: str, problems: list[Problem]) -> int:
    """A replica count: 1 when omitted, as every version defaults it."""
    if value is None:
        return 1
    if value < 1:
        problems.append(
            Problem(path, f"must be at least 1 (got {value}); remove the replica type instead")
        )
        return 1
    too_many = replicas_problem(value, path)
    if too_many is not None:
        problems.append(too_many)
        return 1
    return value


def check_total_pods(groups: list[ReplicaGroup], path: str, problems: list[Problem]) -> None:
    """Replica types whose pods together exceed the bound (before per-pod work is done)."""
    too_many = total_pods_problem([group.replicas for group in groups], path)
    if too_many is not None:
        problems.append(too_many)


def check_names(job: str, groups: list[ReplicaGroup], *, queued: bool = False) -> list[Problem]:
    """The job name and every name derived from it must fit Kubernetes' limits (and, for a
    Kueue-queued job, the JobSet webhook's rule for its pods' names)."""
    invalid = job_name_problem(job)
    if invalid:
        return [invalid]
    problems = []
    if queued:
        too_long = pod_name_problem(job, [(group.type, group.replicas) for group in groups])
        if too_long is not None:
            return [too_long]
    for group in groups:
        longest = group.name(job, group.replicas - 1)
        limit = STATEFULSET_MAX if group.restart.pod == "Always" else LABEL_MAX
        if len(longest) > limit:
            problems.append(
                Problem(
                    group.source_path,
                    f"the derived replica name {longest!r} is {len(longest)} characters; "
                    f"Kubernetes allows {limit} for its Service and workload; shorten "
                    "metadata.name",
                )
            )
    return problems
