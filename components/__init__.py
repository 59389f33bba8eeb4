"""trainjobs: distributed training jobs on Kubernetes as Pulumi infrastructure as code.

The public API, for a user's Pulumi program::

    from trainjobs import JobCompletion, TFJob, TFJobSpec, ReplicaSpec

Names load when first used (PEP 562), so ``import trainjobs`` stays cheap for the CLI
(`trainjobs validate` never loads Pulumi). Type checkers see the real names below.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    # For type checkers only: at run time the names load on first use, and ``__all__`` is
    # the registry's (so the imports below count as unused).
    # ruff: noqa: F401
    from trainjobs.cloud.gpu_pool import GpuNodePool
    from trainjobs.cloud.node_pool import GpuNodePoolConfig
    from trainjobs.cloud.scheduling import SchedulingProfile
    from trainjobs.core.graph import GraphOptions
    from trainjobs.core.replica_spec import ReplicaSpec, RunPolicy, SchedulingPolicy
    from trainjobs.deploy.completion import WatchSettings
    from trainjobs.deploy.component import TrainingJob
    from trainjobs.deploy.infra_stack import InfraStack
    from trainjobs.deploy.jobs import JobCompletion, KubeflowJob
    from trainjobs.images.cuda_image import CudaImage
    from trainjobs.kinds.chainer.component import ChainerJob
    from trainjobs.kinds.chainer.spec import ChainerJobSpec, MasterSpec, MpiConfig, WorkerSpec
    from trainjobs.kinds.mpijob.component import MPIJob, MPIJobSpec
    from trainjobs.kinds.pytorch.component import PyTorchJob, PyTorchJobSpec
    from trainjobs.kinds.pytorch.spec import ElasticPolicy
    from trainjobs.kinds.tensorflow.component import TFJob, TFJobSpec
    from trainjobs.kinds.trainjob.component import TrainJob
    from trainjobs.kinds.trainjob.spec import TrainJobSpec
    from trainjobs.local.api import (
        LocalRun,
        list_local_runs,
        local_run_logs,
        run_locally,
        start_local_run,
    )
    from trainjobs.local.history import RunRecord

_COMMON = {
    "KubeflowJob": "trainjobs.deploy.jobs",
    "JobCompletion": "trainjobs.deploy.jobs",
    "ReplicaSpec": "trainjobs.core.replica_spec",
    "RunPolicy": "trainjobs.core.replica_spec",
    "SchedulingPolicy": "trainjobs.core.replica_spec",
    "TrainingJob": "trainjobs.deploy.component",
    "WatchSettings": "trainjobs.deploy.completion",
    "GraphOptions": "trainjobs.core.graph",
    "SchedulingProfile": "trainjobs.cloud.scheduling",
    "InfraStack": "trainjobs.deploy.infra_stack",
    "GpuNodePool": "trainjobs.cloud.gpu_pool",
    "GpuNodePoolConfig": "trainjobs.cloud.node_pool",
    "CudaImage": "trainjobs.images.cuda_image",
    "LocalRun": "trainjobs.local.api",
    "start_local_run": "trainjobs.local.api",
    "run_locally": "trainjobs.local.api",
    "list_local_runs": "trainjobs.local.api",
    "local_run_logs": "trainjobs.local.api",
    "RunRecord": "trainjobs.local.history",
}
"""Public names that belong to no one kind -> the module that defines each."""


def _exports() -> dict[str, str]:
    """Every public name -> the module that defines it: :data:`_COMMON` and each registered
    kind's own (its component, its spec class and models)."""
    from trainjobs.kinds.registry import exports

    return {**_COMMON, **exports()}


def __getattr__(name: str) -> Any:
    if name == "__all__":  # from the registry, as the kinds' names are
        return sorted(_exports())
    module = _exports().get(name)
    if module is None:
        raise AttributeError(f"module 'trainjobs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_exports()})
