"""A job's resource graph: Kubernetes manifests as plain data plus the order they need.

Every consumer (Pulumi components, offline preview, local runtime) reads this one structure;
none rebuilds it. Builders are pure: spec in, :class:`Graph` out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Manifest = dict[str, Any]

DEFAULT_KUBECTL_IMAGE = "registry.k8s.io/kubectl:v1.34.2"
DEFAULT_WAIT_TIMEOUT_SECONDS = 600

# Label keys. The app.kubernetes.io ones are Kubernetes' recommended labels; the
# training.kubeflow.org ones keep dashboards and scripts written for Kubeflow working.
JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
JOB_ROLE = "training.kubeflow.org/job-role"
WORKER_SET = "trainjobs.io/worker-set"
MANAGED_BY = "trainjobs"


@dataclass(frozen=True)
class GraphOptions:
    """Cluster-wide choices that are not part of a job spec (set per stack)."""

    kubectl_image: str = DEFAULT_KUBECTL_IMAGE
    """Image that delivers kubectl to the master; pin a mirror by digest in air-gapped clusters."""
    wait_timeout_seconds: int = DEFAULT_WAIT_TIMEOUT_SECONDS
    """How long the master's cluster waiter waits for every worker before failing."""


@dataclass(frozen=True)
class Node:
    """One Kubernetes object and the keys of the nodes that must exist before it."""

    manifest: Manifest
    depends_on: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return str(self.manifest["kind"])

    @property
    def name(self) -> str:
        return str(self.manifest["metadata"]["name"])

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"


@dataclass
class Graph:
    """Nodes in creation order (every node comes after its dependencies)."""

    job: str
    kind: str
    namespace: str
    nodes: list[Node] = field(default_factory=list)

    def add(self, manifest: Manifest, *depends_on: Node) -> Node:
        node = Node(manifest, tuple(dep.key for dep in depends_on))
        known = {existing.key for existing in self.nodes}
        missing = [key for key in node.depends_on if key not in known]
        if missing:
            raise ValueError(f"{node.key} depends on nodes not yet in the graph: {missing}")
        if node.key in known:
            raise ValueError(f"duplicate node {node.key}")
        self.nodes.append(node)
        return node

    def get(self, key: str) -> Node:
        return next(node for node in self.nodes if node.key == key)

    def manifests(self) -> list[Manifest]:
        return [node.manifest for node in self.nodes]


def common_labels(job: str, kind: str, component: str, user: dict[str, str]) -> dict[str, str]:
    """The labels on every object of a job. Ours win over the user's on the same key."""
    return {
        **user,
        "app.kubernetes.io/name": kind.lower(),
        "app.kubernetes.io/instance": job,
        "app.kubernetes.io/component": component,
        "app.kubernetes.io/managed-by": MANAGED_BY,
        JOB_NAME: job,
    }


def metadata(
    name: str, namespace: str, labels: dict[str, str], annotations: dict[str, str] | None = None
) -> Manifest:
    meta: Manifest = {"name": name, "namespace": namespace, "labels": labels}
    if annotations:
        meta["annotations"] = annotations
    return meta


def with_env(container: Manifest, env: list[Manifest]) -> None:
    """Append env vars the user has not set: an explicit user value is an intended override."""
    existing = container.setdefault("env", [])
    taken = {item.get("name") for item in existing}
    existing.extend(dict(item) for item in env if item["name"] not in taken)
