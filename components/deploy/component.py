"""A training job as a Pulumi ComponentResource whose children are its graph's nodes.

A graph node becomes the matching pulumi-kubernetes resource, parented to the component,
with the graph's edges as ``depends_on``. Options that only matter to Pulumi live here,
not in the graph: await behaviour, ignore_changes, replacement order.
"""

from __future__ import annotations

import re
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.cluster.scaling import WorkerRef
from components.core.graph import Manifest, Node
from components.deploy.completion import JobCompletion, JobCompletionArgs, WatchSettings
from components.deploy.ssh_key import ssh_secret_data
from components.kinds.chainer import ssh_assets
from components.kinds.registry import JobDefinition

# pulumi-kubernetes waits for a Job to complete (10 minutes by default, then fails the
# update) and for a StatefulSet's replicas to be ready. Training outlives both; the
# completion watcher waits for the Job instead, and the master's init container waits
# for the workers.
SKIP_AWAIT = {"pulumi.com/skipAwait": "true"}

_RESOURCE_CLASSES: dict[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource_options(
    node: Node, parent: pulumi.Resource, depends_on: list[pulumi.Resource], workers: set[str]
) -> pulumi.ResourceOptions:
    """The Pulumi options a node needs beyond its manifest.

    The completion watcher owns the size of worker workloads once they exist: it stops them
    when the job ends and restores them when a new run starts. Pulumi must ignore that
    size, or a later `pulumi up --refresh` would see the drift and revive idle workers (and
    for a Job, a changed parallelism would even replace it).
    """
    ignore_changes: list[str] = []
    if node.kind == "StatefulSet":
        ignore_changes.append("spec.replicas")
    elif node.kind == "Job" and node.name in workers:
        ignore_changes.append("spec.parallelism")
    return pulumi.ResourceOptions(
        parent=parent,
        depends_on=depends_on,
        ignore_changes=ignore_changes or None,
        # A JobSet's replicated Jobs are immutable (its webhook refuses an update), which
        # pulumi-kubernetes knows nothing of for a custom resource: any change replaces it.
        replace_on_changes=["spec"] if node.kind == "JobSet" else None,
        # A Job's pod template is immutable: a changed job is a new Job with the same name,
        # so the old one must go first.
        delete_before_replace=node.kind in ("Job", "JobSet"),
    )


def pulumi_manifest(node: Node) -> Manifest:
    """The manifest as registered with Pulumi: the graph's, plus skipAwait where needed."""
    manifest = dict(node.manifest)
    if node.kind in ("Job", "StatefulSet"):
        meta = dict(manifest["metadata"])
        meta["annotations"] = {**meta.get("annotations", {}), **SKIP_AWAIT}
        manifest["metadata"] = meta
    return manifest


class TrainingJob(pulumi.ComponentResource):
    """A training job's resource graph as one Pulumi component, typed
    `trainjobs:index:<Kind>` (ChainerJob, TFJob or PyTorchJob)."""

    namespace: pulumi.Output[str]
    master_job_name: pulumi.Output[str]
    worker_pod_names: pulumi.Output[list[str]]
    resources: dict[str, pulumi.CustomResource]

    completion: JobCompletion | None

    def __init__(
        self,
        job: JobDefinition,
        watch: WatchSettings | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        """``watch``: settings for the completion watcher; None or ``watch=False`` for none."""
        super().__init__(f"trainjobs:index:{job.kind}", job.name, None, opts)
        self.resources = {}
        # Workloads whose size the watcher owns. With worker Jobs (TF/PyTorch), a worker's
        # failure makes the watcher stop the completion Job too.
        workers = {worker.name for worker in job.workers}
        if any(worker.kind == "Job" for worker in job.workers):
            workers.add(job.completion_job)
        for node in job.graph.nodes:
            manifest = pulumi_manifest(node)
            kwargs: dict[str, Any] = {
                _snake(key): value
                for key, value in manifest.items()
                if key not in ("apiVersion", "kind")
            }
            resource_class = _RESOURCE_CLASSES.get((manifest["apiVersion"], manifest["kind"]))
            if resource_class is None:
                # A custom resource (a gang scheduler's PodGroup): typed by apiVersion and kind.
                resource_class = k8s.apiextensions.CustomResource
                kwargs.update(api_version=manifest["apiVersion"], kind=manifest["kind"])
            if node.kind == "Secret" and manifest.get("type") == ssh_assets.SECRET_TYPE:
                # The ssh transport's key pair: made here, never part of the pure graph.
                kwargs["data"] = ssh_secret_data(job.name, self)
            depends_on = [self.resources[key] for key in node.depends_on]
            self.resources[node.key] = resource_class(
                node.name, opts=resource_options(node, self, depends_on, workers), **kwargs
            )
        self.completion = None
        if watch is not None and watch.watch:
            self.completion = self._watch(job, watch)
        self.namespace = pulumi.Output.from_input(job.namespace)
        self.master_job_name = pulumi.Output.from_input(job.completion_job)
        self.worker_pod_names = pulumi.Output.from_input(job.worker_pods)
        self.register_outputs(
            {
                "namespace": self.namespace,
                "master_job_name": self.master_job_name,
                "worker_pod_names": self.worker_pod_names,
            }
        )

    def _watch(self, job: JobDefinition, settings: WatchSettings) -> JobCompletion:
        """A watcher that starts once the master Job and the workers exist, and is replaced
        with the master Job (its uid changes), so every run is seen through. With worker
        Jobs (TFJob, PyTorchJob) it watches every Job of the job through their job-name
        label, so that a failed worker ends the job at once, as in Kubeflow."""
        from components.core.labels import JOB_NAME

        # A Kueue-queued job is one JobSet: its controller makes the Jobs, and a new JobSet
        # (a new uid) is a new run.
        jobset = self.resources.get(f"JobSet/{job.name}")
        master = jobset or self.resources[f"Job/{job.completion_job}"]
        workloads = [self.resources[f"{w.kind}/{w.name}"] for w in job.workers]
        has_worker_jobs = jobset is not None or any(w.kind == "Job" for w in job.workers)
        args = JobCompletionArgs.from_settings(
            settings,
            namespace=job.namespace,
            job_name=job.completion_job,
            workers=[WorkerRef(w.kind, w.name, w.replicas) for w in job.workers],  # type: ignore[arg-type]
            job_uid=master.metadata.apply(lambda meta: meta.get("uid") if meta else None),
            selector=f"{JOB_NAME}={job.name}" if has_worker_jobs else None,
        )
        return JobCompletion(
            f"{job.name}-completion",
            args,
            pulumi.ResourceOptions(parent=self, depends_on=[master, *workloads]),
        )
