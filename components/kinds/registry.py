"""The registry of job kinds: any spec document in, one JobDefinition out.

The Pulumi program, the CLI and the local runtime all go through here, so adding a kind
means adding one entry to :data:`KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core.documents import load_file
from components.core.errors import Problem, SpecError
from components.core.graph import Graph, GraphOptions
from components.core.replica_graph import build_replica_graph
from components.core.replica_spec import ReplicaJobPlan
from components.kinds.chainer import graph as chainer_graph
from components.kinds.chainer import spec as chainer_spec
from components.kinds.pytorch import spec as pytorch_spec
from components.kinds.tensorflow import spec as tensorflow_spec


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
    completion_job: str
    """The batch/v1 Job whose Complete or Failed condition is the job's outcome."""
    workers: list[Workload]
    """Everything else that runs: scaled to 0 when the outcome is known."""
    worker_pods: list[str]


def _chainer(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    plan = chainer_spec.parse(document, source, namespace)
    return JobDefinition(
        kind=chainer_spec.KIND,
        name=plan.names.job,
        namespace=plan.namespace,
        graph=chainer_graph.build_graph(plan, options),
        completion_job=plan.names.master,
        workers=[
            Workload("StatefulSet", group.statefulset, group.replicas) for group in plan.workers
        ],
        worker_pods=plan.worker_pods,
    )


def _replica_definition(plan: ReplicaJobPlan) -> JobDefinition:
    deciding = plan.deciding_group
    others = [group for group in plan.groups if group is not deciding]
    return JobDefinition(
        kind=plan.kind,
        name=plan.job,
        namespace=plan.namespace,
        graph=build_replica_graph(plan),
        completion_job=deciding.workload,
        workers=[
            Workload("StatefulSet" if group.long_running else "Job", group.workload, group.replicas)
            for group in others
        ],
        worker_pods=[host for group in others for host in group.hostnames],
    )


Parser = Callable[[dict[str, Any], str, str, GraphOptions], JobDefinition]

KINDS: dict[str, Parser] = {
    chainer_spec.KIND: _chainer,
    tensorflow_spec.KIND: lambda d, s, n, _: _replica_definition(tensorflow_spec.parse(d, s, n)),
    pytorch_spec.KIND: lambda d, s, n, _: _replica_definition(pytorch_spec.parse(d, s, n)),
}


def parse_job(
    document: dict[str, Any],
    source: str,
    namespace: str = "default",
    options: GraphOptions | None = None,
) -> JobDefinition:
    kind = document.get("kind")
    parser = KINDS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise SpecError(
            source, [Problem("kind", f"must be one of {', '.join(KINDS)} (got {kind!r})")]
        )
    return parser(document, source, namespace, options or GraphOptions())


def load_job(
    path: str | Path, namespace: str = "default", options: GraphOptions | None = None
) -> JobDefinition:
    return parse_job(load_file(path), str(path), namespace, options)
