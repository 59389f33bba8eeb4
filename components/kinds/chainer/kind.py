"""ChainerJob as a kind of the registry: how its documents are read, and its public names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import GraphOptions
from trainjobs.core.jobset import QUEUE_LABEL, is_queued
from trainjobs.core.set_paths import SetPaths
from trainjobs.kinds.kind import JobDefinition, Kind

if TYPE_CHECKING:
    from pydantic import BaseModel

SPEC = "trainjobs.kinds.chainer.spec"


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.chainer import spec
    from trainjobs.kinds.mpi.definition import mpi_graph_definition

    plan = spec.parse(document, source, namespace)
    if is_queued(plan.labels):
        raise SpecError(
            source,
            [
                Problem(
                    f"metadata.labels.{QUEUE_LABEL}",
                    "a ChainerJob cannot be queued by Kueue as one unit (its workers are a "
                    "StatefulSet, which Kueue would admit apart from the master's Job); remove "
                    "the label (TFJobs and PyTorchJobs can be queued)",
                )
            ],
        )
    return mpi_graph_definition(plan, options)


def set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.chainer import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from trainjobs.kinds.chainer import spec

    return {"v1alpha1": spec.ChainerJobSpec}


KIND = Kind(
    name="ChainerJob",
    api_version="kubeflow.org/v1alpha1",
    plural="chainerjobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={
        "ChainerJob": "trainjobs.kinds.chainer.component",
        "ChainerJobSpec": SPEC,
        "MasterSpec": SPEC,
        "WorkerSpec": SPEC,
        "MpiConfig": SPEC,
    },
    spec_class="ChainerJobSpec",
)
