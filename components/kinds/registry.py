"""The registry of job kinds: any spec document in, one JobDefinition out.

The Pulumi program, the CLI and the local runtime all go through here, so adding a kind
means adding one entry to :data:`KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjobs.core.documents import RUNTIME_KINDS, load_file
from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import Graph, GraphOptions
from trainjobs.core.jobset import QUEUE_LABEL, is_queued
from trainjobs.core.rendered_pods import check_graph
from trainjobs.core.set_paths import SetPaths

if TYPE_CHECKING:
    from trainjobs.core.replica_spec import ReplicaJobPlan, RunSettings
    from trainjobs.kinds.mpi.plan import MpiPlan
    from trainjobs.kinds.mpijob.spec import MpiJobPlan


@dataclass(frozen=True)
class Workload:
    """A workload the completion watcher stops when the job ends (and restores to
    ``replicas`` when a new run starts)."""

    kind: str
    name: str
    replicas: int


@dataclass(frozen=True)
class JobDefinition:
    """A validated job of any kind and its resource graph."""

    kind: str
    name: str
    namespace: str
    graph: Graph
    success_jobs: tuple[str, ...]
    """The batch/v1 Jobs whose Complete conditions are the job's success: all of them (or
    any one, with ``success_any``). A Failed condition of any Job of the job fails it."""
    workers: list[Workload]
    """Everything else that runs: stopped when the outcome is known (``clean_pod_policy``)."""
    worker_pods: list[str]
    success_any: bool = False
    clean_pod_policy: str = "Running"
    """Kubeflow's cleanPodPolicy: what happens to pods when the job ends. None: nothing;
    Running: pods still running are stopped; All: every pod is removed."""
    warnings: tuple[Problem, ...] = ()
    """Things the spec says that have no effect, or an effect the user may not expect."""
    gang_min_member: int | None = None
    """With a gang scheduler: how many pods must be placed together before any starts."""
    anchor: tuple[str, str] = ("", "")
    """(kind, name) of an object that lives as long as the job's stack and no TTL removes:
    the deciding replica's Service, or a ChainerJob's assets ConfigMap. The completion
    watcher reads the job's description from it and records finished runs on it."""
    suspend: bool = False
    """``runPolicy.suspend``: no pod runs until the spec says otherwise."""
    ttl_seconds_after_finished: int | None = None
    """``runPolicy.ttlSecondsAfterFinished``: how long the finished job's objects stay."""
    elastic_min_members: int | None = None
    """An elastic PyTorchJob: the workers its torchrun group needs (elasticPolicy.minReplicas)."""
    elastic_restart_never: bool = False
    """An elastic PyTorchJob whose workers' Kubeflow restartPolicy is Never: any failed worker
    fails the job, as the operator decides."""
    queued: bool = False
    """Kueue queues the job: it is one JobSet, whose controller makes its Jobs."""

    @property
    def completion_job(self) -> str:
        """The first Job that decides success (the only one, unless all workers decide)."""
        return self.success_jobs[0]


