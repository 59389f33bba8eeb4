"""EchoJob as a kind of the registry."""

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
    from tests.toykind import spec

    return spec.parse(document, source, namespace, options)


def set_paths(document: dict[str, Any]) -> SetPaths:
    from tests.toykind import spec

    return spec.set_paths(document)


def spec_models() -> Mapping[str, type[BaseModel]]:
    from tests.toykind import spec

    return {"v1": spec.EchoJobSpec}


KIND = Kind(
    name="EchoJob",
    api_version="kubeflow.org/v1",
    plural="echojobs",
    parse=parse,
    set_paths=set_paths,
    spec_models=spec_models,
    exports={"EchoJob": "tests.toykind.component", "EchoJobSpec": "tests.toykind.spec"},
    spec_class="EchoJobSpec",
)
