"""ChainerJob spec models (kubeflow.org/v1alpha1), loading and validation.

Two shapes are accepted so real-world specs run unchanged:

- the KEP-141 seed shape: ``spec.master`` and ``spec.worker``;
- the shape kubeflow/chainer-operator shipped: ``spec.master`` and ``spec.workerSets``
  (a map of worker-set name to ``{replicas, mpiConfig.slots, template}``).

Both are normalised into :class:`WorkerGroup` values, so the graph builders see one shape.
Kubernetes PodTemplates pass through untouched apart from the documented defaults
(a single unnamed container is named ``chainer``).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic.alias_generators import to_camel

from components.errors import Problem, SpecError
from components.names import JobNames, check_name_limits

API_VERSION = "kubeflow.org/v1alpha1"
KIND = "ChainerJob"
DEFAULT_CONTAINER_NAME = "chainer"
GPU_RESOURCE = "nvidia.com/gpu"
# Volume names and env vars trainjobs adds; a user template must not reuse the volume names.
RESERVED_VOLUME_PREFIX = "trainjobs-"

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


class OwnModel(BaseModel):
    """Base for trainjobs' own sections: camelCase on the wire, unknown fields are errors."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class MpiConfig(OwnModel):
    """Open MPI settings for one replica group."""

    slots: int | None = Field(
        default=None,
        gt=0,
        description="MPI slots (ranks) per pod. Default: the main container's nvidia.com/gpu "
        "limit, or 1 without GPUs.",
    )


PodTemplate = dict[str, Any]
_TEMPLATE_DESCRIPTION = (
    "A Kubernetes PodTemplateSpec, passed through. The main container is the one named "
    "'chainer', else the first; a single unnamed container is named 'chainer'."
)


class MasterSpec(OwnModel):
    """The master: a batch/v1 Job whose pod runs mpiexec (rank 0 lives here)."""

    replicas: int | None = Field(
        default=None, description="Must be 1 if given: a ChainerJob has exactly one master."
    )
    backoff_limit: int | None = Field(
        default=None,
        ge=0,
        description="Retries of the master Job (batch/v1 backoffLimit). Default: Kubernetes' 6.",
    )
    active_deadline_seconds: int | None = Field(
        default=None,
        gt=0,
        description="Wall-clock limit of the master Job; on expiry it fails with "
        "DeadlineExceeded and the workers are scaled to 0.",
    )
    mpi_config: MpiConfig = Field(default_factory=MpiConfig)
    template: PodTemplate = Field(description=_TEMPLATE_DESCRIPTION)

    @field_validator("replicas")
    @classmethod
    def _exactly_one_master(cls, value: int | None) -> int | None:
        if value is not None and value != 1:
            raise ValueError(f"must be 1 (got {value}); a ChainerJob has one master: omit it")
        return value


class WorkerSpec(OwnModel):
    """A set of identical worker pods (an apps/v1 StatefulSet of MPI exec targets)."""

    replicas: int = Field(default=1, gt=0, description="Number of worker pods. Default: 1.")
    mpi_config: MpiConfig = Field(default_factory=MpiConfig)
    template: PodTemplate = Field(description=_TEMPLATE_DESCRIPTION)


class ChainerJobSpec(OwnModel):
    """What to run: one master and zero or more workers, wired together by Open MPI."""

    backend: str = Field(
        default="mpi", description="Communication backend. Only 'mpi' is supported."
    )
    master: MasterSpec
    worker: WorkerSpec | None = Field(
        default=None, description="The seed shape: one group of workers, named '<job>-worker'."
    )
    worker_sets: dict[str, WorkerSpec] | None = Field(
        default=None,
        description="The chainer-operator shape: worker-set name -> workers, each a "
        "StatefulSet named '<job>-workerset-<name>'.",
    )

    @field_validator("backend")
    @classmethod
    def _mpi_only(cls, value: str) -> str:
        if value == "gloo":
            raise ValueError("'gloo' is not supported yet; use 'mpi' (or omit backend)")
        if value != "mpi":
            raise ValueError(f"unknown backend {value!r}; the only supported backend is 'mpi'")
        return value


