"""PyTorchJob spec models of every released version, read as that version's operator ran them.

- ``v1alpha1``: a ``replicaSpecs`` list (``replicaType``, the proposal's ``ReplicaType``,
  MASTER or WORKER); the pod template's restartPolicy; a MASTER is required;
- ``v1alpha2``, ``v1beta1``: a ``pytorchReplicaSpecs`` map, keys exactly Master and Worker;
  the replica's restartPolicy (default OnFailure); ``cleanPodPolicy``,
  ``ttlSecondsAfterFinished``; a Master is required;
- ``v1beta2``: the same plus ``activeDeadlineSeconds`` and ``backoffLimit``;
- ``v1``: ``runPolicy`` (or its fields at the top of ``spec``, where pytorch-operator read
  them), ``elasticPolicy`` and ``nprocPerNode``; the Master is optional (torchrun jobs).

Sources: pytorch-operator v0.3.0-v0.7.0 and training-operator v1.3-v1.9 at their release
tags (``pkg/apis/pytorch``, ``pkg/controller.v1/pytorch``, the 1.8+ webhook).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, SkipValidation

from trainjobs.core.errors import Problem
from trainjobs.core.graph import GraphOptions, Manifest
from trainjobs.core.labels import OperatorLabels
from trainjobs.core.replica_spec import (
    ReplicaGroup,
    ReplicaJobPlan,
    ReplicaSpec,
    ReplicaSpecBeforeV1,
    ReplicatedJobSpec,
    Restart,
    Success,
    check_run_policy,
    check_total_pods,
    deciding_restart,
    replica_group,
    v1alpha1_restart,
)
from trainjobs.core.set_paths import SetPaths, replica_list, replica_map
from trainjobs.core.spec_model import SpecModel
from trainjobs.kinds.pytorch.env import Elastic, legacy_env, v1_env
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import (
    JobContext,
    ListReplicaSpec,
    ReplicaKind,
    ReplicaMap,
    VersionPlan,
)
from trainjobs.kinds.tensorflow.tf_config import cluster_spec, tf_config

KIND = "PyTorchJob"
VERSIONS = ("v1alpha1", "v1alpha2", "v1beta1", "v1beta2", "v1")
DEFAULT_PORT = 23456
PORT_NAME = "pytorchjob-port"
DEFAULT_CONTAINER = "pytorch"
REPLICA_TYPES = ("Master", "Worker")
V1ALPHA1_TYPES = ("MASTER", "WORKER")
RDZV_BACKENDS = ("c10d", "etcd", "etcd-v2")

# The pod labels each version's operators wrote besides training.kubeflow.org/* (read at the
# release tags of kubeflow/pytorch-operator and kubeflow/training-operator):
# - v1alpha1, pytorch-operator v0.1-v0.3: pkg/trainer/replicas.go, Labels and SyncPods (a
#   worker's task_index is its rank; runtime_id, a random id per run, is left out);
# - v1alpha2, v0.3-v0.4: pkg/controller.v2/pytorch/{controller,pod}.go;
# - v1beta1: v0.4 wrote group_name, pytorch_job_name, pytorch_job_role, v0.5 group-name,
#   pytorch-job-name, pytorch-job-role; v1beta2 (v0.5-v1.0-rc) the latter;
# - v1: v0.5.1-v0.6 the same pytorch-* keys; v0.7 (tf-operator's jobcontroller of 2019-09)
#   also job-name and job-role; training-operator 1.3-1.5 group-name, job-name,
#   replica-type, replica-index, job-role (kubeflow/common); 1.6+ training.kubeflow.org/*.
OPERATOR_LABELS = {
    "v1alpha1": OperatorLabels(
        empty=("kubeflow.org",),
        upper_type=("job_type",),
        job=("pytorch_job_name",),
        rank=("task_index",),
    ),
    "v1alpha2": OperatorLabels(
        group=("group_name",),
        job=("pytorch_job_name",),
        replica_type=("pytorch-replica-type",),
        index=("pytorch-replica-index",),
    ),
    "v1beta1": OperatorLabels(
        group=("group_name", "group-name"),
        job=("pytorch_job_name", "pytorch-job-name"),
        replica_type=("pytorch-replica-type",),
        index=("pytorch-replica-index",),
        role=("pytorch_job_role", "pytorch-job-role"),
    ),
    "v1beta2": OperatorLabels(
        group=("group-name",),
        job=("pytorch-job-name",),
        replica_type=("pytorch-replica-type",),
        index=("pytorch-replica-index",),
        role=("pytorch-job-role",),
    ),
    "v1": OperatorLabels(
        group=("group-name",),
        job=("pytorch-job-name", "job-name"),
        replica_type=("pytorch-replica-type", "replica-type"),
        index=("pytorch-replica-index", "replica-index"),
        role=("pytorch-job-role", "job-role"),
    ),
}


class PyTorchReplicaSpecV1Alpha1(ListReplicaSpec):
    """One entry of ``v1alpha1``'s ``replicaSpecs`` list."""

    template: dict[str, Any] | None = None
    """The pods' template."""
    master_port: int | None = None
    """The port MASTER_PORT names. Default: 23456."""
    replica_type: str | None = None
    """MASTER or WORKER (the proposal spelled the key ReplicaType). Default: MASTER."""


