"""PaddleJob as a kind of the registry: how its documents are read, and its public names."""

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
    from trainjobs.kinds.paddlejob import spec
    from trainjobs.kinds.replica.definition import replica_definition

    return replica_definition(spec.parse(document, source, namespace, options))


def set_paths(document: dict[str, Any]) -> SetPaths:
    from trainjobs.kinds.paddlejob import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from trainjobs.kinds.paddlejob import spec

    return spec.SPEC_MODELS


KIND = Kind(
    name="PaddleJob",
    api_version="kubeflow.org/v1",
    plural="paddlejobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={
        "PaddleJob": "trainjobs.kinds.paddlejob.component",
        "PaddleJobSpec": "trainjobs.kinds.paddlejob.component",
    },
    spec_class="PaddleJobSpec",
)