class ObjectMeta(BaseModel):
    """The job's metadata. Kubernetes owns this section, so extra keys are kept, not rejected."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(description="The job name; every object name is derived from it.")
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ChainerJob(OwnModel):
    """A kubeflow.org/v1alpha1 ChainerJob."""

    api_version: str = Field(alias="apiVersion")
    kind: str
    metadata: ObjectMeta
    spec: ChainerJobSpec

    @field_validator("api_version")
    @classmethod
    def _known_api_version(cls, value: str) -> str:
        if value != API_VERSION:
            raise ValueError(f"must be {API_VERSION!r} (got {value!r})")
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value != KIND:
            raise ValueError(f"must be {KIND!r} (got {value!r})")
        return value


@dataclass(frozen=True)
class WorkerGroup:
    """One normalised worker set: a StatefulSet of ``replicas`` pods with ``slots`` each."""

    statefulset: str
    replicas: int
    slots: int
    template: PodTemplate
    container: str

    @property
    def pods(self) -> list[str]:
        return [f"{self.statefulset}-{index}" for index in range(self.replicas)]


@dataclass(frozen=True)
class Master:
    """The normalised master replica."""

    slots: int
    template: PodTemplate
    container: str
    backoff_limit: int | None
    active_deadline_seconds: int | None


@dataclass(frozen=True)
class ChainerJobPlan:
    """A validated job with every default applied: what the graph builder consumes."""

    names: JobNames
    namespace: str
    labels: dict[str, str]
    master: Master
    workers: list[WorkerGroup]

    @property
    def worker_pods(self) -> list[str]:
        return [pod for group in self.workers for pod in group.pods]


def load_file(path: str | Path) -> dict[str, Any]:
    """Read one YAML document; unreadable or non-mapping files are user errors."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(source, [Problem("", f"cannot read file: {error.strerror}")]) from None
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem("", f"not valid YAML: {error}")]) from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise SpecError(
            source, [Problem("", "expected exactly one YAML mapping (one job per file)")]
        )
    return documents[0]


def parse(document: dict[str, Any], source: str, namespace: str = "default") -> ChainerJobPlan:
    """Validate a ChainerJob document and apply defaults. Raises SpecError listing every problem."""
    try:
        job = ChainerJob.model_validate(document)
    except ValidationError as error:
        raise SpecError(source, [problem_from_pydantic(e) for e in error.errors()]) from None
    problems: list[Problem] = []
    plan = _plan(job, namespace, problems)
    if problems:
        raise SpecError(source, problems)
    assert plan is not None
    return plan


def load(path: str | Path, namespace: str = "default") -> ChainerJobPlan:
    return parse(load_file(path), str(path), namespace)


def _plan(
    job: ChainerJob, default_namespace: str, problems: list[Problem]
) -> ChainerJobPlan | None:
    names = JobNames(job.metadata.name)
    spec = job.spec
    if spec.worker is not None and spec.worker_sets is not None:
        problems.append(Problem("spec", "set either 'worker' or 'workerSets', not both"))
    groups: list[tuple[str, str, WorkerSpec]] = []
    if spec.worker is not None:
        groups.append((names.worker_statefulset(None), "spec.worker", spec.worker))
    for set_name, worker in (spec.worker_sets or {}).items():
        path = f"spec.workerSets.{set_name}"
        if not _DNS1123_LABEL.fullmatch(set_name) or len(set_name) > 63:
            problems.append(
                Problem(
                    path,
                    f"worker-set name {set_name!r} must be a DNS-1123 label "
                    "(lowercase letters, digits and '-', starting and ending alphanumeric)",
                )
            )
            continue
        groups.append((names.worker_statefulset(set_name), path, worker))

    problems += check_name_limits(names, [(ss, path) for ss, path, _ in groups])

    master_template, master_container = check_pod_template(
        spec.master.template, "spec.master.template", problems
    )
    workers = []
    for statefulset, path, worker in groups:
        template, container = check_pod_template(worker.template, f"{path}.template", problems)
        restart = template.get("spec", {}).get("restartPolicy")
        if restart not in (None, "Always"):
            problems.append(
                Problem(
                    f"{path}.template.spec.restartPolicy",
                    f"workers run in a StatefulSet, which requires 'Always' (got {restart!r}); "
                    "remove the field",
                )
            )
        slots = _slots(worker.mpi_config, template, container, f"{path}.template", problems)
        workers.append(WorkerGroup(statefulset, worker.replicas, slots, template, container))
    master_restart = master_template.get("spec", {}).get("restartPolicy")
    if master_restart not in (None, "Never", "OnFailure"):
        problems.append(
            Problem(
                "spec.master.template.spec.restartPolicy",
                f"the master is a batch/v1 Job, which allows 'Never' or 'OnFailure' "
                f"(got {master_restart!r}); omit it for 'Never'",
            )
        )
    master_slots = _slots(
        spec.master.mpi_config, master_template, master_container, "spec.master.template", problems
    )
    if problems:
        return None
    return ChainerJobPlan(
        names=names,
        namespace=job.metadata.namespace or default_namespace,
        labels=dict(job.metadata.labels),
        master=Master(
            slots=master_slots,
            template=master_template,
            container=master_container,
            backoff_limit=spec.master.backoff_limit,
            active_deadline_seconds=spec.master.active_deadline_seconds,
        ),
        workers=workers,
    )