class MasterPolicyV1Alpha1(SpecModel):
    case_insensitive = True
    replica_name: str | None = None
    replica_rank: int | None = None


class TerminationPolicyV1Alpha1(SpecModel):
    case_insensitive = True
    master: MasterPolicyV1Alpha1 | None = None


class PyTorchJobSpecV1Alpha1(SpecModel):
    case_insensitive = True
    # Validated entry by entry, so that every entry's problems are reported at once.
    replica_specs: list[SkipValidation[PyTorchReplicaSpecV1Alpha1]] = Field(default_factory=list)
    """The replicas: one entry per type."""
    pytorch_image: str | None = None
    """Set by the v1alpha1 operator's defaulting; ignored."""
    termination_policy: TerminationPolicyV1Alpha1 | None = None
    """Which replica's end ends the job: the MASTER."""
    scheduler_name: str | None = None
    """The scheduler of every pod."""
    runtime_id: str | None = Field(default=None, alias="RuntimeId")
    """Set by the v1alpha1 operator; ignored."""
    backend: str | None = None
    """The proposal's backend (gloo, nccl, mpi, tcp...): the operator ignored it."""
    master_port: int | None = None
    """The proposal's job-wide master port; each entry's masterPort wins."""


class PyTorchJobSpecV1Alpha2(SpecModel):
    case_insensitive = True
    clean_pod_policy: str | None = None
    """What happens to pods when the job ends: None (default), Running or All."""
    ttl_seconds_after_finished: int | None = None
    """Seconds after the job ends before its objects are removed."""
    pytorch_replica_specs: dict[str, SkipValidation[ReplicaSpecBeforeV1]] = Field(
        default_factory=dict
    )
    """Master and Worker -> their replicas."""


class PyTorchJobSpecV1Beta2(PyTorchJobSpecV1Alpha2):
    active_deadline_seconds: int | None = None
    """Wall-clock limit of the job; on expiry it fails."""
    backoff_limit: int | None = None
    """Retries of a replica before the job fails."""


class RdzvConf(SpecModel):
    key: str
    value: str


