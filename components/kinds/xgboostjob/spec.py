"""XGBoostJob ``kubeflow.org/v1``, read as training-operator v1.9 runs it.

Sources, at the v1.9.0 tag of kubeflow/training-operator: ``pkg/apis/kubeflow.org/v1/
xgboost_types.go`` and ``xgboost_defaults.go`` (Master and Worker; container ``xgboost``, port
``xgboostjob-port``, 9999; restartPolicy Never; cleanPodPolicy None), ``pkg/webhooks/xgboost/
xgboostjob_webhook.go`` (a Master is required and its replicas must be 1) and
``pkg/controller.v1/xgboost/`` (the env, :mod:`.env`; the Master decides the job's success).

kubeflow/xgboost-operator, archived, served ``xgboostjob.kubeflow.org/v1alpha1`` (v0.1.0) and
``xgboostjob.kubeflow.org/v1`` (v0.2.0) in its own API group, with containers named
``xgboostjob``; a document of that group is refused with the way to move it.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SkipValidation

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import GraphOptions, Manifest
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
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import JobContext, ReplicaKind, ReplicaMap, VersionPlan
from trainjobs.kinds.xgboostjob.env import xgboost_env

KIND = "XGBoostJob"
VERSIONS = ("v1",)
OLD_GROUP = "xgboostjob.kubeflow.org"
"""kubeflow/xgboost-operator's API group (v0.1.0: v1alpha1, v0.2.0: v1)."""

OPERATOR_LABELS = {"v1": KUBEFLOW_COMMON_LABELS}


class XGBoostJobSpec(SpecModel):
    """An XGBoostJob ``kubeflow.org/v1`` spec."""

    run_policy: RunPolicy | None = None
    """Run-wide policies. Default: None (the operator's defaults; cleanPodPolicy None)."""
    xgb_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)
    """Master and Worker -> their replicas."""


SPEC_MODELS: dict[str, type[SpecModel]] = {"v1": XGBoostJobSpec}


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: the replicas keyed by type in ``xgbReplicaSpecs``."""
    return replica_map(document, "xgbReplicaSpecs")


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    api_version = str(document.get("apiVersion"))
    if api_version.startswith(f"{OLD_GROUP}/"):
        raise SpecError(
            source,
            [
                Problem(
                    "apiVersion",
                    f"{api_version!r} is kubeflow/xgboost-operator's API group (archived); "
                    "training-operator serves XGBoostJob as kubeflow.org/v1 with the same "
                    "xgbReplicaSpecs: write apiVersion: kubeflow.org/v1 and name the main "
                    "containers 'xgboost' (xgboost-operator named them 'xgboostjob')",
                )
            ],
        )
    return parser.parse(XGBOOSTJOB, document, source, namespace, options)


def _rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """The webhook's rules (a Master, of exactly one replica given as such), the env of every
    replica; the Master decides the job's success (UpdateJobStatus)."""
    master, workers = replicas.group("master"), replicas.group("worker")
    written = getattr(spec, "xgb_replica_specs", {})
    if "master" not in replicas.written:
        problems.append(
            Problem(
                "spec.xgbReplicaSpecs.Master",
                "required: the operator's webhook refuses a job without a Master (rank 0, the "
                "MASTER_ADDR every replica is given); add Master: with replicas: 1",
            )
        )
    elif isinstance(written.get("Master"), dict) and written["Master"].get("replicas") is None:
        # The webhook runs before the operator defaults replicas, and the CRD has no default.
        problems.append(
            Problem(
                "spec.xgbReplicaSpecs.Master.replicas",
                "required: must be 1, as the operator's webhook checks it before any default "
                "applies; write replicas: 1",
            )
        )
    check_total_pods(
        [g for g in (master, workers) if g is not None], "spec.xgbReplicaSpecs", problems
    )
    if problems or master is None:
        return None
    ordered = [g for g in (master, workers) if g is not None]
    world_size = sum(g.replicas for g in ordered)
    env: dict[tuple[str, int], list[Manifest]] = {}
    for group in ordered:
        for index in range(group.replicas):
            env[(group.type, index)] = xgboost_env(
                job=context.job,
                rank=index if group.type == "master" else index + master.replicas,
                world_size=world_size,
                master_port=master.port,
                worker_port=workers.port if workers is not None else None,
            )
    success = Success("master", (0,))
    ordered = [deciding_restart(group, success, warnings) for group in ordered]
    return VersionPlan(groups=ordered, run=replicas.run, success=success, env=env, env_target="all")


XGBOOSTJOB = ReplicaKind(
    name=KIND,
    versions=VERSIONS,
    spec_models=SPEC_MODELS,
    operator_labels=OPERATOR_LABELS,
    master_role=master_only,
    replica_map="xgb_replica_specs",
    replica_types=("Master", "Worker"),
    default_container="xgboost",
    port_name="xgboostjob-port",
    default_port=9999,
    default_restart_policy="Never",
    default_clean_pod_policy={"v1": "None"},
    empty_map="required: a Master and its Workers",
    example_type="Master: or Worker:",
    rules=_rules,
    single_replica_types=("Master",),
)
