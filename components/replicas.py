"""Replica-typed jobs (TFJob, PyTorchJob): the plan and graph they share.

Each replica type becomes one workload, named `<job>-<type>`:

- chief/master, workers and evaluators are **Indexed batch/v1 Jobs**. Training processes
  run to completion, and a StatefulSet would restart a worker that exits 0 (it forces
  restartPolicy Always). An Indexed Job with a `subdomain` gives each pod the stable
  hostname `<job>-<type>-<index>` under the job's headless Service, which is exactly the
  Kubeflow host naming;
- parameter servers never exit on their own, so they are a StatefulSet (`<job>-ps-<i>`),
  scaled to 0 by the completion watcher when the job ends.

A bootstrap script in the assets ConfigMap turns the pod's replica type and index (from the
downward API) into the framework's environment (TF_CONFIG, RANK) and execs the command.

Exit codes follow the TFJob design: 1-127 are permanent (the job fails at once, through a
batch/v1 podFailurePolicy rule), anything else (e.g. 137, killed) is retried up to
backoffLimit. The job succeeds when the chief/master succeeds; with no chief, when worker 0
does (batch/v1 successPolicy, Kubernetes 1.31+).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from components.errors import Problem, SpecError
from components.graph import REPLICA_TYPE, Graph, Manifest, common_labels, metadata, with_env
from components.names import LABEL_MAX, STATEFULSET_MAX, job_name_problem
from components.specs import (
    OwnModel,
    PodTemplate,
    check_pod_template,
    main_container,
    problem_from_pydantic,
)

ASSETS_DIR = "/etc/trainjobs"
BOOTSTRAP = f"{ASSETS_DIR}/bootstrap.sh"
ASSETS_VOLUME = "trainjobs-assets"
PERMANENT_EXIT_CODES = list(range(1, 128))
# Where a pod learns its index: Indexed Jobs annotate it, StatefulSets (1.28+) label it.
INDEX_FROM_JOB = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
INDEX_FROM_STATEFULSET = "metadata.labels['apps.kubernetes.io/pod-index']"


class RunPolicy(OwnModel):
    """Kubeflow v1 `runPolicy`: limits that apply to the whole job."""

    backoff_limit: int | None = Field(
        default=None, ge=0, description="Retries for retryable failures. Default: 6."
    )
    active_deadline_seconds: int | None = Field(
        default=None, gt=0, description="Wall-clock limit; on expiry the job fails."
    )


class ReplicaSpecV1(OwnModel):
    """Kubeflow v1 replica spec (a value of `tfReplicaSpecs` / `pytorchReplicaSpecs`)."""

    replicas: int = Field(default=1, gt=0, description="Number of pods. Default: 1.")
    restart_policy: str | None = Field(
        default=None,
        description="Only 'ExitCode' (the default): exit codes 1-127 fail the job, others "
        "are retried.",
    )
    template: PodTemplate = Field(description="A Kubernetes PodTemplateSpec, passed through.")

    @field_validator("restart_policy")
    @classmethod
    def _exit_code_only(cls, value: str | None) -> str | None:
        if value not in (None, "ExitCode"):
            raise ValueError(
                f"{value!r} is not supported; trainjobs applies 'ExitCode' (exit codes 1-127 "
                "fail the job, others are retried): omit the field"
            )
        return value


@dataclass(frozen=True)
class ReplicaGroup:
    """One replica type of a job, normalised."""

    type: str
    """Lowercase Kubeflow replica type: chief, master, worker, ps or evaluator."""
    replicas: int
    template: PodTemplate
    container: str
    source_path: str
    workload: str

    @property
    def long_running(self) -> bool:
        return self.type == "ps"

    @property
    def hostnames(self) -> list[str]:
        return [f"{self.workload}-{index}" for index in range(self.replicas)]


@dataclass(frozen=True)
class ReplicaJobPlan:
    """A validated TFJob or PyTorchJob, framework specifics already resolved."""

    kind: str
    job: str
    namespace: str
    labels: dict[str, str]
    groups: list[ReplicaGroup]
    port: int
    port_name: str
    backoff_limit: int | None
    active_deadline_seconds: int | None
    bootstrap: str | None
    """The bootstrap script, or None when no per-replica environment is needed."""
    static_env: dict[str, list[Manifest]] = field(default_factory=dict)
    """Env vars per replica type that do not depend on the index."""
    master_service: str | None = None
    """A Service of its own for the master (PyTorch's MASTER_ADDR), or None."""

    @property
    def deciding_group(self) -> ReplicaGroup:
        """The replica whose success ends the job: chief/master, else the workers (index 0)."""
        for kind in ("chief", "master", "worker"):
            for group in self.groups:
                if group.type == kind:
                    return group
        return self.groups[0]


def group(
    job: str,
    replica_type: str,
    replicas: int,
    template: PodTemplate,
    path: str,
    default_container: str,
    problems: list[Problem],
) -> ReplicaGroup:
    template, container = check_pod_template(
        template, f"{path}.template", problems, default_container
    )
    restart = (template.get("spec") or {}).get("restartPolicy")
    allowed = ("Always",) if replica_type == "ps" else ("Never",)
    if restart not in (None, *allowed):
        problems.append(
            Problem(
                f"{path}.template.spec.restartPolicy",
                f"must be {allowed[0]!r} for {replica_type} replicas (got {restart!r}); "
                "omit it: trainjobs sets it",
            )
        )
    return ReplicaGroup(replica_type, replicas, template, container, path, f"{job}-{replica_type}")


def validate(
    document: dict[str, Any], source: str, kind: str, models: dict[str, type[BaseModel]]
) -> BaseModel:
    """Pick the model for the document's apiVersion and validate it (SpecError otherwise)."""
    model = models.get(document.get("apiVersion", ""))
    if model is None:
        got = document.get("apiVersion")
        raise SpecError(
            source,
            [
                Problem(
                    "apiVersion", f"must be one of {', '.join(models)} for a {kind} (got {got!r})"
                )
            ],
        )
    try:
        return model.model_validate(document)
    except ValidationError as error:
        raise SpecError(source, [problem_from_pydantic(e) for e in error.errors()]) from None


def v1_groups(
    job: str,
    replica_specs: dict[str, ReplicaSpecV1],
    field: str,
    types: dict[str, str],
    default_container: str,
    problems: list[Problem],
) -> list[ReplicaGroup]:
    """Kubeflow v1: a map of replica type (`Worker`...) to replica spec."""
    return [
        group(
            job,
            types[key],
            spec.replicas,
            spec.template,
            f"spec.{field}.{key}",
            default_container,
            problems,
        )
        for key, spec in replica_specs.items()
    ]


def v1alpha1_groups(
    job: str,
    entries: list[tuple[str, int, PodTemplate]],
    type_field: str,
    types: dict[str, str],
    default_container: str,
    problems: list[Problem],
) -> list[ReplicaGroup]:
    """The design docs' v1alpha1: a list of (replica type, replicas, template) entries, each
    type at most once."""
    groups: list[ReplicaGroup] = []
    seen: dict[str, int] = {}
    for index, (replica_type, replicas, template) in enumerate(entries):
        path = f"spec.replicaSpecs[{index}]"
        if replica_type in seen:
            problems.append(
                Problem(
                    f"{path}.{type_field}",
                    f"{replica_type} is already defined by "
                    f"spec.replicaSpecs[{seen[replica_type]}]; merge them into one entry",
                )
            )
            continue
        seen[replica_type] = index
        groups.append(
            group(job, types[replica_type], replicas, template, path, default_container, problems)
        )
    return groups


def check_names(job: str, groups: list[ReplicaGroup], extra_names: list[str]) -> list[Problem]:
    """The job name and every name derived from it must fit Kubernetes' limits."""
    invalid = job_name_problem(job)
    if invalid:
        return [invalid]
    problems = []
    for replica_group in groups:
        kind = "StatefulSet" if replica_group.long_running else "Job"
        limit = STATEFULSET_MAX if replica_group.long_running else LABEL_MAX
        longest = replica_group.hostnames[-1]
        if len(replica_group.workload) > limit:
            problems.append(
                Problem(
                    replica_group.source_path,
                    f"the derived {kind} name {replica_group.workload!r} is "
                    f"{len(replica_group.workload)} characters; Kubernetes allows {limit}; "
                    "shorten metadata.name",
                )
            )
        elif len(longest) > LABEL_MAX:
            problems.append(
                Problem(
                    replica_group.source_path,
                    f"the derived pod hostname {longest!r} is {len(longest)} characters; "
                    f"Kubernetes allows {LABEL_MAX}; shorten metadata.name or reduce replicas",
                )
            )
    for name in extra_names:
        if len(name) > LABEL_MAX:
            problems.append(
                Problem("metadata.name", f"the derived Service name {name!r} exceeds {LABEL_MAX}")
            )
    return problems


def require_commands(groups: list[ReplicaGroup], problems: list[Problem], env_names: str) -> None:
    """The bootstrap script wraps the command, so the image's entrypoint must be spelled out."""
    for replica_group in groups:
        containers = (replica_group.template.get("spec") or {}).get("containers") or []
        for index, container in enumerate(containers):
            is_main = (
                isinstance(container, dict) and container.get("name") == replica_group.container
            )
            if is_main and not container.get("command"):
                problems.append(
                    Problem(
                        f"{replica_group.source_path}.template.spec.containers[{index}].command",
                        f"required: trainjobs starts the process through {BOOTSTRAP}, which "
                        f"sets {env_names} for the replica's index; give the command the "
                        "image would run",
                    )
                )


def build_replica_graph(plan: ReplicaJobPlan) -> Graph:
    """ConfigMap -> headless Service(s) -> parameter servers, workers, master (in that order)."""
    graph = Graph(job=plan.job, kind=plan.kind, namespace=plan.namespace)

    def labels(component: str) -> dict[str, str]:
        return common_labels(plan.job, plan.kind, component, plan.labels)

    config_map = graph.add(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(f"{plan.job}-assets", plan.namespace, labels("assets")),
            "data": {"bootstrap.sh": plan.bootstrap} if plan.bootstrap else {},
        }
    )
    services = [graph.add(_headless_service(plan.job, plan, labels("network"), None), config_map)]
    if plan.master_service:
        services.append(
            graph.add(
                _headless_service(plan.master_service, plan, labels("network"), "master"),
                config_map,
            )
        )
    deciding = plan.deciding_group
    order = sorted(plan.groups, key=lambda g: (g is deciding, not g.long_running, g.type))
    workloads = []
    for replica_group in order:
        manifest = (
            _statefulset(plan, replica_group, labels(replica_group.type))
            if replica_group.long_running
            else _indexed_job(
                plan, replica_group, labels(replica_group.type), replica_group is deciding
            )
        )
        after = workloads if replica_group is deciding else []
        workloads.append(graph.add(manifest, config_map, *services, *after))
    return graph