class ElasticPolicy(SpecModel):
    """torchrun's elastic launch: a rendezvous of min to max nodes."""

    min_replicas: int | None = None
    """Fewest nodes the rendezvous accepts. Default: maxReplicas, else the Worker count."""
    max_replicas: int | None = None
    """Most nodes. Default: minReplicas, else the Worker count."""
    rdzv_backend: str | None = None
    """c10d (default), etcd or etcd-v2."""
    rdzv_port: int | None = None
    """Default: the Worker's pytorchjob-port (23456)."""
    rdzv_host: str | None = None
    """Default: <job>-worker-0."""
    rdzv_id: str | None = None
    """The rendezvous id. Default: torchrun's."""
    rdzv_conf: list[RdzvConf] | None = None
    """Extra rendezvous settings (key=value)."""
    standalone: bool | None = None
    """torchrun --standalone."""
    n_proc_per_node: int | None = Field(default=None, alias="nProcPerNode")
    """Deprecated: spec.nprocPerNode."""
    max_restarts: int | None = None
    """Restarts of the worker group torchrun allows."""
    metrics: list[dict[str, Any]] | None = None
    """HorizontalPodAutoscaler metrics (autoscaling/v2)."""


class PyTorchJobSpecV1(ReplicatedJobSpec):
    """A PyTorchJob ``kubeflow.org/v1`` spec: the shared run policy and its own replica map."""

    elastic_policy: ElasticPolicy | None = None
    """torchrun's elastic launch (Workers only)."""
    nproc_per_node: str | None = None
    """Processes per node: a number, auto (default), cpu or gpu."""
    pytorch_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)
    """Master and Worker -> their replicas."""


