"""The registry entry of a replica-typed kind, from its package and names.

The kind's ``<package>.spec`` reads its documents and ``<package>.component`` is its public
class; both are imported on first use, as every kind's are (:mod:`trainjobs.kinds.registry`)."""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from types import ModuleType
from typing import TYPE_CHECKING, Any

from trainjobs.core.graph import GraphOptions
from trainjobs.core.set_paths import SetPaths
from trainjobs.kinds.kind import JobDefinition, Kind

if TYPE_CHECKING:
    from pydantic import BaseModel


def replica_kind(name: str, plural: str, package: str, **more_exports: str) -> Kind:
    """The ``kubeflow.org/v1`` kind ``name``, exported as ``name`` and ``<name>Spec`` from
    ``<package>.component`` (and ``more_exports``: public name -> module)."""

    def spec() -> ModuleType:
        return importlib.import_module(f"{package}.spec")

    def parse(
        document: dict[str, Any], source: str, namespace: str, options: GraphOptions
    ) -> JobDefinition:
        from trainjobs.kinds.replica.definition import replica_definition

        return replica_definition(spec().parse(document, source, namespace, options))

    def set_paths(document: dict[str, Any]) -> SetPaths:
        paths: SetPaths = spec().set_paths(document)
        return paths

    def spec_models() -> Mapping[str, type[BaseModel]]:
        models: Mapping[str, type[BaseModel]] = spec().SPEC_MODELS
        return models

    component = f"{package}.component"
    return Kind(
        name=name,
        api_version="kubeflow.org/v1",
        plural=plural,
        parse=parse,
        set_paths=set_paths,
        spec_models=spec_models,
        exports={name: component, f"{name}Spec": component, **more_exports},
        spec_class=f"{name}Spec",
    )
