"""The environment training-operator v1.9 writes into every container of an XGBoostJob's pods.

``pkg/controller.v1/xgboost/xgboost.go`` (SetPodEnv), on every container, in this order:
MASTER_PORT (the Master's ``xgboostjob-port``), MASTER_ADDR (``<job>-master-0``), WORLD_SIZE
(all replicas), RANK (the Master's index; a Worker's index plus the Master count),
PYTHONUNBUFFERED=1, and with more than one replica WORKER_PORT (the Workers'
``xgboostjob-port``) and WORKER_ADDRS: ``<job>-worker-0`` up to ``<job>-worker-<WORLD_SIZE-2>``,
comma-separated (the operator lists one name fewer than the replicas, whatever the Worker
count).
"""

from __future__ import annotations

from trainjobs.core.graph import Manifest


def xgboost_env(
    *, job: str, rank: int, world_size: int, master_port: int, worker_port: int | None
) -> list[Manifest]:
    env: list[Manifest] = [
        {"name": "MASTER_PORT", "value": str(master_port)},
        {"name": "MASTER_ADDR", "value": f"{job}-master-0"},
        {"name": "WORLD_SIZE", "value": str(world_size)},
        {"name": "RANK", "value": str(rank)},
        {"name": "PYTHONUNBUFFERED", "value": "1"},
    ]
    if world_size > 1 and worker_port is not None:
        workers = ",".join(f"{job}-worker-{i}" for i in range(world_size - 1))
        env += [
            {"name": "WORKER_PORT", "value": str(worker_port)},
            {"name": "WORKER_ADDRS", "value": workers},
        ]
    return env