SPEC_MODELS: dict[str, type[SpecModel]] = {
    "v1alpha1": PyTorchJobSpecV1Alpha1,
    "v1alpha2": PyTorchJobSpecV1Alpha2,
    "v1beta1": PyTorchJobSpecV1Alpha2,
    "v1beta2": PyTorchJobSpecV1Beta2,
    "v1": PyTorchJobSpecV1,
}


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: ``v1alpha1`` lists its replicas (each naming its type in
    ``replicaType``), later versions key them by type in ``pytorchReplicaSpecs``."""
    if str(document.get("apiVersion")).endswith("/v1alpha1"):
        return replica_list(document, "replicaSpecs", "replicaType")
    return replica_map(document, "pytorchReplicaSpecs")


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    return parser.parse(PYTORCHJOB, document, source, namespace, options)


# --- v1alpha2, v1beta1, v1beta2, v1 -----------------------------------------------------------


def _rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """pytorch-operator's rules: a Master before v1, torchrun's elastic policy, the torch
    env of every replica; the Master decides, else every Worker (any one, elastic)."""
    version, job = context.version, context.job
    master, workers = replicas.group("master"), replicas.group("worker")
    elastic_policy = getattr(spec, "elastic_policy", None)
    if master is None and version != "v1" and "master" not in replicas.written:
        problems.append(
            Problem("spec.pytorchReplicaSpecs.Master", f"required in {version}: add a Master")
        )
    if elastic_policy is not None and "worker" not in replicas.written:
        problems.append(
            Problem(
                "spec.pytorchReplicaSpecs.Worker",
                "required with elasticPolicy: torchrun's rendezvous runs on the Workers",
            )
        )
    if master is None and workers is None and not problems:
        problems.append(Problem("spec.pytorchReplicaSpecs", "required: a Master and/or Workers"))
    nproc = getattr(spec, "nproc_per_node", None)
    if elastic_policy is not None and elastic_policy.n_proc_per_node is not None:
        if nproc is not None:
            problems.append(
                Problem(
                    "spec.elasticPolicy.nProcPerNode",
                    "must not be used with spec.nprocPerNode: keep spec.nprocPerNode",
                )
            )
        else:
            warnings.append(
                Problem(
                    "spec.elasticPolicy.nProcPerNode",
                    "deprecated since training-operator 1.7: use spec.nprocPerNode",
                )
            )
    elastic = _elastic(elastic_policy, job, workers, problems) if elastic_policy else None
    metrics = elastic_policy.metrics if elastic_policy is not None else None
    if elastic is not None and workers is not None and metrics is not None:
        warnings.append(_metrics_warning(elastic, workers))
    check_total_pods(
        [g for g in (master, workers) if g is not None], "spec.pytorchReplicaSpecs", problems
    )
    if problems:
        return None
    ordered = [g for g in (master, workers) if g is not None]
    total = sum(g.replicas for g in ordered)
    env: dict[tuple[str, int], list[Manifest]] = {}
    for group in ordered:
        for index in range(group.replicas):
            rank = index if group.type == "master" else index + 1
            if version == "v1":
                if nproc is None and (
                    elastic_policy is None or elastic_policy.n_proc_per_node is None
                ):
                    nproc = "auto"
                env[(group.type, index)] = v1_env(
                    job=job,
                    rank=rank if master is not None else None,
                    master_port=master.port if master is not None else None,
                    total_replicas=total,
                    nproc_per_node=nproc,
                    elastic=elastic,
                )
            else:
                assert master is not None
                env[(group.type, index)] = legacy_env(
                    rank=rank,
                    master_addr="localhost" if group.type == "master" else f"{job}-master-0",
                    master_port=master.port,
                    world_size=total,
                )
    if master is not None:
        success = Success("master", (0,))
    else:
        assert workers is not None
        # Without a Master: every Worker must succeed; an elastic job ends when torchrun's
        # group does, which any Worker succeeding shows (training-operator 1.7+).
        success = Success(
            "worker",
            tuple(range(workers.replicas)),
            any=elastic is not None,
            min_members=elastic.min_replicas if elastic is not None else None,
        )
    ordered = [deciding_restart(group, success, warnings) for group in ordered]
    return VersionPlan(groups=ordered, run=replicas.run, success=success, env=env, env_target="all")


def _elastic(
    policy: ElasticPolicy, job: str, workers: ReplicaGroup | None, problems: list[Problem]
) -> Elastic | None:
    """The operator's defaulting: min and max from each other, else from the Worker count."""
    backend = policy.rdzv_backend or "c10d"
    if backend not in RDZV_BACKENDS:
        problems.append(
            Problem(
                "spec.elasticPolicy.rdzvBackend",
                f"must be one of {', '.join(RDZV_BACKENDS)} (got {backend!r}), the "
                "rendezvous backends torchrun knows",
            )
        )
    if workers is None:
        return None
    low = policy.min_replicas if policy.min_replicas is not None else policy.max_replicas
    high = policy.max_replicas if policy.max_replicas is not None else policy.min_replicas
    low = workers.replicas if low is None else low
    high = workers.replicas if high is None else high
    if not 1 <= low <= high:
        problems.append(
            Problem(
                "spec.elasticPolicy",
                f"minReplicas must be at least 1 and at most maxReplicas (got {low}:{high})",
            )
        )
    return Elastic(
        min_replicas=low,
        max_replicas=high,
        rdzv_backend=backend,
        rdzv_host=policy.rdzv_host or f"{job}-worker-0",
        rdzv_port=policy.rdzv_port or workers.port,
        rdzv_id=policy.rdzv_id,
        rdzv_conf=tuple((c.key, c.value) for c in policy.rdzv_conf or []),
        standalone=bool(policy.standalone),
        max_restarts=policy.max_restarts,
        nproc_per_node=policy.n_proc_per_node,
    )


def _metrics_warning(elastic: Elastic, workers: ReplicaGroup) -> Problem:
    """training-operator turns ``elasticPolicy.metrics`` into an autoscaling/v2
    HorizontalPodAutoscaler named like the job whose scaleTargetRef is the PyTorchJob itself
    (pkg/controller.v1/pytorch/hpa.go, desiredHPA); the CRD's scale subresource maps it to
    ``pytorchReplicaSpecs.Worker.replicas`` and the operator then adds or removes Worker pods.
    Without the operator there is no such object: the Workers are one Job (or StatefulSet)
    each, with per-index Services, and an HPA on any one of them would only multiply a pod
    with the same name and environment. So none is made, and the spec is told why."""
    return Problem(
        "spec.elasticPolicy.metrics",
        "not used: training-operator makes a HorizontalPodAutoscaler of them that scales the "
        f"PyTorchJob's Workers through its scale subresource ({elastic.min_replicas} to "
        f"{elastic.max_replicas}); here there is no PyTorchJob object and each Worker is a Job "
        "of its own, so nothing has a scale subresource an autoscaler could resize: the job "
        f"runs its {workers.replicas} Workers throughout (remove metrics, or set "
        "Worker.replicas to the size you want)",
    )


