"""The JobDefinition of a replica-typed job (a Job or StatefulSet per replica index)."""

from __future__ import annotations

from trainjobs.core.jobset import is_queued
from trainjobs.core.replica_graph import as_queued, build_replica_graph
from trainjobs.core.replica_spec import ReplicaJobPlan
from trainjobs.kinds.kind import JobDefinition, Workload


def replica_definition(plan: ReplicaJobPlan) -> JobDefinition:
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
