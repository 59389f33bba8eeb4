"""The scheduling profile GPU pods need to land on a GPU pool, applied to a job's graph.

A pool is an EKS managed node group of NVIDIA GPU instances plus the NVIDIA device plugin
DaemonSet that makes the kubelet advertise ``nvidia.com/gpu``. Its nodes carry the taint
``nvidia.com/gpu=true:NoSchedule`` (so CPU pods never occupy a GPU machine) and the label
``trainjobs.io/gpu-pool=<pool>``.

What a GPU pod needs to run there is the pool's :class:`SchedulingProfile`: a plain value
(tolerations, nodeSelector, GPU resource name, GPUs per node) that the infrastructure stack
exports and job stacks read from their config. :func:`apply_scheduling` adds it to every pod
template of a job's graph that asks for GPUs, the way the TFJob design lets administrators
inject cluster-wide GPU defaults: job specs only say how many GPUs they want.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError

from trainjobs.core import quantity
from trainjobs.core.errors import ConfigError, Problem, UserError
from trainjobs.core.graph import Graph, Manifest, Node
from trainjobs.core.models import OwnModel, config_problem
from trainjobs.core.pod_template import GPU_RESOURCE

POOL_LABEL = "trainjobs.io/gpu-pool"
"""Node label naming the pool a node belongs to; GPU pods select their pool with it."""
GPU_TAINT_KEY = GPU_RESOURCE


class Toleration(OwnModel):
    """A Kubernetes toleration (core/v1 spelling: effect `NoSchedule`, not `NO_SCHEDULE`)."""

    key: str
    operator: Literal["Exists", "Equal"] = "Exists"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    def manifest(self) -> Manifest:
        return self.model_dump(by_alias=True, exclude_none=True)


class SchedulingProfile(OwnModel):
    """Where GPU pods of a pool must go and what they must tolerate to get there.

    The infrastructure stack exports it (:meth:`to_config`); a job stack names it in
    ``trainjobs:gpuPool`` (:meth:`from_config`). Plain data: no Pulumi outputs, so a job's
    graph is complete before anything is registered.
    """

    pool: str = Field(description="The pool's name (the value of the trainjobs.io/gpu-pool label).")
    gpu_resource: str = Field(
        default=GPU_RESOURCE, description="Extended resource GPU pods request in their limits."
    )
    gpus_per_node: int = Field(gt=0, description="GPUs on each node: the most one pod can get.")
    node_selector: dict[str, str] = Field(description="Added to GPU pods' nodeSelector.")
    tolerations: tuple[Toleration, ...] = Field(description="Added to GPU pods' tolerations.")
    instance_types: tuple[str, ...] = Field(
        default=(), description="The pool's EC2 instance types (for pre-flight checks)."
    )
    subnet_ids: tuple[str, ...] = Field(
        default=(), description="The pool's subnets (for pre-flight checks)."
    )

    def to_config(self) -> dict[str, Any]:
        """The wire form: camelCase, as stack outputs and stack config carry it."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def from_config(
        cls, value: str | dict[str, Any] | None, source: str = "trainjobs:gpuPool"
    ) -> SchedulingProfile | None:
        """Read a profile from stack config: an object, or its JSON (as the Pulumi CLI passes
        objects, and as `pulumi stack output schedulingProfiles --json` prints them)."""
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise ConfigError(
                    source, "GPU scheduling profile", [Problem("", f"not valid JSON: {error}")]
                ) from None
        if not isinstance(value, dict):
            raise ConfigError(
                source,
                "GPU scheduling profile",
                [Problem("", f"must be an object, the infra stack's profile (got {value!r})")],
            )
        try:
            return cls.model_validate(value)
        except ValidationError as error:
            problems = [config_problem(e) for e in error.errors()]
            raise ConfigError(source, "GPU scheduling profile", problems) from None


@dataclass(frozen=True)
class GpuPod:
    """A pod template of a graph that asks for GPUs."""

    workload: str
    """`Kind/name` of the object that holds the template."""
    gpus: int


def pod_template(manifest: Manifest) -> Manifest | None:
    """The pod template of a workload manifest (the manifest itself for a Pod), else None."""
    if manifest.get("kind") == "Pod":
        return manifest
    template = (manifest.get("spec") or {}).get("template")
    return template if isinstance(template, dict) and "spec" in template else None


def pod_gpus(pod_spec: Manifest, resource: str = GPU_RESOURCE) -> int:
    """GPUs a pod needs: its containers' together, or its largest init container's.

    Each container's limit counts (Kubernetes takes an extended resource's request from its
    limit); a request alone counts too. Extended resources are whole numbers: pod templates
    were checked as the API server checks them (:mod:`trainjobs.core.pod_rules`).
    """

    def count(container: Manifest) -> int:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(resource)
        if value is None:
            value = (resources.get("requests") or {}).get(resource)
        if value is None:
            return 0
        return quantity.whole_units(value)

    running = sum(count(c) for c in pod_spec.get("containers") or [])
    init = max((count(c) for c in pod_spec.get("initContainers") or []), default=0)
    return max(running, init)


def gpu_pods(graph: Graph, resource: str = GPU_RESOURCE) -> list[GpuPod]:
    """Every pod template of the graph that asks for GPUs, in graph order."""
    found = []
    for node in graph.nodes:
        template = pod_template(node.manifest)
        if template is None:
            continue
        gpus = pod_gpus(template["spec"], resource)
        if gpus > 0:
            found.append(GpuPod(node.key, gpus))
    return found


def apply_scheduling(graph: Graph, profile: SchedulingProfile) -> Graph:
    """A copy of ``graph`` whose GPU pods carry the pool's tolerations and nodeSelector.

    Only pod templates that ask for ``profile.gpu_resource`` change: CPU replicas (a TFJob's
    parameter servers, say) stay off the GPU nodes. What a user set wins: a nodeSelector key
    they chose keeps their value, and a toleration they already have is not added twice.
    A pod that asks for more GPUs than one node has would stay Pending forever: that is a
    :class:`UserError` naming every such pod.
    """
    too_big = [
        f"{graph.kind} {graph.job}: {pod.workload}: a pod requests {pod.gpus} "
        f"{profile.gpu_resource} but the nodes of GPU pool {profile.pool!r} have "
        f"{profile.gpus_per_node}; a pod runs on one node, so request at most "
        f"{profile.gpus_per_node} and add replicas instead"
        for pod in gpu_pods(graph, profile.gpu_resource)
        if pod.gpus > profile.gpus_per_node
    ]
    if too_big:
        raise UserError("\n".join(too_big))
    scheduled = Graph(job=graph.job, kind=graph.kind, namespace=graph.namespace)
    for node in graph.nodes:
        manifest = copy.deepcopy(node.manifest)
        template = pod_template(manifest)
        if template is not None and pod_gpus(template["spec"], profile.gpu_resource) > 0:
            pod = template["spec"]
            pod["nodeSelector"] = {**profile.node_selector, **(pod.get("nodeSelector") or {})}
            tolerations = list(pod.get("tolerations") or [])
            for toleration in profile.tolerations:
                wanted = toleration.manifest()
                if wanted not in tolerations:
                    tolerations.append(wanted)
            pod["tolerations"] = tolerations
        scheduled.nodes.append(Node(manifest, node.depends_on))
    return scheduled
