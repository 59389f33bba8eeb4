"""PyTorchJob spec models (the proposal's v1alpha1 and Kubeflow v1) and their validation.

Every process gets the environment torch.distributed's `env://` initialisation reads:
MASTER_ADDR (the master's own headless Service, `<job>-master-0`), MASTER_PORT (default
23456), WORLD_SIZE (master + workers), RANK (master 0, workers 1..n) and PYTHONUNBUFFERED=1.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, field_validator

from components.core.errors import Problem, SpecError
from components.core.models import ObjectMeta, OwnModel
from components.core.pod_template import PodTemplate
from components.core.replica_spec import (
    ReplicaJobPlan,
    ReplicaSpecV1,
    RunPolicy,
    check_names,
    require_commands,
    v1_groups,
    v1alpha1_groups,
    validate,
)
from components.kinds.pytorch.env import BOOTSTRAP_SCRIPT

KIND = "PyTorchJob"
DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"
DEFAULT_CONTAINER = "pytorch"
BACKENDS = ("gloo", "nccl", "mpi")
V1_TYPES = {"Master": "master", "Worker": "worker"}
V1ALPHA1_TYPES = {"MASTER": "master", "WORKER": "worker"}


class PyTorchReplicaSpecV1Alpha1(OwnModel):
    """One entry of the proposal's `replicaSpecs` list."""

    replicas: int = Field(default=1, gt=0, description="Number of pods. Default: 1.")
    replica_type: str = Field(alias="ReplicaType", description="MASTER or WORKER.")
    template: PodTemplate = Field(description="A Kubernetes PodTemplateSpec, passed through.")

    @field_validator("replica_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in V1ALPHA1_TYPES:
            raise ValueError(f"unknown replica type {value!r}; use MASTER or WORKER")
        return value


class PyTorchJobSpecV1Alpha1(OwnModel):
    backend: str = Field(default="gloo", description="gloo, nccl or mpi. Default: gloo.")
    master_port: int = Field(default=DEFAULT_PORT, ge=1, le=65535, description="Default: 23456.")
    replica_specs: list[PyTorchReplicaSpecV1Alpha1] = Field(min_length=1)

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        if value not in BACKENDS:
            raise ValueError(f"unknown backend {value!r}; use one of {', '.join(BACKENDS)}")
        return value


class PyTorchJobSpecV1(OwnModel):
    pytorch_replica_specs: dict[str, ReplicaSpecV1] = Field(min_length=1)
    run_policy: RunPolicy = Field(default_factory=RunPolicy)

    @field_validator("pytorch_replica_specs")
    @classmethod
    def _known_types(cls, value: dict[str, ReplicaSpecV1]) -> dict[str, ReplicaSpecV1]:
        unknown = [key for key in value if key not in V1_TYPES]
        if unknown:
            raise ValueError(f"unknown replica type {unknown[0]!r}; use Master or Worker")
        return value


class PyTorchJobV1Alpha1(OwnModel):
    api_version: Literal["kubeflow.org/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["PyTorchJob"]
    metadata: ObjectMeta
    spec: PyTorchJobSpecV1Alpha1


class PyTorchJobV1(OwnModel):
    api_version: Literal["kubeflow.org/v1"] = Field(alias="apiVersion")
    kind: Literal["PyTorchJob"]
    metadata: ObjectMeta
    spec: PyTorchJobSpecV1


MODELS: dict[str, type[BaseModel]] = {
    "kubeflow.org/v1alpha1": PyTorchJobV1Alpha1,
    "kubeflow.org/v1": PyTorchJobV1,
}


def parse(document: dict[str, Any], source: str, namespace: str = "default") -> ReplicaJobPlan:
    job = validate(document, source, KIND, MODELS)
    problems: list[Problem] = []
    name = job.metadata.name
    backoff_limit = deadline = None
    port = DEFAULT_PORT
    if isinstance(job, PyTorchJobV1):
        specs = job.spec.pytorch_replica_specs
        groups = v1_groups(
            name, specs, "pytorchReplicaSpecs", V1_TYPES, DEFAULT_CONTAINER, problems
        )
        backoff_limit = job.spec.run_policy.backoff_limit
        deadline = job.spec.run_policy.active_deadline_seconds
        master_path = "spec.pytorchReplicaSpecs.Master"  # the missing key
    else:
        assert isinstance(job, PyTorchJobV1Alpha1)
        port = job.spec.master_port
        entries = [(r.replica_type, r.replicas, r.template) for r in job.spec.replica_specs]
        groups = v1alpha1_groups(
            name, entries, "ReplicaType", V1ALPHA1_TYPES, DEFAULT_CONTAINER, problems
        )
        master_path = "spec.replicaSpecs"
    masters = [g for g in groups if g.type == "master"]
    if not masters:
        problems.append(Problem(master_path, "a PyTorchJob needs exactly one MASTER replica"))
    elif masters[0].replicas != 1:
        problems.append(
            Problem(
                f"{masters[0].source_path}.replicas",
                f"must be 1 for the master (got {masters[0].replicas}); add workers instead",
            )
        )
    require_commands(groups, problems, "RANK")
    master_service = f"{name}-master-0"
    problems += check_names(name, groups, [master_service])
    if problems:
        raise SpecError(source, problems)
    world_size = sum(g.replicas for g in groups)
    static = [
        {"name": "MASTER_ADDR", "value": master_service},
        {"name": "MASTER_PORT", "value": str(port)},
        {"name": "WORLD_SIZE", "value": str(world_size)},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    return ReplicaJobPlan(
        kind=KIND,
        job=name,
        namespace=job.metadata.namespace or namespace,
        labels=dict(job.metadata.labels),
        groups=groups,
        port=port,
        port_name=PORT_NAME,
        backoff_limit=backoff_limit,
        active_deadline_seconds=deadline,
        bootstrap=BOOTSTRAP_SCRIPT,
        static_env={g.type: static for g in groups},
        master_service=master_service,
    )
