"""The standard TensorFlow server of a TFJob v1alpha1 parameter server given no template.

The design doc's example ends its replica list with ``tfReplicaType: PS`` and nothing else:
the operator ran a stock TensorFlow gRPC server for it, from the job's ``tfImage``. Here that
server is a small script in the job's assets ConfigMap, started with the job's ``tfImage``
(else the stack's ``trainjobs:tensorflowServerImage``, else a pinned official TensorFlow 1.15
image, the last TensorFlow 1, which ``v1alpha1``-era jobs ran). It serves the task TF_CONFIG
names, so it works for every TensorFlow from 1.x to 2.x.
"""

from __future__ import annotations

from trainjobs.core.graph import Manifest
from trainjobs.core.replica_graph import ASSETS_DIR, ASSETS_VOLUME

DEFAULT_IMAGE = "tensorflow/tensorflow:1.15.5-py3"
SCRIPT = "tf_server.py"

SERVER_SCRIPT = '''"""A standard TensorFlow server for the task TF_CONFIG describes."""
import json
import os

import tensorflow as tf

config = json.loads(os.environ["TF_CONFIG"])
task = config["task"]
Server = getattr(tf.distribute, "Server", None) or tf.train.Server
server = Server(
    tf.train.ClusterSpec(config["cluster"]),
    job_name=task["type"],
    task_index=task["index"],
    protocol="grpc",
)
print("TensorFlow server: %s %s at %s" % (task["type"], task["index"], server.target), flush=True)
server.join()
'''


def server_template(job: str, image: str, container: str, port_name: str, port: int) -> Manifest:
    """The pod template of a parameter server the spec left to the operator."""
    return {
        "spec": {
            "containers": [
                {
                    "name": container,
                    "image": image,
                    "command": ["python", f"{ASSETS_DIR}/{SCRIPT}"],
                    "ports": [{"name": port_name, "containerPort": port}],
                    "volumeMounts": [
                        {"name": ASSETS_VOLUME, "mountPath": ASSETS_DIR, "readOnly": True}
                    ],
                }
            ],
            "volumes": [
                {
                    "name": ASSETS_VOLUME,
                    "configMap": {"name": f"{job}-assets", "defaultMode": 0o444},
                }
            ],
        }
    }