# --- v1alpha1 -----------------------------------------------------------------------------------


def _v1alpha1(
    spec: SpecModel, context: JobContext, problems: list[Problem], warnings: list[Problem]
) -> VersionPlan | None:
    """The list shape of the PyTorch operator proposal and of pytorch-operator 0.1-0.3.

    As in the TFJob's ``v1alpha1``, the pod template's restartPolicy is the replica's and
    unset means OnFailure. Each replica's masterPort (default: the proposal's spec-level
    masterPort, else 23456) is its port and the MASTER_PORT it is given.
    """
    assert isinstance(spec, PyTorchJobSpecV1Alpha1)
    job = context.job
    if not spec.replica_specs:
        problems.append(Problem("spec.replicaSpecs", "required: a MASTER and WORKERs"))
        return None
    groups: dict[str, ReplicaGroup] = {}
    entries = parser.list_entries(
        KIND,
        spec.replica_specs,
        PyTorchReplicaSpecV1Alpha1,
        "replica_type",
        V1ALPHA1_TYPES,
        problems,
        warnings,
    )
    for item in entries:
        policy = v1alpha1_restart(item.entry.template, item.path, warnings)
        groups[item.type.lower()] = replica_group(
            replica_type=item.type.lower(),
            replicas=item.replicas,
            template=item.entry.template,
            restart=Restart(policy, policy),
            source_path=item.path,
            default_container=DEFAULT_CONTAINER,
            port_name="pytorchjob-port",
            default_port=item.entry.master_port or spec.master_port or DEFAULT_PORT,
            problems=problems,
            warnings=warnings,
            first_if_unnamed=True,
        )
    master, workers = groups.get("master"), groups.get("worker")
    if master is None and not problems:
        problems.append(Problem("spec.replicaSpecs", "required: a MASTER replica"))
    check_total_pods(list(groups.values()), "spec.replicaSpecs", problems)
    if problems:
        return None
    assert master is not None
    ordered = [g for g in (master, workers) if g is not None]
    total = sum(g.replicas for g in ordered)
    cluster = cluster_spec(job, {g.type: (g.replicas, g.port) for g in ordered}, None)
    env: dict[tuple[str, int], list[Manifest]] = {}
    for group in ordered:
        for index in range(group.replicas):
            rank = index if group.type == "master" else index + 1
            env[(group.type, index)] = [
                {"name": "TF_CONFIG", "value": tf_config(cluster, group.type, rank)},
                *legacy_env(
                    rank=rank,
                    master_addr="localhost" if group.type == "master" else f"{job}-master-0",
                    master_port=group.port,
                    world_size=total,
                ),
            ]
    run = check_run_policy({"scheduler_name": spec.scheduler_name}, "spec", "All", problems)
    return VersionPlan(
        groups=ordered,
        run=run,
        success=Success("master", (0,)),
        env=env,
        env_target="default",
    )


PYTORCHJOB = ReplicaKind(
    name=KIND,
    versions=VERSIONS,
    spec_models=SPEC_MODELS,
    operator_labels=OPERATOR_LABELS,
    replica_map="pytorch_replica_specs",
    replica_types=REPLICA_TYPES,
    default_container=DEFAULT_CONTAINER,
    port_name=PORT_NAME,
    default_port=DEFAULT_PORT,
    default_restart_policy="OnFailure",
    default_clean_pod_policy=dict.fromkeys(VERSIONS, "None"),
    empty_map="required: a Master and/or Workers",
    example_type="Master: or Worker:",
    rules=_rules,
    single_replica_types=("Master",),
    read_list=_v1alpha1,
)
