"""ChainerJob spec models (kubeflow.org/v1alpha1) and their validation.

Two shapes are accepted so real-world specs run unchanged:

- the KEP-141 seed shape: ``spec.master`` and ``spec.worker``;
- the shape kubeflow/chainer-operator shipped: ``spec.master`` and ``spec.workerSets``
  (a map of worker-set name to ``{replicas, mpiConfig.slots, template}``).

Both are normalised into :class:`~trainjobs.kinds.mpi.plan.WorkerGroup` values, so the graph
builders see one shape.
Kubernetes PodTemplates pass through untouched apart from the documented defaults
(a single unnamed container is named ``chainer``). Workers keep their own command; a worker
that gives none runs the sleep loop KEP-141 describes (it is an exec target). Fields the
schema does not know are warnings, as chainer-operator's API server stored and ignored them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError, field_validator

from trainjobs.core import quantity
from trainjobs.core.bounds import INT32_MAX, replicas_problem, total_pods_problem
from trainjobs.core.documents import load_file
from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.job_document import metadata_problems, named
from trainjobs.core.models import ObjectMeta, problem_from_pydantic
from trainjobs.core.names import DNS1123_LABEL, JobNames, check_name_limits
from trainjobs.core.pod_template import GPU_RESOURCE, PodTemplate, check_pod_template
from trainjobs.core.set_paths import SetPaths, merge, replica, spec_of
from trainjobs.core.spec_model import SpecModel, unknown_fields
from trainjobs.kinds.mpi.flavour import MpiFlavour
from trainjobs.kinds.mpi.plan import Master, MpiPlan, WorkerGroup

API_VERSION = "kubeflow.org/v1alpha1"
KIND = "ChainerJob"
DEFAULT_CONTAINER_NAME = "chainer"


class MpiConfig(SpecModel):
    """Open MPI settings for one replica group."""

    slots: int | None = Field(
        default=None,
        gt=0,
        le=INT32_MAX,
        description="MPI slots (ranks) per pod. Default: the main container's nvidia.com/gpu "
        "limit, or 1 without GPUs.",
    )


_TEMPLATE_DESCRIPTION = (
    "A Kubernetes PodTemplateSpec, passed through. The main container is the one named "
    "'chainer', else the first; a single unnamed container is named 'chainer'."
)


class MasterSpec(SpecModel):
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


class WorkerSpec(SpecModel):
    """A set of identical worker pods (an apps/v1 StatefulSet of MPI exec targets)."""

    replicas: int = Field(default=1, gt=0, description="Number of worker pods. Default: 1.")
    mpi_config: MpiConfig = Field(default_factory=MpiConfig)
    template: PodTemplate = Field(description=_TEMPLATE_DESCRIPTION)

    @field_validator("replicas")
    @classmethod
    def _bounded(cls, value: int) -> int:
        too_many = replicas_problem(value, "")
        if too_many is not None:
            raise ValueError(too_many.message)
        return value


class ChainerJobSpec(SpecModel):
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


class ChainerJob(SpecModel):
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


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: the master's images (it is one pod: no count), the worker's and
    each worker set's count and images."""
    spec = spec_of(document)
    sets = spec.get("workerSets")
    return merge(
        replica("master", ("spec", "master"), spec.get("master"), counted=False),
        replica("worker", ("spec", "worker"), spec.get("worker")),
        *(
            replica(str(name), ("spec", "workerSets", name), value)
            for name, value in (sets.items() if isinstance(sets, dict) else ())
        ),
    )


def parse(document: dict[str, Any], source: str, namespace: str = "default") -> MpiPlan:
    """Validate a ChainerJob document and apply defaults. Raises SpecError listing every problem."""
    warnings: list[Problem] = []
    if "metadata" in document:
        document = {**document, "metadata": named(document["metadata"], warnings)}
    try:
        job = ChainerJob.model_validate(document)
    except ValidationError as error:
        found = [problem_from_pydantic(e) for e in error.errors()]
        raise SpecError(source, found, warnings) from None
    problems: list[Problem] = []
    warnings += unknown_fields(job.spec, "spec", f"{KIND} {API_VERSION}")
    warnings += [
        Problem(key, "not a field of a Kubernetes object: it has no effect here")
        for key in job.model_extra or {}
        if key != "status"
    ]
    plan = _plan(job, namespace, problems, warnings)
    if problems:
        raise SpecError(source, problems, warnings)
    assert plan is not None
    return plan


def load(path: str | Path, namespace: str = "default") -> MpiPlan:
    return parse(load_file(path), str(path), namespace)


def _plan(
    job: ChainerJob, default_namespace: str, problems: list[Problem], warnings: list[Problem]
) -> MpiPlan | None:
    names = JobNames(job.metadata.name)
    spec = job.spec
    if spec.worker is not None and spec.worker_sets is not None:
        problems.append(Problem("spec", "set either 'worker' or 'workerSets', not both"))
    groups: list[tuple[str, str, WorkerSpec]] = []
    if spec.worker is not None:
        groups.append((names.worker_statefulset(None), "spec.worker", spec.worker))
    for set_name, worker in (spec.worker_sets or {}).items():
        path = f"spec.workerSets.{set_name}"
        if not DNS1123_LABEL.fullmatch(set_name) or len(set_name) > 63:
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
    too_many = total_pods_problem([1] + [worker.replicas for _, _, worker in groups], "spec")
    if too_many is not None:
        problems.append(too_many)
    problems += metadata_problems(job.metadata)

    master_template, master_container = check_pod_template(
        spec.master.template, "spec.master.template", problems, warnings, DEFAULT_CONTAINER_NAME
    )
    workers = []
    for statefulset, path, worker in groups:
        template, container = check_pod_template(
            worker.template, f"{path}.template", problems, warnings, DEFAULT_CONTAINER_NAME
        )
        restart = template.get("spec", {}).get("restartPolicy")
        if restart not in (None, "Always"):
            warnings.append(
                Problem(
                    f"{path}.template.spec.restartPolicy",
                    f"{restart!r} runs as 'Always': workers are a StatefulSet, which restarts "
                    "them whatever their exit code, and they keep running until the master "
                    "ends",
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
    return MpiPlan(
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
        warnings=warnings,
        flavour=MpiFlavour(kind=KIND, local_launcher=True),
    )


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
    where = f"{path}.spec.containers[{index}].resources.limits.{GPU_RESOURCE}"
    if gpus is None or any(problem.path == where for problem in problems):
        return 1
    # The pod template's checks refused any value the API server would not take.
    return max(quantity.whole_units(gpus), 1)