def _chainer(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.chainer import spec as chainer_spec

    plan = chainer_spec.parse(document, source, namespace)
    if is_queued(plan.labels):
        raise SpecError(
            source,
            [
                Problem(
                    f"metadata.labels.{QUEUE_LABEL}",
                    "a ChainerJob cannot be queued by Kueue as one unit (its workers are a "
                    "StatefulSet, which Kueue would admit apart from the master's Job); remove "
                    "the label (TFJobs and PyTorchJobs can be queued)",
                )
            ],
        )
    return _mpi_graph_definition(plan, options)


def _mpijob(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.mpijob import spec as mpijob_spec

    parsed = mpijob_spec.parse(document, source, namespace, options)
    if parsed.graph.flavour.queued:
        return _queued_mpijob(parsed, options)
    return _mpi_graph_definition(parsed.graph, options, parsed.run)


def _mpi_graph_definition(
    plan: MpiPlan, options: GraphOptions, run: RunSettings | None = None
) -> JobDefinition:
    """A ChainerJob or unqueued MPIJob: the master (launcher) Job decides, as every MPIJob
    operator rules (its Job's Complete or Failed); the workers are StatefulSets. ``run``: an
    MPIJob's runPolicy (a ChainerJob has none)."""
    from trainjobs.kinds.mpi import graph as mpi_graph

    gang = plan.flavour.gang
    return JobDefinition(
        kind=plan.flavour.kind,
        name=plan.names.job,
        namespace=plan.namespace,
        graph=mpi_graph.build_graph(plan, options),
        success_jobs=(plan.names.master,),
        workers=[
            Workload("StatefulSet", group.statefulset, group.replicas) for group in plan.workers
        ],
        worker_pods=plan.worker_pods,
        clean_pod_policy=run.clean_pod_policy if run is not None else "Running",
        warnings=tuple(plan.warnings),
        gang_min_member=gang.min_member if gang is not None else None,
        anchor=("ConfigMap", plan.names.assets),
        suspend=run.suspend if run is not None else False,
        ttl_seconds_after_finished=run.ttl_seconds_after_finished if run is not None else None,
    )


def _queued_mpijob(parsed: MpiJobPlan, options: GraphOptions) -> JobDefinition:
    """A Kueue-queued MPIJob: one JobSet (:mod:`trainjobs.kinds.mpi.queued`), whose
    controller makes the Jobs ``<job>-launcher-0`` and ``<job>-worker-<i>`` and ends them."""
    from trainjobs.core.jobset import child_job_name
    from trainjobs.kinds.mpi import graph as mpi_graph
    from trainjobs.kinds.mpi.queued import LAUNCHER, WORKER

    plan = parsed.graph
    workers = sum(group.replicas for group in plan.workers)
    return JobDefinition(
        kind=plan.flavour.kind,
        name=plan.names.job,
        namespace=plan.namespace,
        graph=mpi_graph.build_graph(plan, options),
        success_jobs=(child_job_name(plan.names.job, LAUNCHER, 0),),
        workers=[],
        worker_pods=[child_job_name(plan.names.job, WORKER, i) for i in range(workers)],
        clean_pod_policy=parsed.run.clean_pod_policy,
        warnings=tuple(plan.warnings),
        anchor=("ConfigMap", plan.names.assets),
        suspend=parsed.run.suspend,
        ttl_seconds_after_finished=parsed.run.ttl_seconds_after_finished,
        queued=True,
    )


def _replica_definition(plan: ReplicaJobPlan) -> JobDefinition:
    from trainjobs.core.replica_graph import as_queued, build_replica_graph

    plan = as_queued(plan)
    queued = is_queued(plan.labels)
    deciding = {
        plan.groups_by_type[plan.success.type].name(plan.job, index)
        for index in plan.success.indexes
    }
    # A suspended job's StatefulSets are created at 0 replicas; their declared size is the
    # one a run restores.
    workloads = [
        Workload(
            "StatefulSet" if group.restart.pod == "Always" else "Job",
            group.name(plan.job, index),
            1,
        )
        for group in plan.groups
        for index in range(group.replicas)
    ]
    deciding_group = plan.groups_by_type[plan.success.type]
    return JobDefinition(
        kind=plan.kind,
        name=plan.job,
        namespace=plan.namespace,
        graph=build_replica_graph(plan),
        success_jobs=tuple(sorted(deciding, key=[w.name for w in workloads].index)),
        # A JobSet deletes its still-active Jobs itself once it has finished.
        workers=[] if queued else [w for w in workloads if w.name not in deciding],
        worker_pods=[w.name for w in workloads if w.name not in deciding],
        success_any=plan.success.any,
        clean_pod_policy=plan.run.clean_pod_policy,
        warnings=tuple(plan.warnings),
        gang_min_member=plan.gang.min_member if plan.gang is not None else None,
        anchor=("Service", deciding_group.name(plan.job, plan.success.indexes[0])),
        suspend=plan.run.suspend,
        ttl_seconds_after_finished=plan.run.ttl_seconds_after_finished,
        elastic_min_members=plan.success.min_members,
        elastic_restart_never=plan.success.any and deciding_group.restart.policy == "Never",
        queued=queued,
    )


def _tensorflow(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.tensorflow import spec as tensorflow_spec

    return _replica_definition(tensorflow_spec.parse(document, source, namespace, options))


def _pytorch(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.pytorch import spec as pytorch_spec

    return _replica_definition(pytorch_spec.parse(document, source, namespace, options))


def _trainjob(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.trainjob import job as trainjob

    plan = trainjob.parse(document, source, namespace, options)
    # Trainer's JobSet is run by the JobSet controller, which ends its Jobs itself.
    return JobDefinition(
        kind="TrainJob",
        name=plan.name,
        namespace=plan.namespace,
        graph=plan.graph,
        success_jobs=plan.success_jobs,
        workers=[],
        worker_pods=list(plan.other_jobs),
        success_any=plan.success_any,
        warnings=tuple(plan.warnings),
        gang_min_member=plan.pods if plan.gang else None,
        anchor=("ConfigMap", trainjob.anchor_name(plan.name)),
        suspend=plan.suspend and not plan.kueue,
        queued=True,
    )


def _chainer_set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.chainer import spec as chainer_spec

    return chainer_spec.set_paths(document)


def _tensorflow_set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.tensorflow import spec as tensorflow_spec

    return tensorflow_spec.set_paths(document)


def _pytorch_set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.pytorch import spec as pytorch_spec

    return pytorch_spec.set_paths(document)


def _mpijob_set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.mpijob import spec as mpijob_spec

    return mpijob_spec.set_paths(document)


def _trainjob_set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.trainjob import spec as trainjob_spec

    return trainjob_spec.set_paths(document)


Parser = Callable[[dict[str, Any], str, str, GraphOptions], JobDefinition]


@dataclass(frozen=True)
class Kind:
    """One job kind: how its documents are parsed, and where `--set` writes in them."""

    parse: Parser
    set_paths: Callable[[dict[str, Any]], SetPaths]


KINDS: dict[str, Kind] = {
    "ChainerJob": Kind(_chainer, _chainer_set_paths),
    "TFJob": Kind(_tensorflow, _tensorflow_set_paths),
    "PyTorchJob": Kind(_pytorch, _pytorch_set_paths),
    "MPIJob": Kind(_mpijob, _mpijob_set_paths),
    "TrainJob": Kind(_trainjob, _trainjob_set_paths),
}
"""Each kind's parser and `--set` paths; a kind's spec models (pydantic classes, costly to
build) are imported when a spec of that kind is read, not for every command."""


def set_paths(document: dict[str, Any]) -> SetPaths | None:
    """Where `--set` writes in ``document``, or None when it is no job of a known kind (which
    parsing refuses). A List (a TrainJob with its runtimes) has the paths of its one job."""
    if document.get("kind") == "List":
        items = document.get("items")
        jobs = [
            (index, item)
            for index, item in enumerate(items if isinstance(items, list) else [])
            if isinstance(item, dict) and item.get("kind") in KINDS
        ]
        if len(jobs) != 1:
            return None
        index, job = jobs[0]
        found = set_paths(job)
        return found.under(("items", index)) if found is not None else None
    kind = document.get("kind")
    entry = KINDS.get(kind) if isinstance(kind, str) else None
    return entry.set_paths(document) if entry is not None else None


def parse_job(
    document: dict[str, Any],
    source: str,
    namespace: str = "default",
    options: GraphOptions | None = None,
) -> JobDefinition:
    document = _single_item(document, source)
    kind = document.get("kind")
    if kind == "List":  # a TrainJob and the training runtimes given beside it
        kind = "TrainJob"
    if kind in RUNTIME_KINDS:
        raise SpecError(
            source,
            [
                Problem(
                    "kind",
                    f"a {kind} is a training runtime, not a job: put it beside the TrainJob "
                    "whose runtimeRef names it, in that TrainJob's file (YAML documents "
                    "separated by ---)",
                )
            ],
        )
    entry = KINDS.get(kind) if isinstance(kind, str) else None
    if entry is None:
        raise SpecError(
            source, [Problem("kind", f"must be one of {', '.join(KINDS)} (got {kind!r})")]
        )
    job = entry.parse(document, source, namespace, options or GraphOptions())
    # Every kind's final pod templates, whatever was added to them after the spec's checks.
    warnings = list(job.warnings)
    check_graph(job.graph, source, warnings)
    return replace(job, warnings=tuple(warnings)) if len(warnings) > len(job.warnings) else job


def _single_item(document: dict[str, Any], source: str) -> dict[str, Any]:
    """A ``kind: List`` of one job (``kubectl get ... -o yaml``) is that job, as for kubectl."""
    if document.get("kind") != "List":
        return document
    items = document.get("items")
    if not isinstance(items, list):
        raise SpecError(
            source,
            [
                Problem(
                    "items", f"must be a list of job documents (got {items!r}): one job per file"
                )
            ],
        )
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SpecError(
                source, [Problem(f"items[{index}]", f"must be a mapping (got {item!r})")]
            )
    if any(isinstance(item, dict) and item.get("kind") in RUNTIME_KINDS for item in items):
        return _with_runtimes(items, source, document)
    if len(items) == 1:
        return items[0]
    raise SpecError(
        source,
        [
            Problem(
                "items", f"a List must hold exactly one job (got {len(items)}): one job per file"
            )
        ],
    )


def _with_runtimes(items: list[Any], source: str, document: dict[str, Any]) -> dict[str, Any]:
    """A TrainJob given with its training runtimes: the List, which the TrainJob parser reads."""
    jobs = [i for i in items if not (isinstance(i, dict) and i.get("kind") in RUNTIME_KINDS)]
    if len(jobs) == 1 and isinstance(jobs[0], dict) and jobs[0].get("kind") == "TrainJob":
        return document
    kinds = [i.get("kind") if isinstance(i, dict) else None for i in jobs]
    raise SpecError(
        source,
        [
            Problem(
                "items",
                f"training runtimes ({', '.join(sorted(RUNTIME_KINDS))}) go beside exactly one "
                f"TrainJob (got {kinds!r}): one job per file",
            )
        ],
    )


def load_job(
    path: str | Path, namespace: str = "default", options: GraphOptions | None = None
) -> JobDefinition:
    return parse_job(load_file(path), str(path), namespace, options)