def check_pod_template(
    template: PodTemplate,
    path: str,
    problems: list[Problem],
    default_container: str = DEFAULT_CONTAINER_NAME,
) -> tuple[PodTemplate, str]:
    """Check the parts of a PodTemplate trainjobs relies on and name a lone unnamed container.

    Returns a deep copy (the caller's spec is never mutated) and the main container's name:
    the one named ``default_container`` if any, else the first.
    """
    template = copy.deepcopy(template)
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        problems.append(Problem(f"{path}.spec", "a pod spec with 'containers' is required"))
        return template, default_container
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(
            Problem(f"{path}.spec.containers", "at least one container with an image is required")
        )
        return template, default_container
    if len(containers) == 1 and isinstance(containers[0], dict) and not containers[0].get("name"):
        containers[0]["name"] = default_container
    for index, container in enumerate(containers):
        where = f"{path}.spec.containers[{index}]"
        if not isinstance(container, dict):
            problems.append(Problem(where, "must be a mapping with 'name' and 'image'"))
            continue
        if not container.get("name"):
            problems.append(
                Problem(f"{where}.name", "required when a pod has more than one container")
            )
        if not container.get("image"):
            problems.append(Problem(f"{where}.image", "required: the container image to run"))
    for index, volume in enumerate(pod_spec.get("volumes") or []):
        name = volume.get("name", "") if isinstance(volume, dict) else ""
        if name.startswith(RESERVED_VOLUME_PREFIX):
            problems.append(
                Problem(
                    f"{path}.spec.volumes[{index}].name",
                    f"{name!r} uses the prefix {RESERVED_VOLUME_PREFIX!r} reserved for "
                    "trainjobs' own volumes; rename it",
                )
            )
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    main = default_container if default_container in names else names[0] if names else ""
    return template, main or default_container


def main_container(template: PodTemplate, name: str) -> dict[str, Any]:
    """The container trainjobs wires into (see :func:`check_pod_template`)."""
    return next(c for c in template["spec"]["containers"] if c.get("name") == name)


def _slots(
    mpi: MpiConfig, template: PodTemplate, container: str, path: str, problems: list[Problem]
) -> int:
    """Explicit mpiConfig.slots wins; else the main container's GPU limit; else 1."""
    if mpi.slots is not None:
        return mpi.slots
    containers = template.get("spec", {}).get("containers") or []
    index = next(
        (i for i, c in enumerate(containers) if isinstance(c, dict) and c.get("name") == container),
        None,
    )
    if index is None:  # already reported by check_pod_template
        return 1
    limits = (containers[index].get("resources") or {}).get("limits") or {}
    gpus = limits.get(GPU_RESOURCE)
    if gpus is None:
        return 1
    try:
        count = int(str(gpus))
    except ValueError:
        count = -1
    if count < 0:
        problems.append(
            Problem(
                f"{path}.spec.containers[{index}].resources.limits.{GPU_RESOURCE}",
                f"must be a whole number of GPUs (got {gpus!r})",
            )
        )
        return 1
    return max(count, 1)


_PYDANTIC_MESSAGES = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field; check the spelling (allowed fields are in crds/)",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "string_type": "must be a string",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "bool_type": "must be true or false",
}


def problem_from_pydantic(error: Any) -> Problem:
    path = _dotted(error["loc"])
    kind = error["type"]
    got = error.get("input")
    if kind == "value_error":
        message = str(error["ctx"]["error"])
    elif kind == "greater_than":
        message = f"must be greater than {error['ctx']['gt']} (got {got!r})"
    elif kind == "greater_than_equal":
        message = f"must be at least {error['ctx']['ge']} (got {got!r})"
    elif kind == "less_than_equal":
        message = f"must be at most {error['ctx']['le']} (got {got!r})"
    elif kind == "extra_forbidden":
        message = f"unknown field {str(error['loc'][-1])!r}; check the spelling (see crds/)"
    elif kind in _PYDANTIC_MESSAGES:
        message = _PYDANTIC_MESSAGES[kind]
        if kind != "missing":
            message += f" (got {got!r})"
    else:
        message = error["msg"]
    return Problem(path, message)


def _dotted(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path
