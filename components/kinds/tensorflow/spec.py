"""TFJob spec models (the design doc's v1alpha1 and Kubeflow v1) and their validation.

Every process gets TF_CONFIG exactly as Kubeflow sets it::

    {"cluster": {"<type>": ["<job>-<type>-<i>.<job>.<ns>.svc:<port>", ...]},
     "task": {"type": "<type>", "index": <i>}, "environment": "cloud"}

with lowercase types. Evaluators get a task but are not part of the training cluster (as in
Kubeflow: TensorFlow rejects a cluster that lists them). Single-replica jobs get no TF_CONFIG.
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
from components.kinds.tensorflow.tf_config import bootstrap, cluster_spec

KIND = "TFJob"
DEFAULT_PORT = 2222
PORT_NAME = "tfjob-port"
DEFAULT_CONTAINER = "tensorflow"
# v1 map keys and v1alpha1 enum values -> the lowercase type TF_CONFIG uses.
V1_TYPES = {
    "Chief": "chief",
    "Master": "master",
    "PS": "ps",
    "Worker": "worker",
    "Evaluator": "evaluator",
}
V1ALPHA1_TYPES = {"MASTER": "master", "WORKER": "worker", "PS": "ps", "EVALUATOR": "evaluator"}


class TFReplicaSpecV1Alpha1(OwnModel):
    """One entry of the design doc's `replicaSpecs` list."""

    replicas: int = Field(default=1, gt=0, description="Number of pods. Default: 1.")
    tf_replica_type: str = Field(
        default="MASTER", description="MASTER, WORKER, PS or EVALUATOR. Default: MASTER."
    )
    tf_port: int = Field(default=DEFAULT_PORT, ge=1, le=65535, description="Default: 2222.")
    template: PodTemplate = Field(description="A Kubernetes PodTemplateSpec, passed through.")

    @field_validator("tf_replica_type")
    @classmethod
    def _known_type(cls, value: str) -> str:
        if value not in V1ALPHA1_TYPES:
            raise ValueError(
                f"unknown replica type {value!r}; use one of {', '.join(V1ALPHA1_TYPES)}"
            )
        return value


class TFJobSpecV1Alpha1(OwnModel):
    replica_specs: list[TFReplicaSpecV1Alpha1] = Field(min_length=1)


class TFJobSpecV1(OwnModel):
    tf_replica_specs: dict[str, ReplicaSpecV1] = Field(min_length=1)
    run_policy: RunPolicy = Field(default_factory=RunPolicy)

    @field_validator("tf_replica_specs")
    @classmethod
    def _known_types(cls, value: dict[str, ReplicaSpecV1]) -> dict[str, ReplicaSpecV1]:
        unknown = [key for key in value if key not in V1_TYPES]
        if unknown:
            raise ValueError(
                f"unknown replica type {unknown[0]!r}; use one of {', '.join(V1_TYPES)}"
            )
        return value


class TFJobV1Alpha1(OwnModel):
    api_version: Literal["kubeflow.org/v1alpha1"] = Field(alias="apiVersion")
    kind: Literal["TFJob"]
    metadata: ObjectMeta
    spec: TFJobSpecV1Alpha1


class TFJobV1(OwnModel):
    api_version: Literal["kubeflow.org/v1"] = Field(alias="apiVersion")
    kind: Literal["TFJob"]
    metadata: ObjectMeta
    spec: TFJobSpecV1


MODELS: dict[str, type[BaseModel]] = {
    "kubeflow.org/v1alpha1": TFJobV1Alpha1,
    "kubeflow.org/v1": TFJobV1,
}


def parse(document: dict[str, Any], source: str, namespace: str = "default") -> ReplicaJobPlan:
    job = validate(document, source, KIND, MODELS)
    problems: list[Problem] = []
    name = job.metadata.name
    backoff_limit = deadline = None
    port = DEFAULT_PORT
    if isinstance(job, TFJobV1):
        specs = job.spec.tf_replica_specs
        groups = v1_groups(name, specs, "tfReplicaSpecs", V1_TYPES, DEFAULT_CONTAINER, problems)
        backoff_limit = job.spec.run_policy.backoff_limit
        deadline = job.spec.run_policy.active_deadline_seconds
    else:
        assert isinstance(job, TFJobV1Alpha1)
        entries = [(r.tf_replica_type, r.replicas, r.template) for r in job.spec.replica_specs]
        groups = v1alpha1_groups(
            name, entries, "tfReplicaType", V1ALPHA1_TYPES, DEFAULT_CONTAINER, problems
        )
        ports = {replica.tf_port for replica in job.spec.replica_specs}
        if len(ports) > 1:
            problems.append(
                Problem(
                    "spec.replicaSpecs",
                    f"every replica must use the same tfPort (got {sorted(ports)})",
                )
            )
        port = min(ports)
    chiefs = [g for g in groups if g.type in ("chief", "master")]
    if len(chiefs) > 1:
        problems.append(
            Problem(
                chiefs[1].source_path,
                f"a TFJob has at most one chief; {chiefs[0].source_path} "
                "is already the chief: remove one",
            )
        )
    for chief in chiefs:
        if chief.replicas != 1:
            problems.append(
                Problem(
                    f"{chief.source_path}.replicas",
                    f"must be 1 for the {chief.type} (got {chief.replicas})",
                )
            )
    if not any(g.type in ("chief", "master", "worker") for g in groups):
        problems.append(
            Problem(
                "spec",
                "a TFJob needs a chief/master or workers: parameter servers and "
                "evaluators alone never finish",
            )
        )
    distributed = sum(g.replicas for g in groups) > 1
    if distributed:
        require_commands(groups, problems, "TF_CONFIG")
    problems += check_names(name, groups, [])
    if problems:
        raise SpecError(source, problems)
    namespace = job.metadata.namespace or namespace
    return ReplicaJobPlan(
        kind=KIND,
        job=name,
        namespace=namespace,
        labels=dict(job.metadata.labels),
        groups=groups,
        port=port,
        port_name=PORT_NAME,
        backoff_limit=backoff_limit,
        active_deadline_seconds=deadline,
        bootstrap=bootstrap(cluster_spec(name, namespace, groups, port)) if distributed else None,
    )
