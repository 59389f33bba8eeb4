"""A job's description for the completion watcher, from its definition: rules, workers, run.

Pure: the Pulumi program hands the result to the watcher and writes it on the job's anchor
object (see :mod:`trainjobs.cluster.target`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from trainjobs.cluster.rules import CompletionRules, Elastic
from trainjobs.cluster.scaling import WorkerRef
from trainjobs.cluster.target import WatchTarget
from trainjobs.kinds.registry import JobDefinition

WORKLOAD_KINDS = ("Job", "StatefulSet", "JobSet")

_NOT_THE_RUN = {
    "Job": ("suspend", "ttlSecondsAfterFinished"),
    "StatefulSet": ("replicas",),
    "JobSet": ("suspend", "ttlSecondsAfterFinished"),
}
"""Workload fields that say when or how long a run runs, not what runs: the watcher owns
them (suspension, the TTL, the workers' live size), so they are not part of its identity."""


def run_key(job: JobDefinition) -> str:
    """The identity of the job's run: a hash of its workloads as declared (pod templates,
    completions, policies, the workers' declared sizes). The same spec is the same run;
    any change to what runs is a new one."""
    workloads: list[Any] = []
    for node in job.graph.nodes:
        if node.kind not in WORKLOAD_KINDS or node.key in job.companions:
            continue  # the objects beside the job (an etcd Deployment) are not its run
        spec = {
            key: value
            for key, value in node.manifest.get("spec", {}).items()
            if key not in _NOT_THE_RUN[node.kind]
        }
        workloads.append([node.kind, node.name, spec])
    workloads.append([[w.kind, w.name, w.replicas] for w in job.workers])
    text = json.dumps(workloads, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def watch_target(job: JobDefinition, *, gated: bool) -> WatchTarget:
    """What the watcher needs to see ``job`` through. ``gated``: its Jobs are created
    suspended and only the watcher starts a run (the stack watches, and no JobSet
    controller owns the Jobs)."""
    worker_jobs = (
        tuple(job.worker_pods)
        if job.queued
        else tuple(w.name for w in job.workers if w.kind == "Job")
    )
    elastic = (
        Elastic(job.elastic_min_members, job.elastic_restart_never)
        if job.elastic_min_members is not None
        else None
    )
    return WatchTarget(
        namespace=job.namespace,
        name=job.name,
        kind=job.kind,
        rules=CompletionRules(
            job.completion_job, job.success_jobs, worker_jobs, job.success_any, elastic
        ),
        workers=tuple(WorkerRef(w.kind, w.name, w.replicas) for w in job.workers),  # type: ignore[arg-type]
        clean_pod_policy=job.clean_pod_policy,
        suspend=job.suspend,
        run=run_key(job),
        anchor=job.anchor,
        gated=gated and not job.queued,
        ttl_seconds_after_finished=job.ttl_seconds_after_finished,
        jobset=job.name if job.queued else None,
    )
