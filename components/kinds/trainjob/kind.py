"""TrainJob as a kind of the registry: how its documents are read, and its public names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from trainjobs.core.graph import GraphOptions
from trainjobs.core.set_paths import SetPaths
from trainjobs.kinds.kind import JobDefinition, Kind

if TYPE_CHECKING:
    from pydantic import BaseModel


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    from trainjobs.kinds.trainjob import job

    plan = job.parse(document, source, namespace, options)
    # Trainer's JobSet is run by the JobSet controller, which ends its Jobs itself.
    return JobDefinition(
        kind="TrainJob",
        name=plan.name,
        namespace=plan.namespace,
        graph=plan.graph,
        success_jobs=plan.success_jobs,
        workers=[],
        worker_pods=list(plan.other_jobs),
        success_any=plan.success_any,
        warnings=tuple(plan.warnings),
        gang_min_member=plan.min_member if plan.gang else None,
        anchor=("ConfigMap", job.anchor_name(plan.name)),
        suspend=plan.suspend and not plan.kueue,
        queued=True,
    )


def set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.trainjob import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from trainjobs.kinds.trainjob import spec

    return {"v1alpha1": spec.TrainJobSpec}


KIND = Kind(
    name="TrainJob",
    api_version="trainer.kubeflow.org/v1alpha1",
    plural="trainjobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={
        "TrainJob": "trainjobs.kinds.trainjob.component",
        "TrainJobSpec": "trainjobs.kinds.trainjob.spec",
    },
    spec_class="TrainJobSpec",
    takes_runtimes=True,
    # Kubeflow Trainer ships the TrainJob CRD; a second one would clash with it.
    crd=False,
)
