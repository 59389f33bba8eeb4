"""The environment training-operator v1.9 writes into every container of a PaddleJob's pods.

``pkg/controller.v1/paddlepaddle/envvar.go`` (setPodEnv), on every container, in this order:
PYTHONUNBUFFERED=1, PADDLE_JOB_ID (the job's name), PADDLE_NNODES (all replicas), then
PADDLE_MASTER, the address where Paddle's launchers meet: the first pod of the Master (with a
Master: parameter-server mode) or else of the Workers (collective mode), at that replica's
``master`` port. That first pod gets its own IP (POD_IP_DUMMY from the downward API's
``status.podIP``, then ``$(POD_IP_DUMMY):<port>``, which the kubelet expands); the others get
``<job>-master-0:<port>`` or ``<job>-worker-0:<port>``. With a Master, the Master's pods also
get PADDLE_SERVER_NUM=1 and the Workers' PADDLE_TRAINER_NUM=1 (the operator's values, whatever
the replica counts).
"""

from __future__ import annotations

from trainjobs.core.graph import Manifest


def paddle_env(
    *, job: str, nodes: int, leader: str, port: int, first: bool, role: str | None
) -> list[Manifest]:
    """``leader``: the replica type whose first pod is the launchers' master; ``first``: this
    pod is that one; ``role``: ``master`` or ``worker`` in parameter-server mode, else None."""
    env: list[Manifest] = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PADDLE_JOB_ID", "value": job},
        {"name": "PADDLE_NNODES", "value": str(nodes)},
    ]
    if first:
        env += [
            {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "PADDLE_MASTER", "value": f"$(POD_IP_DUMMY):{port}"},
        ]
    else:
        env.append({"name": "PADDLE_MASTER", "value": f"{job}-{leader}-0:{port}"})
    if role == "master":
        env.append({"name": "PADDLE_SERVER_NUM", "value": "1"})
    elif role == "worker":
        env.append({"name": "PADDLE_TRAINER_NUM", "value": "1"})
    return env
