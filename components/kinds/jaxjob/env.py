"""The environment training-operator v1.9 writes into every container of a JAXJob's pods.

``pkg/controller.v1/jax/envvar.go`` (setPodEnv), on every container, in this order:
PYTHONUNBUFFERED=1, COORDINATOR_PORT (the Workers' ``jaxjob-port``), COORDINATOR_ADDRESS
(``<job>-worker-0``), NUM_PROCESSES (all replicas) and PROCESS_ID (the Worker's index): what
``jax.distributed.initialize`` takes.
"""

from __future__ import annotations

from trainjobs.core.graph import Manifest


def jax_env(*, job: str, port: int, processes: int, process_id: int) -> list[Manifest]:
    return [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "COORDINATOR_PORT", "value": str(port)},
        {"name": "COORDINATOR_ADDRESS", "value": f"{job}-worker-0"},
        {"name": "NUM_PROCESSES", "value": str(processes)},
        {"name": "PROCESS_ID", "value": str(process_id)},
    ]
