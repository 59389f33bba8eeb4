"""XGBoostJob as a kind of the registry: how its documents are read, and its public names."""

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
    from trainjobs.kinds.replica.definition import replica_definition
    from trainjobs.kinds.xgboostjob import spec

    return replica_definition(spec.parse(document, source, namespace, options))


def set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.xgboostjob import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from trainjobs.kinds.xgboostjob import spec

    return spec.SPEC_MODELS


KIND = Kind(
    name="XGBoostJob",
    api_version="kubeflow.org/v1",
    plural="xgboostjobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={
        "XGBoostJob": "trainjobs.kinds.xgboostjob.component",
        "XGBoostJobSpec": "trainjobs.kinds.xgboostjob.component",
    },
    spec_class="XGBoostJobSpec",
)
