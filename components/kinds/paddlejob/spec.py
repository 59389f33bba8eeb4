"""PaddleJob ``kubeflow.org/v1``, read as training-operator v1.9 runs it.

Sources, at the v1.9.0 tag of kubeflow/training-operator: ``pkg/apis/kubeflow.org/v1/
paddlepaddle_types.go`` and ``paddlepaddle_defautls.go`` (Master and Worker; container
``paddle``, its port named ``master``, 36543; restartPolicy OnFailure; cleanPodPolicy None),
``pkg/webhooks/paddlepaddle/paddlepaddle_webhook.go`` (the replica types, a container named
``paddle``) and ``pkg/controller.v1/paddlepaddle/`` (the env, :mod:`.env`; with a Master the
Master decides the job's success, else every Worker must succeed).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from pydantic import Field, SkipValidation

from trainjobs.core.errors import Problem
from trainjobs.core.graph import GraphOptions, Manifest
from trainjobs.core.jobset import is_queued
from trainjobs.core.labels import KUBEFLOW_COMMON_LABELS
from trainjobs.core.replica_spec import (
    ReplicaJobPlan,
    ReplicaSpec,
    RunPolicy,
    Success,
    check_total_pods,
    deciding_restart,
    master_only,
)
from trainjobs.core.set_paths import SetPaths, replica_map
from trainjobs.core.spec_model import SpecModel
from trainjobs.kinds.paddlejob.env import paddle_env
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import JobContext, ReplicaKind, ReplicaMap, VersionPlan

KIND = "PaddleJob"

OPERATOR_LABELS = {"v1": KUBEFLOW_COMMON_LABELS}


class PaddleElasticPolicy(SpecModel):
    """``elasticPolicy``: declared by the API, read by no released controller."""

    min_replicas: int | None = None
    max_replicas: int | None = None
    max_restarts: int | None = None
    metrics: list[dict[str, Any]] | None = None
    """HorizontalPodAutoscaler metrics (autoscaling/v2)."""


class PaddleJobSpec(SpecModel):
    """A PaddleJob ``kubeflow.org/v1`` spec."""

    run_policy: RunPolicy | None = None
    """Run-wide policies. Default: None (the operator's defaults; cleanPodPolicy None)."""
    elastic_policy: PaddleElasticPolicy | None = None
    """Elastic training bounds: training-operator v1.9 defaults them and then ignores them."""
    paddle_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)
    """Master and Worker -> their replicas."""


SPEC_MODELS: dict[str, type[SpecModel]] = {"v1": PaddleJobSpec}


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: the replicas keyed by type in ``paddleReplicaSpecs``."""
    return replica_map(document, "paddleReplicaSpecs")


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    labels = (document.get("metadata") or {}).get("labels") if isinstance(document, dict) else None
    queued = isinstance(labels, dict) and is_queued(labels)
    return parser.parse(
        QUEUED_PADDLEJOB if queued else PADDLEJOB, document, source, namespace, options
    )


def _rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """The env of every replica; the Master decides when there is one, else every Worker
    (UpdateJobStatus)."""
    return _plan(spec, replicas, context, problems, warnings, queued=False)


def _queued_rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """Queued by Kueue, the job is one JobSet whose pods of a replica type share a template:
    the first pod cannot have its own PADDLE_MASTER. It gets the others' (its own Service's
    name, which resolves to its own address, as POD_IP_DUMMY does), with a warning."""
    return _plan(spec, replicas, context, problems, warnings, queued=True)


def _plan(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
    *,
    queued: bool,
) -> VersionPlan | None:
    master, workers = replicas.group("master"), replicas.group("worker")
    if getattr(spec, "elastic_policy", None) is not None:
        # pkg/controller.v1/paddlepaddle reads no ElasticPolicy: only the defaulting fills it.
        warnings.append(
            Problem(
                "spec.elasticPolicy",
                "not used: training-operator's PaddleJob controller "
                "ignores it (no autoscaler, no elastic launch), so the job runs its "
                "replicas as given; remove it",
            )
        )
    check_total_pods(
        [g for g in (master, workers) if g is not None], "spec.paddleReplicaSpecs", problems
    )
    if problems or (master is None and workers is None):
        return None
    ordered = [g for g in (master, workers) if g is not None]
    leader = master if master is not None else workers
    assert leader is not None
    nodes = sum(g.replicas for g in ordered)
    env: dict[tuple[str, int], list[Manifest]] = {}
    for group in ordered:
        for index in range(group.replicas):
            env[(group.type, index)] = paddle_env(
                job=context.job,
                nodes=nodes,
                leader=leader.type,
                port=leader.port,
                first=group is leader and index == 0 and not queued,
                role=group.type if master is not None else None,
            )
    if queued:
        warnings.append(
            Problem(
                f"spec.paddleReplicaSpecs.{leader.type.capitalize()}",
                f"queued by Kueue, the job is one JobSet whose {leader.type} pods share a "
                f"template, so {leader.type} 0 gets PADDLE_MASTER={context.job}-{leader.type}-0:"
                f"{leader.port} (its own Service) like the others, not the operator's "
                "$(POD_IP_DUMMY) from the downward API; both name its own address",
            )
        )
    success = Success(leader.type, tuple(range(leader.replicas)))
    ordered = [deciding_restart(group, success, warnings) for group in ordered]
    return VersionPlan(groups=ordered, run=replicas.run, success=success, env=env, env_target="all")


PADDLEJOB = ReplicaKind(
    name=KIND,
    versions=("v1",),
    spec_models=SPEC_MODELS,
    operator_labels=OPERATOR_LABELS,
    master_role=master_only,
    replica_map="paddle_replica_specs",
    replica_types=("Master", "Worker"),
    default_container="paddle",
    port_name="master",
    default_port=36543,
    default_restart_policy="OnFailure",
    default_clean_pod_policy={"v1": "None"},
    empty_map="required: Workers (collective mode) or a Master and Workers",
    example_type="Master: or Worker:",
    rules=_rules,
)
QUEUED_PADDLEJOB = dataclasses.replace(PADDLEJOB, rules=_queued_rules)
"""The same kind as a queued job's JobSet runs it (:func:`_queued_rules`)."""
