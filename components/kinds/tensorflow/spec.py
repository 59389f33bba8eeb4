"""TFJob spec models of every released version, read as that version's operator ran them.

- ``v1alpha1``: a ``replicaSpecs`` list (``tfReplicaType`` MASTER, WORKER, PS); the pod
  template's restartPolicy; TF_CONFIG on ``tensorflow`` containers; ``cleanupPodPolicy``
  and ``terminationPolicy``;
- ``v1alpha2``, ``v1beta1``: a ``tfReplicaSpecs`` map; the replica's restartPolicy (default
  Never); TF_CONFIG on every container; ``cleanPodPolicy``, ``ttlSecondsAfterFinished``;
- ``v1beta2``: the same plus ``activeDeadlineSeconds`` and ``backoffLimit``;
- ``v1``: TF_CONFIG on the first ``tensorflow`` container of distributed jobs only;
  ``runPolicy`` (or its fields at the top of ``spec``, where tf-operator 1.0 read them),
  ``successPolicy``, ``enableDynamicWorker``.

Sources: tf-operator v0.1.0-v1.2 and training-operator v1.3-v1.9 at their release tags
(``pkg/apis/tensorflow``, ``pkg/controller.v1/tensorflow``; the webhook of 1.8+).
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
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import (
    JobContext,
    ListReplicaSpec,
    ReplicaKind,
    ReplicaMap,
    VersionPlan,
)
from trainjobs.kinds.tensorflow import parameter_server
from trainjobs.kinds.tensorflow.tf_config import (
    CLUSTER_TYPES_BEFORE_V1,
    cluster_spec,
    sparse_tf_config,
    tf_config,
)

KIND = "TFJob"
VERSIONS = ("v1alpha1", "v1alpha2", "v1beta1", "v1beta2", "v1")
DEFAULT_PORT = 2222
PORT_NAME = "tfjob-port"
DEFAULT_CONTAINER = "tensorflow"
# Map keys from v1alpha2 on, matched without regard to case as the operator's defaulting does.
REPLICA_TYPES = ("Chief", "Master", "PS", "Worker", "Evaluator")
V1ALPHA1_TYPES = ("MASTER", "PS", "WORKER")
V1ALPHA1_PORT_NAME = "tf-port"
"""v1alpha1 gave each replica's Service one port of this name, ``tfPort``."""

# The pod labels each version's operators wrote besides training.kubeflow.org/* (read at the
# release tags of kubeflow/training-operator, which holds tf-operator's history):
# - v1alpha1, tf-operator v0.1-v0.3: pkg/trainer/replicas.go, Labels and LabelsByIndex
#   (runtime_id, a random id per run, is left out);
# - v1alpha2, v0.2-v0.3: pkg/generator/generator.go GenLabels (v0.2) and
#   pkg/controller.v2/tensorflow/{controller,pod}.go;
# - v1beta1, v1beta2: v0.4 wrote group_name, tf_job_name, tf_job_role, v0.5 and 1.0-rc
#   group-name, tf-job-name, tf-job-role (pkg/controller.v1beta*/tensorflow/controller.go);
# - v1: v0.5.3-v1.0-rc the same tf-* keys (pkg/controller.v1/tensorflow); tf-operator
#   1.0.1-1.2 and training-operator 1.3-1.5 group-name, job-name, replica-type,
#   replica-index, job-role (kubeflow/common pkg/apis/common/v1/constants.go, GenLabels);
#   1.6+ training.kubeflow.org/* only.
OPERATOR_LABELS = {
    "v1alpha1": OperatorLabels(
        empty=("kubeflow.org",),
        upper_type=("job_type",),
        job=("tf_job_name",),
        index=("task_index",),
    ),
    "v1alpha2": OperatorLabels(
        group=("group_name",),
        job=("tf_job_name",),
        replica_type=("tf-replica-type",),
        index=("tf-replica-index",),
    ),
    "v1beta1": OperatorLabels(
        group=("group_name", "group-name"),
        job=("tf_job_name", "tf-job-name"),
        replica_type=("tf-replica-type",),
        index=("tf-replica-index",),
        role=("tf_job_role", "tf-job-role"),
    ),
    "v1": OperatorLabels(
        group=("group-name",),
        job=("tf-job-name", "job-name"),
        replica_type=("tf-replica-type", "replica-type"),
        index=("tf-replica-index", "replica-index"),
        role=("tf-job-role", "job-role"),
    ),
}
OPERATOR_LABELS["v1beta2"] = OPERATOR_LABELS["v1beta1"]


