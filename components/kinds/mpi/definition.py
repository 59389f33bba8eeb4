"""The JobDefinition of a job on the MPI graph (a ChainerJob, an unqueued MPIJob)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.kind import JobDefinition, Workload
from trainjobs.kinds.mpi import graph as mpi_graph

if TYPE_CHECKING:
    from trainjobs.core.replica_spec import RunSettings
    from trainjobs.kinds.mpi.plan import MpiPlan


def mpi_graph_definition(
    plan: MpiPlan, options: GraphOptions, run: RunSettings | None = None
) -> JobDefinition:
    """A ChainerJob or unqueued MPIJob: the master (launcher) Job decides, as every MPIJob
    operator rules (its Job's Complete or Failed); the workers are StatefulSets. ``run``: an
    MPIJob's runPolicy (a ChainerJob has none)."""
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
