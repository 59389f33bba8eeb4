"""The NVIDIA device plugin DaemonSet a GPU pool runs, so that nodes advertise nvidia.com/gpu."""

from __future__ import annotations

from trainjobs.cloud.scheduling import GPU_TAINT_KEY, POOL_LABEL
from trainjobs.core.graph import Manifest
from trainjobs.core.labels import MANAGED_BY

DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"


DEVICE_PLUGIN_NAMESPACE = "kube-system"


DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"


def device_plugin_daemonset(pool: str, image: str) -> Manifest:
    """The NVIDIA device plugin for one pool, as plain data.

    It registers with the kubelet through the socket directory it mounts, then advertises
    each node's GPUs as ``nvidia.com/gpu``: without it GPU pods stay Pending on AL2023
    nodes. It must tolerate the pool's own GPU taint, and runs as ``system-node-critical``
    so the kubelet never evicts it to make room for a training pod.
    """
    selector = {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": pool,
    }
    labels = {**selector, "app.kubernetes.io/managed-by": MANAGED_BY}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": f"nvidia-device-plugin-{pool}",
            "namespace": DEVICE_PLUGIN_NAMESPACE,
            "labels": labels,
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {POOL_LABEL: pool},
                    "tolerations": [
                        {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "priorityClassName": "system-node-critical",
                    # The plugin talks to the kubelet's socket only, never to the API server.
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "nvidia-device-plugin",
                            "image": image,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "device-plugin", "mountPath": DEVICE_PLUGIN_DIR}
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "device-plugin",
                            "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"},
                        }
                    ],
                },
            },
        },
    }
