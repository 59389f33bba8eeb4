"""The environment each version of Kubeflow's PyTorchJob operator writes into every process.

- ``v1alpha1`` (pytorch-operator 0.1-0.3), on containers named ``pytorch``: TF_CONFIG,
  MASTER_PORT (that replica's port), MASTER_ADDR (``localhost`` on the master),
  WORLD_SIZE, RANK, PYTHONUNBUFFERED=0;
- ``v1alpha2`` to ``v1beta2`` (pytorch-operator 0.3-0.7), on every container: MASTER_PORT,
  MASTER_ADDR (``localhost`` on the master), WORLD_SIZE, RANK, PYTHONUNBUFFERED=0
  (``pkg/controller.v1*/pytorch/pod.go``, setClusterSpec);
- ``v1`` (training-operator 1.8-1.9, ``pkg/controller.v1/pytorch/envvar.go``, ``master.go``,
  ``elastic.go``), on every container, in this order: PYTHONUNBUFFERED=1; with a Master:
  MASTER_PORT, PET_MASTER_PORT, MASTER_ADDR and PET_MASTER_ADDR (``<job>-master-0``, on the
  master too), WORLD_SIZE (replicas x nprocPerNode when it is a number), RANK and
  PET_NODE_RANK; PET_NPROC_PER_NODE when nprocPerNode is set (defaulted to ``auto``); then
  with elasticPolicy the PET_RDZV_* variables torchrun reads, else PET_NNODES.

Ranks: the master is 0, worker ``i`` is ``i + 1``. Elastic jobs have no ranks: torchrun's
rendezvous assigns them.
"""

from __future__ import annotations

from dataclasses import dataclass

from trainjobs.core.bounds import parse_count
from trainjobs.core.graph import Manifest


@dataclass(frozen=True)
class Elastic:
    """``elasticPolicy`` after the operator's defaulting (min and max always both set)."""

    min_replicas: int
    max_replicas: int
    rdzv_backend: str
    rdzv_host: str
    rdzv_port: int
    rdzv_id: str | None = None
    rdzv_conf: tuple[tuple[str, str], ...] = ()
    standalone: bool = False
    max_restarts: int | None = None
    nproc_per_node: int | None = None
    """The deprecated ``elasticPolicy.nProcPerNode``."""


def _var(name: str, value: object) -> Manifest:
    return {"name": name, "value": str(value)}


def legacy_env(*, rank: int, master_addr: str, master_port: int, world_size: int) -> list[Manifest]:
    """``v1alpha2`` to ``v1beta2`` (and ``v1alpha1`` after its TF_CONFIG)."""
    return [
        _var("MASTER_PORT", master_port),
        _var("MASTER_ADDR", master_addr),
        _var("WORLD_SIZE", world_size),
        _var("RANK", rank),
        _var("PYTHONUNBUFFERED", 0),
    ]


def v1_env(
    *,
    job: str,
    rank: int | None,
    master_port: int | None,
    total_replicas: int,
    nproc_per_node: str | None,
    elastic: Elastic | None,
) -> list[Manifest]:
    """``v1``: ``rank`` and ``master_port`` are None when the job has no Master."""
    env = [_var("PYTHONUNBUFFERED", 1)]
    if rank is not None and master_port is not None:
        # training-operator's getNprocPerNodeInt (pkg/controller.v1/pytorch/envvar.go): Go's
        # strconv.Atoi, which reads ASCII digits, else 1 ('auto'; '\u00b2', which str.isdigit
        # takes and int refuses). A sign, which Atoi also reads, is no process count.
        counted = parse_count(nproc_per_node) if nproc_per_node else None
        nproc = 1 if counted is None else counted
        master = f"{job}-master-0"
        env += [
            _var("MASTER_PORT", master_port),
            _var("PET_MASTER_PORT", master_port),
            _var("MASTER_ADDR", master),
            _var("PET_MASTER_ADDR", master),
            _var("WORLD_SIZE", total_replicas * nproc),
            _var("RANK", rank),
            _var("PET_NODE_RANK", rank),
        ]
    if nproc_per_node is not None:
        env.append(_var("PET_NPROC_PER_NODE", nproc_per_node))
    if elastic is None:
        env.append(_var("PET_NNODES", total_replicas))
        return env
    env += [
        _var("PET_RDZV_ENDPOINT", f"{elastic.rdzv_host}:{elastic.rdzv_port}"),
        _var("PET_RDZV_BACKEND", elastic.rdzv_backend),
        _var("PET_NNODES", f"{elastic.min_replicas}:{elastic.max_replicas}"),
    ]
    if elastic.max_restarts is not None:
        env.append(_var("PET_MAX_RESTARTS", elastic.max_restarts))
    if elastic.nproc_per_node is not None:
        env.append(_var("PET_NPROC_PER_NODE", elastic.nproc_per_node))
    if elastic.rdzv_id is not None:
        env.append(_var("PET_RDZV_ID", elastic.rdzv_id))
    if elastic.rdzv_conf:
        env.append(_var("PET_RDZV_CONF", ",".join(f"{k}={v}" for k, v in elastic.rdzv_conf)))
    if elastic.standalone:
        # The operator writes an empty value, which torchrun's check_env reads as
        # int("") and rejects (torch/distributed/argparse_util.py): "1" is what it means.
        env.append(_var("PET_STANDALONE", 1))
    return env
