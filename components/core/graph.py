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
MPI_TRANSPORTS = ("kubectl", "ssh")
"""How a ChainerJob's master starts Open MPI's daemons in its workers (the first is the default)."""


@dataclass(frozen=True)
class GraphOptions:
    """Cluster-wide choices that are not part of a job spec (set per stack)."""

    kubectl_image: str = DEFAULT_KUBECTL_IMAGE
    """Image that delivers kubectl to the master; pin a mirror by digest in air-gapped clusters."""
    wait_timeout_seconds: int = DEFAULT_WAIT_TIMEOUT_SECONDS
    """How long the master's cluster waiter waits for every worker before failing."""
    gang_scheduler: str | None = None
    """``volcano`` or ``scheduler-plugins``: every TFJob and PyTorchJob gets a PodGroup its pods
    join (a job whose pods name ``schedulerName: volcano`` gets Volcano's without it)."""
    gang_scheduler_name: str | None = None
    """The pods' schedulerName for scheduler-plugins (default: its chart's second scheduler)."""
    mpi_transport: str = MPI_TRANSPORTS[0]
    """``kubectl``: through ``kubectl exec`` and the API server (KEP-141), with a Role that may
    exec into the workers; ``ssh``: through an sshd in every worker and a key made per job at
    deploy time, with no Role and no API token."""
    tensorflow_server_image: str | None = None
    """Image of the standard TensorFlow server a TFJob v1alpha1 parameter server without a
    template runs, when the job's own ``tfImage`` does not name one."""
    trainer_version: str | None = None
    """The Kubeflow Trainer release whose default runtimes a TrainJob's runtimeRef finds (a
    tag, ``v2.0.0`` on); None: the latest trainjobs has."""
    runtimes: tuple[tuple[dict[str, Any], str], ...] = ()
    """Training runtimes installed on the cluster apart from the jobs (each document and the
    file it came from): a TrainJob's runtimeRef finds them after those in its own file and
    before Trainer's released ones."""


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
