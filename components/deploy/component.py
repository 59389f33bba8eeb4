"""A training job as a Pulumi ComponentResource whose children are its graph's nodes.

A graph node becomes the matching pulumi-kubernetes resource, parented to the component,
with the graph's edges as ``depends_on``. Options that only matter to Pulumi live here,
not in the graph: await behaviour, ignore_changes, replacement order.
"""

# No `from __future__ import annotations`: the component provider reads the outputs'
# annotations at run time (pulumi/provider/experimental/analyzer.py `analyze_type`).
import re
from collections.abc import Sequence
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from trainjobs.cluster.target import WATCH_ANNOTATION, WatchTarget
from trainjobs.core.graph import Manifest, Node
from trainjobs.core.jobset import QUEUE_LABEL
from trainjobs.deploy.placeholders import Placeholders, check_resolved
from trainjobs.deploy.ssh_key import ssh_secret_data
from trainjobs.deploy.watch_target import WORKLOAD_KINDS, watch_target
from trainjobs.kinds.mpi import ssh_assets
from trainjobs.kinds.registry import JobDefinition

# pulumi-kubernetes waits for a created Job to complete (10 minutes by default, then fails
# the update) and for a StatefulSet's replicas to be ready; training outlives both, and the
# completion watcher waits for the job instead. `pulumi.com/skipAwait` would skip those
# waits, but for Jobs and StatefulSets it also skips awaiting their deletion
# (pulumi-kubernetes provider/pkg/metadata/overrides.go, `DeletedCondition` and
# `allowsSkipAwaitWithDelete`): a replaced Job, deleted in the foreground, would still exist
# when its successor of the same name is created, which fails with AlreadyExists ("object is
# being deleted"; creates are not retried on it, await.go `Creation`). `pulumi.com/waitFor`
# replaces only the create/update await (`ReadyCondition`): waiting for the object's uid
# ends as soon as it exists, and deletions are still awaited until the object is gone.
WAIT_FOR = {"pulumi.com/waitFor": "jsonpath={.metadata.uid}"}

WORKLOAD_REPLACE_ON = ("metadata", "spec")
"""What replaces a Job or a JobSet when it changes: everything (``replaceOnChanges``).

A Job runs once, and pulumi-kubernetes cannot update one that is gone: its Update reads the
live object first and fails on NotFound (provider/pkg/await/await.go ``Update``), which is
what a Job removed by its ``ttlSecondsAfterFinished`` is until a refresh. A replacement
deletes first, and a delete of a Job that is gone succeeds (await.go ``Deletion``). So a
change of a label, an annotation, ``backoffLimit`` or ``activeDeadlineSeconds`` never fails,
and neither does one Kubernetes refuses to update (kubernetes pkg/apis/batch/validation
``ValidateJobSpecUpdate``: completionMode, podFailurePolicy, successPolicy...). A JobSet's
replicated Jobs are immutable too (its webhook refuses an update), and Kueue refuses a
change of its queue while it runs (kueue pkg/controller/jobframework/validation.go
``validateUpdateForQueueName``): a queued job moved to another queue is a new workload."""

KUEUE_OWNED = ("spec.suspend",)
"""What Kueue owns on a queued JobSet: it suspends it at creation and unsuspends it at
admission (kueue pkg/controller/jobframework/defaults.go ``ApplyDefaultForSuspend``,
reconciler.go), so a refresh must never compare it."""

