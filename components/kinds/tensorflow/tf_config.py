"""TF_CONFIG, as each version of Kubeflow's TFJob operator writes it for every process.

The operator serialises a Go struct with encoding/json: compact, keys in the order cluster,
task, environment, the cluster map's keys sorted, each type's addresses in index order.

How the versions differ (read from tf-operator / training-operator at each release tag):

- which types the cluster lists: every type of the spec from ``v1`` on (training-operator
  1.1+ added evaluators); before, evaluators get a task but are left out of the cluster;
- the address of replica ``i`` of type ``t``: ``<job>-<t>-<i>:<port>`` in ``v1alpha1`` and
  ``v1alpha2`` (the Service name, resolved in the pod's own namespace), and
  ``<job>-<t>-<i>.<namespace>.svc:<port>`` from ``v1beta1`` on;
- ``enableDynamicWorker`` (``v1``): a sparse cluster, each worker knowing only itself and
  the parameter servers, and no ``environment``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

CLUSTER_TYPES_BEFORE_V1 = ("chief", "master", "ps", "worker")
"""Types the cluster lists before ``v1``: evaluators are not part of the training cluster."""


def address(job: str, replica_type: str, index: int, port: int, namespace: str | None) -> str:
    """A replica's address as TF_CONFIG names it: the Service of the same name."""
    host = f"{job}-{replica_type}-{index}"
    return f"{host}.{namespace}.svc:{port}" if namespace else f"{host}:{port}"


def cluster_spec(
    job: str,
    replicas: Mapping[str, tuple[int, int]],
    namespace: str | None,
    types: Sequence[str] | None = None,
) -> dict[str, list[str]]:
    """The ``cluster`` section: type -> addresses, for ``replicas`` (type -> (count, port)),
    limited to ``types`` when given."""
    return {
        replica_type: [address(job, replica_type, i, port, namespace) for i in range(count)]
        for replica_type, (count, port) in sorted(replicas.items())
        if types is None or replica_type in types
    }


def tf_config(cluster: Mapping[str, list[str]], task_type: str, index: int) -> str:
    return _json(
        {"cluster": cluster, "task": {"type": task_type, "index": index}, "environment": "cloud"}
    )


def sparse_tf_config(
    job: str,
    replicas: Mapping[str, tuple[int, int]],
    namespace: str,
    task_type: str,
    index: int,
) -> str:
    """``enableDynamicWorker``: a worker sees itself (keyed by its index) and every parameter
    server; a parameter server sees only itself (training-operator 1.7+ spells the key
    ``cluster``; earlier releases spelled it ``sparseCluster``)."""
    workers: dict[str, str] = {}
    parameter_servers: list[str] | None = []
    ps_count, ps_port = replicas.get("ps", (0, 0))
    if task_type == "worker":
        workers[str(index)] = address(job, "worker", index, replicas["worker"][1], namespace)
        # A job without parameter servers has no "ps" entry to copy: Go marshals it as null.
        parameter_servers = (
            [address(job, "ps", i, ps_port, namespace) for i in range(ps_count)]
            if "ps" in replicas
            else None
        )
    elif task_type == "ps":
        parameter_servers = [address(job, "ps", index, ps_port, namespace)]
    return _json(
        {
            "cluster": {"worker": workers, "ps": parameter_servers},
            "task": {"type": task_type, "index": index},
        }
    )


def _json(value: object) -> str:
    return json.dumps(value, separators=(",", ":"))
