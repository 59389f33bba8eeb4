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
    from trainjobs.cloud.gpu_pool import GpuNodePool
    from trainjobs.cloud.node_pool import GpuNodePoolConfig
    from trainjobs.cloud.scheduling import SchedulingProfile
    from trainjobs.core.graph import GraphOptions
    from trainjobs.core.replica_spec import ReplicaSpec, RunPolicy, SchedulingPolicy
    from trainjobs.deploy.completion import WatchSettings
    from trainjobs.deploy.component import TrainingJob
    from trainjobs.deploy.infra_stack import InfraStack
    from trainjobs.deploy.jobs import (
        ChainerJob,
        JobCompletion,
        KubeflowJob,
        MPIJob,
        MPIJobSpec,
        PyTorchJob,
        PyTorchJobSpec,
        TFJob,
        TFJobSpec,
        TrainJob,
        TrainJobSpec,
    )
    from trainjobs.images.cuda_image import CudaImage
    from trainjobs.kinds.chainer.spec import ChainerJobSpec, MasterSpec, MpiConfig, WorkerSpec
    from trainjobs.kinds.pytorch.spec import ElasticPolicy
    from trainjobs.local.api import (
        LocalRun,
        list_local_runs,
        local_run_logs,
        run_locally,
        start_local_run,
    )
    from trainjobs.local.history import RunRecord

_EXPORTS = {
    "ChainerJob": "trainjobs.deploy.jobs",
    "TFJob": "trainjobs.deploy.jobs",
    "PyTorchJob": "trainjobs.deploy.jobs",
    "KubeflowJob": "trainjobs.deploy.jobs",
    "MPIJob": "trainjobs.deploy.jobs",
    "MPIJobSpec": "trainjobs.deploy.jobs",
    "JobCompletion": "trainjobs.deploy.jobs",
    "TFJobSpec": "trainjobs.deploy.jobs",
    "PyTorchJobSpec": "trainjobs.deploy.jobs",
    "TrainJob": "trainjobs.deploy.jobs",
    "TrainJobSpec": "trainjobs.deploy.jobs",
    "ChainerJobSpec": "trainjobs.kinds.chainer.spec",
    "MasterSpec": "trainjobs.kinds.chainer.spec",
    "WorkerSpec": "trainjobs.kinds.chainer.spec",
    "MpiConfig": "trainjobs.kinds.chainer.spec",
    "ElasticPolicy": "trainjobs.kinds.pytorch.spec",
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
"""Public name -> the module that defines it."""

__all__ = [
    "ChainerJob",
    "ChainerJobSpec",
    "CudaImage",
    "ElasticPolicy",
    "GpuNodePool",
    "GpuNodePoolConfig",
    "GraphOptions",
    "InfraStack",
    "JobCompletion",
    "KubeflowJob",
    "LocalRun",
    "MPIJob",
    "MPIJobSpec",
    "MasterSpec",
    "MpiConfig",
    "PyTorchJob",
    "PyTorchJobSpec",
    "ReplicaSpec",
    "RunPolicy",
    "RunRecord",
    "SchedulingPolicy",
    "SchedulingProfile",
    "TFJob",
    "TFJobSpec",
    "TrainJob",
    "TrainJobSpec",
    "TrainingJob",
    "WatchSettings",
    "WorkerSpec",
    "list_local_runs",
    "local_run_logs",
    "run_locally",
    "start_local_run",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'trainjobs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