# The classes :data:`trainjobs.kinds.bundle.DEPLOYED_CLASSES` lists (a test keeps them equal).
# Secret's class marks its data and stringData secret in inputs and outputs
# (pulumi_kubernetes/core/v1/Secret.py: `pulumi.Output.secret`, `additional_secret_outputs`),
# so a companion Secret's data never shows in the stack's state in the clear.
_RESOURCE_CLASSES: dict[tuple[str, str], type[pulumi.CustomResource]] = {
    ("v1", "ConfigMap"): k8s.core.v1.ConfigMap,
    ("v1", "Secret"): k8s.core.v1.Secret,
    ("v1", "ServiceAccount"): k8s.core.v1.ServiceAccount,
    ("v1", "Service"): k8s.core.v1.Service,
    ("v1", "PersistentVolumeClaim"): k8s.core.v1.PersistentVolumeClaim,
    ("apps/v1", "Deployment"): k8s.apps.v1.Deployment,
    ("rbac.authorization.k8s.io/v1", "Role"): k8s.rbac.v1.Role,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): k8s.rbac.v1.RoleBinding,
    ("apps/v1", "StatefulSet"): k8s.apps.v1.StatefulSet,
    ("batch/v1", "Job"): k8s.batch.v1.Job,
}


def _snake(key: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", key).lower()


def resource_options(
    node: Node, parent: pulumi.Resource, depends_on: Sequence[pulumi.Resource], gated: bool
) -> pulumi.ResourceOptions:
    """The Pulumi options a node needs beyond its manifest.

    The completion watcher owns what it changes on workloads: a StatefulSet's size (it
    stops workers when the job ends and restores them when a new run starts) and, when it
    gates the job's runs, every Job's ``spec.suspend``. Pulumi must ignore those, or a later
    `pulumi up --refresh` would see the drift and revive idle workers, and server-side apply
    would conflict with the watcher's field ownership (pulumi-kubernetes drops an ignored
    field another manager owns from its apply: await.go `handleSSAIgnoreFields`).
    """
    ignore_changes: list[str] = []
    if node.kind == "StatefulSet":
        ignore_changes.append("spec.replicas")
    elif node.kind == "Job" and gated:
        ignore_changes.append("spec.suspend")
    elif node.kind == "JobSet":
        ignore_changes += KUEUE_OWNED
    replace_on_changes = None
    if node.kind in ("Job", "JobSet"):
        replace_on_changes = list(WORKLOAD_REPLACE_ON)
    return pulumi.ResourceOptions(
        parent=parent,
        depends_on=depends_on,
        ignore_changes=ignore_changes or None,
        replace_on_changes=replace_on_changes,
        # A Job's pod template is immutable: a changed job is a new Job with the same name,
        # so the old one must go first (pulumi-kubernetes would also decide so for a fixed
        # name, provider.go `Diff`; saying it makes the preview exact).
        delete_before_replace=node.kind in ("Job", "JobSet"),
    )


def pulumi_manifest(node: Node, target: WatchTarget, *, gated: bool) -> Manifest:
    """The manifest as registered with Pulumi: the graph's, with what Pulumi and the
    watcher need.

    - Jobs and StatefulSets: ``pulumi.com/waitFor`` (see :data:`WAIT_FOR`).
    - ``gated`` Jobs are created suspended: the completion watcher starts each run, and
      does not start one that is recorded as ended (:mod:`trainjobs.cluster.record`).
    - ``ttlSecondsAfterFinished`` is left out: the watcher hands it to the Jobs once it has
      recorded the run's end, so no Job vanishes before then (and without a watcher, or
      for a JobSet, it is not applied: :func:`ttl_notices`).
    - The anchor object carries the job's description for the watcher
      (:data:`~trainjobs.cluster.target.WATCH_ANNOTATION`).
    """
    manifest = dict(node.manifest)
    meta = dict(manifest["metadata"])
    if node.kind in ("Job", "StatefulSet"):
        meta["annotations"] = {**meta.get("annotations", {}), **WAIT_FOR}
    if (node.kind, node.name) == target.anchor:
        meta["annotations"] = {
            **meta.get("annotations", {}),
            WATCH_ANNOTATION: target.to_annotation(),
        }
    manifest["metadata"] = meta
    if node.kind in ("Job", "JobSet"):
        spec = {k: v for k, v in manifest["spec"].items() if k != "ttlSecondsAfterFinished"}
        if node.kind == "Job" and gated:
            spec["suspend"] = True
        manifest["spec"] = spec
    return manifest


def ttl_notices(job: JobDefinition, *, watched: bool) -> list[str]:
    """Why a job's ttlSecondsAfterFinished is not applied, when it is not."""
    if job.ttl_seconds_after_finished is None:
        return []
    if job.queued:
        return [
            "runPolicy.ttlSecondsAfterFinished is not applied to a Kueue-queued job: when its "
            "JobSet is removed, `pulumi up --refresh` would create it again and Kueue would "
            "run the job again; the finished JobSet stays until `pulumi destroy`"
        ]
    if not watched:
        return [
            "runPolicy.ttlSecondsAfterFinished is not applied with trainjobs:watch false: "
            "once the TTL removed the Jobs, `pulumi up --refresh` would create them again and "
            "run the job again; with the watcher, the TTL is handed to the Jobs after the "
            "run's end is recorded"
        ]
    return []


def child_name(resource_name: str, job: str, name: str) -> str:
    """The resource name of the job's object ``name``: the object's name under the
    component's (a child's URN holds its parents' types, not their names, so children of two
    components need names of their own). The object's own name when the component is
    named as the job, as a stack's existing resources are."""
    if resource_name == job:
        return name
    if name.startswith(job):
        return resource_name + name[len(job) :]
    return f"{resource_name}-{name}"


class TrainingJob(pulumi.ComponentResource):
    """A training job's resource graph as one Pulumi component, typed
    `trainjobs:index:<Kind>`, one type per kind of the registry.

    ``name`` (default: the job's name): the resource name, Pulumi's, which the job's
    children's names follow; the objects keep the job's names. ``inputs``: the Outputs the
    job's arguments held, whose tokens its graph carries; they go back in place into its
    objects, checked when they resolve.
    ``watched``: the stack's completion watcher sees this job through (it is created by
    the program for every job of the stack at once, see :mod:`.completion`); the job's
    Jobs are then created suspended and the watcher starts each run.
    """

    # Only the outputs are annotated here: they are the component's outputs in the provider's
    # schema; the other attributes are set in __init__.
    name: pulumi.Output[str]
    """The job's name (its metadata.name; its objects' names start with it)."""
    namespace: pulumi.Output[str]
    """The job's namespace."""
    master_job_name: pulumi.Output[str]
    """The batch/v1 Job whose completion is the job's success (the first, if several)."""
    worker_pod_names: pulumi.Output[list[str]]
    """The pods of the job's other replicas."""

    def __init__(
        self,
        job: JobDefinition,
        *,
        name: str | None = None,
        inputs: Placeholders | None = None,
        watched: bool = True,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # The resource name is Pulumi's, the job's name Kubernetes': two jobs of one name in
        # two namespaces are two resources (a URN must be unique in the stack).
        resource_name = job.name if name is None else name
        super().__init__(f"trainjobs:index:{job.kind}", resource_name, None, opts)
        self._outcome: pulumi.Output[dict[str, Any] | None] = pulumi.Output.from_input(None)
        self.inputs = inputs or Placeholders(f"{job.kind} {resource_name}")
        """The Outputs the job was given, by the tokens that stand for them in its graph."""
        self.resources: dict[str, pulumi.CustomResource] = {}
        """The job's Kubernetes objects by graph key (`Kind/name`)."""
        self.job = job
        """The validated job the component was built from."""
        self.watched = watched
        gated = watched and not job.queued
        self.target: WatchTarget = watch_target(job, gated=gated)
        self.notices: list[str] = ttl_notices(job, watched=watched)
        """Things the program could not do as the spec says (logged as warnings)."""
        # Only Kueue would unsuspend a JobSet whatever its spec says (a TrainJob's JobSet
        # without a queue label is created suspended, as Trainer creates it).
        held = job.suspend and any(
            node.kind == "JobSet" and QUEUE_LABEL in (node.manifest["metadata"].get("labels") or {})
            for node in job.graph.nodes
        )
        if held:
            self.notices.append(
                "runPolicy.suspend: the JobSet of a Kueue-queued job is not created while its "
                "spec suspends it: Kueue would admit and unsuspend it whatever its spec says; "
                "set runPolicy.suspend to false (or remove it) to queue the job"
            )
        for node in job.graph.nodes:
            if held and node.kind == "JobSet":
                continue
            # The objects given beside the job (trainjobs.kinds.bundle) are the user's, as
            # kubectl apply would create them: none of the job's own treatment.
            companion = node.key in job.companions
            manifest = self.inputs.restore(
                node.manifest if companion else pulumi_manifest(node, self.target, gated=gated),
                check_resolved,
            )
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
            if (
                not companion
                and node.kind == "Secret"
                and manifest.get("type") == ssh_assets.SECRET_TYPE
            ):
                # The ssh transport's key pair: made here, never part of the pure graph.
                kwargs["data"] = ssh_secret_data(job.name, self, resource_name)
            depends_on = [self.resources[key] for key in node.depends_on if key in self.resources]
            options = (
                pulumi.ResourceOptions(parent=self, depends_on=depends_on)
                if companion
                else resource_options(node, self, depends_on, gated)
            )
            self.resources[node.key] = resource_class(
                child_name(resource_name, job.name, node.name), opts=options, **kwargs
            )
        self.name = pulumi.Output.from_input(job.name)
        self.namespace = pulumi.Output.from_input(self.inputs.restore(job.namespace))
        self.master_job_name = pulumi.Output.from_input(job.completion_job)
        self.worker_pod_names = pulumi.Output.from_input(job.worker_pods)
        self.register_outputs(
            {
                "name": self.name,
                "namespace": self.namespace,
                "master_job_name": self.master_job_name,
                "worker_pod_names": self.worker_pod_names,
            }
        )

    @property
    def outcome(self) -> pulumi.Output[dict[str, Any] | None]:
        """How the job's run ended, as the :class:`JobCompletion` that watches it records
        it (unknown until it ends); None for a job no watcher was given (read it after
        creating the watcher)."""
        return self._outcome

    def watched_by(self, outcome: pulumi.Output[dict[str, Any] | None]) -> None:
        """Called by the watcher given this job: ``outcome`` is its record of the job."""
        self._outcome = outcome

    def watch_description(self) -> pulumi.Input[dict[str, Any]]:
        """The job's description for the watcher, its Outputs in place."""
        return self.inputs.restore(self.target.to_dict())

    def watch_key(self) -> pulumi.Input[str]:
        """The key of the job's outcome in the watcher's (``namespace/name``)."""
        return self.inputs.restore(self.target.key)

    @property
    def anchor(self) -> list[pulumi.CustomResource]:
        """The object that carries the job's description for the watcher (none if not
        created). The watcher waits for it and for the workloads, whose uids it takes."""
        key = "/".join(self.target.anchor) if self.target.anchor else None
        return [self.resources[key]] if key in self.resources else []

    def uids(self) -> pulumi.Output[dict[str, str]]:
        """Each workload's uid by name: a workload Pulumi replaced has a new one, which tells
        the watcher that a new run may start."""
        workloads = {
            key.split("/", 1)[1]: resource
            for key, resource in self.resources.items()
            if key.split("/", 1)[0] in WORKLOAD_KINDS and key not in self.job.companions
        }
        # Each uid taken from its metadata by an apply of its own: combining the metadata
        # objects themselves would make the SDK lift every label and annotation into an Output.
        return pulumi.Output.all(
            **{
                name: resource.metadata.apply(lambda meta: (meta or {}).get("uid"))  # type: ignore[attr-defined]
                for name, resource in workloads.items()
            }
        )