class TFReplicaSpecV1Alpha1(ListReplicaSpec):
    """One entry of ``v1alpha1``'s ``replicaSpecs`` list."""

    template: dict[str, Any] | None = None
    """The pods' template. A PS without one runs a standard TensorFlow server."""
    tf_port: int | None = None
    """The port TF_CONFIG names. Default: 2222."""
    tf_replica_type: str | None = None
    """MASTER, WORKER or PS. Default: MASTER."""


class ChiefV1Alpha1(SpecModel):
    case_insensitive = True
    replica_name: str | None = None
    replica_index: int | None = None


class TerminationPolicyV1Alpha1(SpecModel):
    case_insensitive = True
    chief: ChiefV1Alpha1 | None = None


class TFJobSpecV1Alpha1(SpecModel):
    case_insensitive = True
    # Validated entry by entry, so that every entry's problems are reported at once.
    replica_specs: list[SkipValidation[TFReplicaSpecV1Alpha1]] = Field(default_factory=list)
    """The replicas: one entry per type."""
    tf_image: str | None = None
    """The image of parameter servers that give no template."""
    termination_policy: TerminationPolicyV1Alpha1 | None = None
    """Which replica's success ends the job. Default: MASTER 0."""
    cleanup_pod_policy: str | None = None
    """What happens to pods when the job ends: All (default), Running or None."""
    scheduler_name: str | None = None
    """The scheduler of every pod."""
    runtime_id: str | None = Field(default=None, alias="RuntimeId")
    """Set by the v1alpha1 operator; ignored."""


class TFJobSpecV1Alpha2(SpecModel):
    case_insensitive = True
    clean_pod_policy: str | None = None
    """What happens to pods when the job ends: Running (default), All or None."""
    ttl_seconds_after_finished: int | None = None
    """Seconds after the job ends before its objects are removed."""
    tf_replica_specs: dict[str, SkipValidation[ReplicaSpecBeforeV1]] = Field(default_factory=dict)
    """Replica type (Chief, Master, Worker, PS, Evaluator) -> its replicas."""


class TFJobSpecV1Beta2(TFJobSpecV1Alpha2):
    active_deadline_seconds: int | None = None
    """Wall-clock limit of the job; on expiry it fails."""
    backoff_limit: int | None = None
    """Retries of a replica before the job fails."""


class TFJobSpecV1(ReplicatedJobSpec):
    """A TFJob ``kubeflow.org/v1`` spec: the shared run policy and its own replica map."""

    success_policy: str | None = None
    """Without a chief: '' (worker 0 decides, default) or AllWorkers."""
    enable_dynamic_worker: bool | None = None
    """Each worker's TF_CONFIG lists only itself and the parameter servers."""
    tf_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)
    """Replica type (Chief, Master, Worker, PS, Evaluator) -> its replicas."""