def _headless_service(
    name: str, plan: ReplicaJobPlan, labels: dict[str, str], replica_type: str | None
) -> Manifest:
    selector = {"training.kubeflow.org/job-name": plan.job}
    if replica_type:
        selector[REPLICA_TYPE] = replica_type
    spec: Manifest = {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": selector,
        "ports": [{"name": plan.port_name, "port": plan.port, "targetPort": plan.port}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, plan.namespace, labels),
        "spec": spec,
    }


def _pod_template(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str], index_from: str
) -> Manifest:
    template = copy.deepcopy(replica_group.template)
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels, REPLICA_TYPE: replica_group.type}
    pod = template["spec"]
    pod["subdomain"] = plan.job
    pod.setdefault("automountServiceAccountToken", False)
    container = main_container(template, replica_group.container)
    env: list[Manifest] = [
        {"name": "TRAINJOBS_REPLICA_TYPE", "value": replica_group.type},
        {
            "name": "TRAINJOBS_REPLICA_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": index_from}},
        },
        *plan.static_env.get(replica_group.type, []),
    ]
    with_env(container, env)
    ports = container.setdefault("ports", [])
    if not any(port.get("name") == plan.port_name for port in ports):
        ports.append({"name": plan.port_name, "containerPort": plan.port, "protocol": "TCP"})
    if plan.bootstrap:
        container["command"] = ["sh", BOOTSTRAP, *container["command"], *container.pop("args", [])]
        container["volumeMounts"] = [
            *(container.get("volumeMounts") or []),
            {"name": ASSETS_VOLUME, "mountPath": ASSETS_DIR, "readOnly": True},
        ]
        pod["volumes"] = [
            *(pod.get("volumes") or []),
            {
                "name": ASSETS_VOLUME,
                "configMap": {"name": f"{plan.job}-assets", "defaultMode": 0o555},
            },
        ]
    return template


