"""MPIJob as a kind of the registry: how its documents are read, and its public names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainjobs.core.graph import GraphOptions
from trainjobs.core.set_paths import SetPaths
from trainjobs.kinds.kind import JobDefinition, Kind

if TYPE_CHECKING:
    from pydantic import BaseModel

    from trainjobs.kinds.mpijob.spec import MpiJobPlan


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.mpi.definition import mpi_graph_definition
    from trainjobs.kinds.mpijob import spec

    parsed = spec.parse(document, source, namespace, options)
    if parsed.graph.flavour.queued:
        return _queued(parsed, options)
    return mpi_graph_definition(parsed.graph, options, parsed.run)


def _queued(parsed: MpiJobPlan, options: GraphOptions) -> JobDefinition:
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


def set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.mpijob import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from trainjobs.kinds.mpijob import spec

    return spec.SPEC_MODELS


KIND = Kind(
    name="MPIJob",
    api_version="kubeflow.org/v2beta1",
    plural="mpijobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={
        "MPIJob": "trainjobs.kinds.mpijob.component",
        "MPIJobSpec": "trainjobs.kinds.mpijob.component",
    },
    spec_class="MPIJobSpec",
)
