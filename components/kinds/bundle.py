"""A job's bundle: the other objects a ``kubectl apply`` of its file would create beside it.

Copied examples carry what their job needs in the same file (an etcd Service and Deployment
for PyTorch's rendezvous, a DRA ComputeDomain before an MPIJob). Each such companion becomes
a node of the job's graph, placed before the job's own objects, which all depend on it: the
cluster gets it first, as ``kubectl apply -f`` creates a file's objects in order.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from trainjobs.core.errors import Problem, SpecError, written
from trainjobs.core.graph import Graph, Manifest, Node
from trainjobs.kinds.kind import JobDefinition

CLUSTER_SCOPED = frozenset(
    {
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "DeviceClass",
        "IngressClass",
        "Namespace",
        "PersistentVolume",
        "PriorityClass",
        "RuntimeClass",
        "StorageClass",
    }
)
"""Built-in kinds that live in no namespace: kubectl apply gives them none, whatever its
``--namespace`` (kubectl's RESTMapper reads the scope from discovery; offline, only these
built-in ones are known, and any other kind is taken as namespaced, as custom resources such
as ComputeDomain are)."""

CUSTOM_RESOURCE_FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")
"""What pulumi-kubernetes' ``apiextensions.CustomResource`` carries of an object it has no
class for (sdk/python/pulumi_kubernetes/apiextensions/CustomResource.py: ``api_version``,
``kind``, ``metadata``, ``spec``); ``status`` is the server's, never applied."""

DEPLOYED_CLASSES = frozenset(
    {
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "Service"),
        ("v1", "ServiceAccount"),
        ("v1", "PersistentVolumeClaim"),
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSet"),
        ("batch/v1", "Job"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
    }
)
"""The objects the job's component deploys with their own pulumi-kubernetes class (which
takes every field); any other is a CustomResource (:data:`CUSTOM_RESOURCE_FIELDS`)."""


def check_companion(
    item: dict[str, Any], index: int, source: str, job_kinds: dict[str, list[str]]
) -> None:
    """A companion must be a Kubernetes object kubectl could create: apiVersion, kind and
    metadata.name strings; one deployed as a CustomResource holds nothing it would drop.
    ``job_kinds``: API group -> the job kinds read from it; any other kind of those groups
    is a misspelt or retired job, never an object to deploy."""
    where = f"items[{index}]"
    kind = item.get("kind")
    problems: list[Problem] = []
    api_version = item.get("apiVersion")
    group = api_version.split("/", 1)[0] if isinstance(api_version, str) else None
    if group in job_kinds:
        raise SpecError(
            source,
            [
                Problem(
                    f"{where}.kind",
                    f"{written(kind)} is no {group} kind trainjobs reads (one of "
                    f"{', '.join(job_kinds[group])}): a file holds one job and the objects "
                    "it needs",
                )
            ],
        )
    for key in ("apiVersion", "kind"):
        if not isinstance(item.get(key), str) or not item[key]:
            problems.append(
                Problem(
                    f"{where}.{key}",
                    f"required: a Kubernetes object beside the job needs its {key} "
                    f"({written(item.get(key))})",
                )
            )
    metadata = item.get("metadata")
    name = metadata.get("name") if isinstance(metadata, dict) else None
    if not isinstance(name, str) or not name:
        problems.append(
            Problem(
                f"{where}.metadata.name",
                f"required: the name {kind if isinstance(kind, str) else 'the object'} is "
                f"created under ({written(name)})",
            )
        )
    namespace = metadata.get("namespace") if isinstance(metadata, dict) else None
    if namespace is not None and (not isinstance(namespace, str) or not namespace):
        problems.append(
            Problem(
                f"{where}.metadata.namespace",
                f"must be a namespace's name ({written(namespace)}); leave it out for the "
                "job's namespace",
            )
        )
    if not problems and (item["apiVersion"], kind) not in DEPLOYED_CLASSES:
        for key in sorted(set(item) - set(CUSTOM_RESOURCE_FIELDS)):
            problems.append(
                Problem(
                    f"{where}.{key}",
                    f"{kind} {name!r} is deployed as a pulumi-kubernetes CustomResource, "
                    "which carries only metadata and spec; create it apart from the job "
                    "(kubectl apply)",
                )
            )
    if problems:
        raise SpecError(source, problems)


def companion_manifest(item: dict[str, Any], namespace: str) -> Manifest:
    """The object as kubectl apply with the job's namespace creates it: in that namespace
    unless it names its own (or is cluster-scoped), without the server's ``status``."""
    manifest = {key: value for key, value in item.items() if key != "status"}
    metadata = dict(manifest["metadata"])
    if "namespace" not in metadata and manifest["kind"] not in CLUSTER_SCOPED:
        metadata["namespace"] = namespace
    manifest["metadata"] = metadata
    return manifest


def with_companions(
    job: JobDefinition, companions: list[tuple[int, dict[str, Any]]], source: str
) -> JobDefinition:
    """The job with its companions first in its graph, every job object depending on them."""
    if not companions:
        return job
    graph = Graph(job.graph.job, job.graph.kind, job.graph.namespace)
    for index, item in companions:
        manifest = companion_manifest(item, job.namespace)
        key = f"{manifest['kind']}/{manifest['metadata']['name']}"
        if any(node.key == key for node in [*graph.nodes, *job.graph.nodes]):
            raise SpecError(
                source,
                [
                    Problem(
                        f"items[{index}].metadata.name",
                        f"{key} is given twice, or is one the {job.kind} creates itself; rename it",
                    )
                ],
            )
        graph.add(manifest)
    first = tuple(node.key for node in graph.nodes)
    graph.nodes += [Node(node.manifest, (*first, *node.depends_on)) for node in job.graph.nodes]
    return replace(job, graph=graph, companions=first)
