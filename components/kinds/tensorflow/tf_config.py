"""TF_CONFIG, as Kubeflow sets it, for every process of a TFJob."""

from __future__ import annotations

import json
import shlex

from components.core.replica_graph import index_check_script
from components.core.replica_spec import ReplicaGroup

CLUSTER_ORDER = ("chief", "master", "ps", "worker")


def cluster_spec(
    job: str, namespace: str, groups: list[ReplicaGroup], port: int
) -> dict[str, list[str]]:
    """TF_CONFIG's `cluster`: every training replica's address, by lowercase type."""
    by_type = {g.type: g for g in groups}
    return {
        kind: [f"{host}.{job}.{namespace}.svc:{port}" for host in by_type[kind].hostnames]
        for kind in CLUSTER_ORDER
        if kind in by_type
    }


def bootstrap(cluster: dict[str, list[str]]) -> str:
    """Sets TF_CONFIG from the pod's replica type and index, then runs the command."""
    cluster_json = json.dumps(cluster, separators=(",", ":"))
    return (
        "#!/bin/sh\n"
        "# TF_CONFIG for this replica (Kubeflow format), then the training command.\n"
        "set -eu\n"
        + index_check_script()
        + 'type="${TRAINJOBS_REPLICA_TYPE:?set by trainjobs}"\n'
        + f"cluster={shlex.quote(cluster_json)}\n"
        + 'TF_CONFIG=$(printf \'{"cluster":%s,"task":{"type":"%s","index":%s},'
        '"environment":"cloud"}\' "$cluster" "$type" "$index")\n'
        + "export TF_CONFIG\n"
        + 'exec "$@"\n'
    )
