"""The spec side of replica-typed jobs (TFJob, PyTorchJob): shared models, groups, checks.

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

from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, Field, ValidationError, field_validator

from components.core.errors import Problem, SpecError
from components.core.graph import Manifest
from components.core.models import OwnModel, problem_from_pydantic
from components.core.names import LABEL_MAX, STATEFULSET_MAX, job_name_problem
from components.core.pod_template import PodTemplate, check_pod_template

ASSETS_DIR = "/etc/trainjobs"


BOOTSTRAP = f"{ASSETS_DIR}/bootstrap.sh"


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
