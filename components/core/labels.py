"""Labels and object metadata that every object of a training job carries."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `status` reads the label names without loading the graph
    from trainjobs.core.graph import Manifest

# Label keys. The app.kubernetes.io ones are Kubernetes' recommended labels; the
# training.kubeflow.org ones keep dashboards and scripts written for Kubeflow working.
JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
WORKER_SET = "trainjobs.io/worker-set"
MANAGED_BY = "trainjobs"


GROUP_NAME = "kubeflow.org"
"""The value of the operators' ``group-name`` label: the API group."""


@dataclass(frozen=True)
class OperatorLabels:
    """Pod labels the operators of a spec's version wrote before training-operator 1.6 kept
    only ``training.kubeflow.org/*``. Each field lists label keys by what their value is;
    a version served by several operators lists every key any of them wrote, so that
    affinity rules and selectors written for any of them match."""

    group: tuple[str, ...] = ()
    """Value ``kubeflow.org``."""
    job: tuple[str, ...] = ()
    """Value: the job's name."""
    replica_type: tuple[str, ...] = ()
    """Value: the replica type in lower case (``ps``, ``worker``), as the operators wrote it."""
    upper_type: tuple[str, ...] = ()
    """Value: the v1alpha1 replica type as written (``MASTER``, ``PS``, ``WORKER``)."""
    index: tuple[str, ...] = ()
    """Value: the replica index."""
    rank: tuple[str, ...] = ()
    """Value: the replica's rank (PyTorch v1alpha1: master 0, worker i is i+1)."""
    role: tuple[str, ...] = ()
    """Value ``master``, on the pods with the master role only."""
    empty: tuple[str, ...] = ()
    """Value ``""`` (v1alpha1's ``kubeflow.org`` marker)."""

    @property
    def per_index(self) -> tuple[str, ...]:
        """Keys whose value differs from one index of a replica type to the next."""
        return (*self.index, *self.rank, *self.role)

    def for_pod(
        self, job: str, replica_type: str, index: int, rank: int, master_role: bool
    ) -> dict[str, str]:
        labels = {key: "" for key in self.empty}
        labels |= {key: GROUP_NAME for key in self.group}
        labels |= {key: job for key in self.job}
        labels |= {key: replica_type.upper() for key in self.upper_type}
        labels |= {key: replica_type for key in self.replica_type}
        labels |= {key: str(index) for key in self.index}
        labels |= {key: str(rank) for key in self.rank}
        if master_role:
            labels |= {key: "master" for key in self.role}
        return labels


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


KUBEFLOW_COMMON_LABELS = OperatorLabels(
    group=("group-name",),
    job=("job-name",),
    replica_type=("replica-type",),
    index=("replica-index",),
    role=("job-role",),
)
"""The unprefixed labels kubeflow/common wrote for the kinds training-operator 1.3-1.5 ran,
besides ``training.kubeflow.org/*`` (1.6 and later write only the latter)."""