SPEC_MODELS: dict[str, type[SpecModel]] = {
    "v1alpha1": TFJobSpecV1Alpha1,
    "v1alpha2": TFJobSpecV1Alpha2,
    "v1beta1": TFJobSpecV1Alpha2,
    "v1beta2": TFJobSpecV1Beta2,
    "v1": TFJobSpecV1,
}
DEFAULT_CLEAN_POD_POLICY = {
    "v1alpha1": "All",
    "v1alpha2": "Running",
    "v1beta1": "Running",
    "v1beta2": "Running",
    "v1": "None",  # training-operator 1.6+; Running before
}


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: ``v1alpha1`` lists its replicas (each naming its type in
    ``tfReplicaType``), later versions key them by type in ``tfReplicaSpecs``."""
    if str(document.get("apiVersion")).endswith("/v1alpha1"):
        return replica_list(document, "replicaSpecs", "tfReplicaType")
    return replica_map(document, "tfReplicaSpecs")


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    return parser.parse(TFJOB, document, source, namespace, options)


# --- v1alpha2, v1beta1, v1beta2, v1 -----------------------------------------------------------


def _rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    """tf-operator's rules: one chief (Chief or Master), one evaluator before v1, the success
    policy, and TF_CONFIG for every replica."""
    version, keys, groups = context.version, replicas.written, replicas.groups
    chiefs = [key for key in keys if key in ("chief", "master")]
    if len(chiefs) > 1:
        problems.append(
            Problem(
                "spec.tfReplicaSpecs",
                f"must not have both {keys['chief']!r} and {keys['master']!r}: a TFJob has "
                "one chief; keep one of them",
            )
        )
    for group in groups:
        if group.type in ("chief", "master") and group.replicas > 1:
            if version == "v1":
                warnings.append(
                    Problem(
                        f"{group.source_path}.replicas",
                        f"{group.replicas} {group.type}s: TensorFlow runs one; training-operator "
                        "accepts more and so does trainjobs",
                    )
                )
            else:
                problems.append(
                    Problem(
                        f"{group.source_path}.replicas",
                        f"must be 1 in {version} (got {group.replicas}): its CRD allows one "
                        f"{group.type}",
                    )
                )
    if version in ("v1beta1", "v1beta2"):
        evaluators = replicas.group("evaluator")
        if evaluators is not None and evaluators.replicas > 1:
            problems.append(
                Problem(
                    f"{evaluators.source_path}.replicas",
                    f"must be at most 1 in {version} (got {evaluators.replicas}): its "
                    "operator refuses more than one evaluator",
                )
            )
    check_total_pods(groups, "spec.tfReplicaSpecs", problems)
    success_policy = getattr(spec, "success_policy", None)
    if success_policy not in (None, "", "AllWorkers"):
        problems.append(
            Problem(
                "spec.successPolicy",
                f"must be '' or 'AllWorkers' (got {success_policy!r})",
            )
        )
    if problems:
        return None
    success = _success(groups, success_policy == "AllWorkers", problems)
    groups = [deciding_restart(group, success, warnings) for group in groups]
    dynamic = bool(getattr(spec, "enable_dynamic_worker", False))
    return VersionPlan(
        groups=groups,
        run=replicas.run,
        success=success,
        env=_env(context.job, context.namespace, groups, version, dynamic),
        env_target="first-default" if version == "v1" else "all",
    )


def _success(groups: list[ReplicaGroup], all_workers: bool, problems: list[Problem]) -> Success:
    """The chief or master decides; with neither, worker 0 does (or every worker, with
    ``successPolicy: AllWorkers``)."""
    for group in groups:
        if group.type in ("chief", "master"):
            return Success(group.type, tuple(range(group.replicas)))
    workers = next((g for g in groups if g.type == "worker"), None)
    if workers is None:
        problems.append(
            Problem(
                "spec.tfReplicaSpecs",
                "needs a Chief, a Master or Workers: parameter servers and evaluators alone "
                "never finish",
            )
        )
        return Success("worker", (0,))
    return Success("worker", tuple(range(workers.replicas)) if all_workers else (0,))


def _env(
    job: str, namespace: str, groups: list[ReplicaGroup], version: str, dynamic: bool
) -> dict[tuple[str, int], list[Manifest]]:
    replicas = {g.type: (g.replicas, g.port) for g in groups}
    if version == "v1":
        # training-operator: only distributed jobs get TF_CONFIG, and evaluators are listed.
        if sum(count for count, _ in replicas.values()) == 1:
            return {}
        cluster = cluster_spec(job, replicas, namespace)
    else:
        host_namespace = None if version == "v1alpha2" else namespace
        cluster = cluster_spec(job, replicas, host_namespace, CLUSTER_TYPES_BEFORE_V1)
    env = {}
    for group in groups:
        for index in range(group.replicas):
            value = (
                sparse_tf_config(job, replicas, namespace, group.type, index)
                if dynamic
                else tf_config(cluster, group.type, index)
            )
            env[(group.type, index)] = [{"name": "TF_CONFIG", "value": value}]
    return env


# --- v1alpha1 -----------------------------------------------------------------------------------


def _v1alpha1(
    spec: SpecModel, context: JobContext, problems: list[Problem], warnings: list[Problem]
) -> VersionPlan | None:
    """The list shape of the TFJob design and of tf-operator 0.1-0.3.

    The pod template's restartPolicy is the replica's; unset (the API server's Always) is
    OnFailure here: the operator judged a replica by its container's exit code, so a first
    exit 0 finished it and a failure was retried. A PS entry without a template runs the
    standard TensorFlow server (:mod:`.parameter_server`).
    """
    assert isinstance(spec, TFJobSpecV1Alpha1)
    job = context.job
    if not spec.replica_specs:
        problems.append(Problem("spec.replicaSpecs", "required: at least one replica"))
        return None
    groups: list[ReplicaGroup] = []
    assets: dict[str, str] = {}
    entries = parser.list_entries(
        KIND,
        spec.replica_specs,
        TFReplicaSpecV1Alpha1,
        "tf_replica_type",
        V1ALPHA1_TYPES,
        problems,
        warnings,
    )
    for item in entries:
        port = item.entry.tf_port or DEFAULT_PORT
        template = item.entry.template
        if template is None and item.type == "PS":
            image = (
                spec.tf_image
                or context.options.tensorflow_server_image
                or parameter_server.DEFAULT_IMAGE
            )
            template = parameter_server.server_template(
                job, image, DEFAULT_CONTAINER, V1ALPHA1_PORT_NAME, port
            )
            assets[parameter_server.SCRIPT] = parameter_server.SERVER_SCRIPT
            groups.append(
                ReplicaGroup(
                    type="ps",
                    replicas=item.replicas,
                    template=template,
                    container=DEFAULT_CONTAINER,
                    restart=Restart("OnFailure", "OnFailure"),
                    source_path=item.path,
                    port=port,
                )
            )
            continue
        policy = v1alpha1_restart(template, item.path, warnings)
        group = replica_group(
            replica_type=item.type.lower(),
            replicas=item.replicas,
            template=template,
            restart=Restart(policy, policy),
            source_path=item.path,
            default_container=DEFAULT_CONTAINER,
            port_name=V1ALPHA1_PORT_NAME,
            default_port=port,
            problems=problems,
            warnings=warnings,
            first_if_unnamed=True,
        )
        groups.append(group)
    chief = spec.termination_policy.chief if spec.termination_policy else None
    chief_type = ((chief.replica_name if chief else None) or "MASTER").lower()
    chief_index = (chief.replica_index if chief else None) or 0
    chief_group = next((g for g in groups if g.type == chief_type), None)
    if not problems and (chief_group is None or chief_index >= chief_group.replicas):
        problems.append(
            Problem(
                "spec.terminationPolicy.chief",
                f"names {chief_type.upper()}-{chief_index}, which the replicaSpecs do not "
                "define: add a MASTER replica or point the chief at one that exists",
            )
        )
    clean = spec.cleanup_pod_policy
    run = check_run_policy(
        {"clean_pod_policy": clean, "scheduler_name": spec.scheduler_name},
        "spec",
        "All",
        problems,
    )
    if clean is not None and problems and problems[-1].path == "spec.cleanPodPolicy":
        problems[-1] = Problem("spec.cleanupPodPolicy", problems[-1].message)
    check_total_pods(groups, "spec.replicaSpecs", problems)
    if problems:
        return None
    replicas_by_type = {g.type: (g.replicas, g.port) for g in groups}
    cluster = cluster_spec(job, replicas_by_type, None)
    env = {
        (g.type, index): [{"name": "TF_CONFIG", "value": tf_config(cluster, g.type, index)}]
        for g in groups
        for index in range(g.replicas)
    }
    return VersionPlan(
        groups=groups,
        run=run,
        success=Success(chief_type, (chief_index,)),
        env=env,
        env_target="default",
        assets=assets,
    )


TFJOB = ReplicaKind(
    name=KIND,
    versions=VERSIONS,
    spec_models=SPEC_MODELS,
    operator_labels=OPERATOR_LABELS,
    replica_map="tf_replica_specs",
    replica_types=REPLICA_TYPES,
    default_container=DEFAULT_CONTAINER,
    port_name=PORT_NAME,
    default_port=DEFAULT_PORT,
    default_restart_policy="Never",
    default_clean_pod_policy=DEFAULT_CLEAN_POD_POLICY,
    empty_map="required: at least one replica type",
    example_type="Worker:",
    rules=_rules,
    lenient_types=True,
    read_list=_v1alpha1,
)
