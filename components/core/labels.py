"""Labels and object metadata that every object of a training job carries."""

from __future__ import annotations

from trainjobs.core.graph import Manifest

# Label keys. The app.kubernetes.io ones are Kubernetes' recommended labels; the
# training.kubeflow.org ones keep dashboards and scripts written for Kubeflow working.
JOB_NAME = "training.kubeflow.org/job-name"
REPLICA_TYPE = "training.kubeflow.org/replica-type"
REPLICA_INDEX = "training.kubeflow.org/replica-index"
JOB_ROLE = "training.kubeflow.org/job-role"
WORKER_SET = "trainjobs.io/worker-set"
MANAGED_BY = "trainjobs"


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
