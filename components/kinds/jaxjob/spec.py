"""JAXJob ``kubeflow.org/v1``, read as training-operator v1.9 runs it.

Sources, at the v1.9.0 tag of kubeflow/training-operator: ``pkg/apis/kubeflow.org/v1/
jax_types.go`` and ``jax_defaults.go`` (Workers only; container ``jax``, port ``jaxjob-port``,
6666; restartPolicy Never; cleanPodPolicy None), ``pkg/webhooks/jax/jaxjob_webhook.go`` (the
replica type, a container named ``jax``) and ``pkg/controller.v1/jax/`` (the env,
:mod:`.env`; every Worker must succeed; Worker 0 has the master role).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SkipValidation

from trainjobs.core.errors import Problem
from trainjobs.core.graph import GraphOptions, Manifest
from trainjobs.core.labels import OperatorLabels
from trainjobs.core.replica_spec import (
    ReplicaJobPlan,
    ReplicaSpec,
    RunPolicy,
    Success,
    check_total_pods,
    deciding_restart,
)
from trainjobs.core.set_paths import SetPaths, replica_map
from trainjobs.core.spec_model import SpecModel
from trainjobs.kinds.jaxjob.env import jax_env
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import JobContext, ReplicaKind, ReplicaMap, VersionPlan

KIND = "JAXJob"


class JAXJobSpec(SpecModel):
    """A JAXJob ``kubeflow.org/v1`` spec."""

    run_policy: RunPolicy | None = None
    """Run-wide policies. Default: None (the operator's defaults; cleanPodPolicy None)."""
    jax_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)
    """Worker -> its replicas."""


SPEC_MODELS: dict[str, type[SpecModel]] = {"v1": JAXJobSpec}


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: the Workers in ``jaxReplicaSpecs``."""
    return replica_map(document, "jaxReplicaSpecs")


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    return parser.parse(JAXJOB, document, source, namespace, options)


def _rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """The env of every Worker; every Worker must succeed (UpdateJobStatus)."""
    workers = replicas.group("worker")
    check_total_pods([workers] if workers is not None else [], "spec.jaxReplicaSpecs", problems)
    if problems or workers is None:
        return None
    env: dict[tuple[str, int], list[Manifest]] = {
        ("worker", index): jax_env(
            job=context.job, port=workers.port, processes=workers.replicas, process_id=index
        )
        for index in range(workers.replicas)
    }
    success = Success("worker", tuple(range(workers.replicas)))
    groups = [deciding_restart(workers, success, warnings)]
    return VersionPlan(groups=groups, run=replicas.run, success=success, env=env, env_target="all")


JAXJOB = ReplicaKind(
    name=KIND,
    versions=("v1",),
    spec_models=SPEC_MODELS,
    operator_labels={"v1": OperatorLabels()},  # JAXJob came with 1.9: training.kubeflow.org/*
    replica_map="jax_replica_specs",
    replica_types=("Worker",),
    default_container="jax",
    port_name="jaxjob-port",
    default_port=6666,
    default_restart_policy="Never",
    default_clean_pod_policy={"v1": "None"},
    empty_map="required: the Workers",
    example_type="Worker:",
    rules=_rules,
)