def _indexed_job(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str], deciding: bool
) -> Manifest:
    template = _pod_template(plan, replica_group, labels, INDEX_FROM_JOB)
    template["spec"]["restartPolicy"] = "Never"  # podFailurePolicy requires it
    spec: Manifest = {
        "completionMode": "Indexed",
        "completions": replica_group.replicas,
        "parallelism": replica_group.replicas,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": replica_group.container,
                        "operator": "In",
                        "values": PERMANENT_EXIT_CODES,
                    },
                },
                # Evictions and preemptions are not the program's fault: retry without
                # counting them against backoffLimit.
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        },
        "template": template,
    }
    if deciding and replica_group.type == "worker" and replica_group.replicas > 1:
        spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    if plan.backoff_limit is not None:
        spec["backoffLimit"] = plan.backoff_limit
    if plan.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = plan.active_deadline_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(replica_group.workload, plan.namespace, labels),
        "spec": spec,
    }


def _statefulset(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str]
) -> Manifest:
    template = _pod_template(plan, replica_group, labels, INDEX_FROM_STATEFULSET)
    selector = {"training.kubeflow.org/job-name": plan.job, REPLICA_TYPE: replica_group.type}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(replica_group.workload, plan.namespace, labels),
        "spec": {
            "serviceName": plan.job,
            "replicas": replica_group.replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector},
            "template": template,
        },
    }


def index_check_script() -> str:
    """Shell lines shared by bootstrap scripts: validate the index the downward API gave."""
    return (
        'index="${TRAINJOBS_REPLICA_INDEX:?the pod index is set by the downward API}"\n'
        'case "$index" in\n'
        "    ''|*[!0-9]*) echo \"bootstrap.sh: replica index '$index' is not a number\" >&2; "
        "exit 2 ;;\n"
        "esac\n"
    )
