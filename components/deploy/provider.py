"""The component provider: every registered kind's job component for every Pulumi language.

``pulumi.provider.experimental`` (SDK 3.272) infers the package schema from the type
annotations of each component's ``args`` (a TypedDict) and its output attributes, and
constructs a component from the inputs a TypeScript, Go, C# or YAML program sends
(``pulumi/provider/experimental/analyzer.py`` and ``component.py``). The components here are
the Python API's, one per kind of the registry, with ``args`` typed from the kind's spec
models in their latest version (:mod:`.provider_args`), field by field, with pod templates as
free-form objects. Jobs built through the provider are not watched: the completion watcher
is a Python dynamic resource, which only a Python program can create.

``python -m trainjobs.deploy.provider`` prints the schema (``provider/schema.json``).
"""

# No `from __future__ import annotations`: the analyzer reads these annotations at run time.
import json
import typing
from typing import Any, NotRequired

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult, Inputs
from pulumi.provider.server import ComponentInitError
from pydantic.alias_generators import to_camel

from trainjobs.core.version import PACKAGE, package_version
from trainjobs.deploy.provider_args import MODULE, args_module
from trainjobs.kinds.kind import Kind
from trainjobs.kinds.registry import KINDS

VERSION = package_version()


def wire(value: Any, annotation: Any) -> Any:
    """``value`` with the Python names of ``annotation``'s TypedDicts back in Kubeflow's
    camelCase; free-form objects (``dict[str, Any]``: pod templates) stay as they are."""
    origin = typing.get_origin(annotation)
    if origin is NotRequired:
        return wire(value, typing.get_args(annotation)[0])
    if origin is typing.Union:  # pulumi.Input[X]: X, or an Output the library refuses or keeps
        return wire(value, typing.get_args(annotation)[0])
    if typing.is_typeddict(annotation) and isinstance(value, dict):
        hints = typing.get_type_hints(annotation)
        return {to_camel(key): wire(item, hints.get(key, Any)) for key, item in value.items()}
    if origin is dict and isinstance(value, dict):
        item_type = typing.get_args(annotation)[1]
        return {key: wire(item, item_type) for key, item in value.items()}
    return value


def provider_component(kind: Kind, args_type: Any) -> type[pulumi.ComponentResource]:
    """``kind``'s public component as the provider constructs it: from one ``args`` mapping
    of Python names (the analyzer's), turned back into the spec's camelCase."""
    base = kind.component()
    # As written (pulumi.Input's forward reference to Output[T] does not evaluate again).
    spec_type = args_type.__annotations__["spec"]

    def __init__(
        self: Any, name: str, args: Any, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        settings: dict[str, Any] = {
            "namespace": args.get("namespace") or "default",
            "labels": args.get("labels"),
        }
        if kind.takes_runtimes:
            # Checked by the library as every argument is (a string is no list of documents).
            settings["runtimes"] = args.get("runtimes") or []
        base.__init__(self, name, wire(args["spec"], spec_type), **settings, opts=opts)

    __init__.__annotations__ = {
        "name": str,
        "args": args_type,
        "opts": pulumi.ResourceOptions | None,
        "return": None,
    }
    return type(
        kind.name, (base,), {"__init__": __init__, "__doc__": base.__doc__, "__module__": MODULE}
    )


def components() -> list[type[pulumi.ComponentResource]]:
    """What the provider hosts: a component per registered kind."""
    module = args_module(KINDS.values())
    return [
        provider_component(kind, getattr(module, f"{kind.name}Args")) for kind in KINDS.values()
    ]


class JobProvider(ComponentProvider):
    """The SDK's component provider, with a job the library refuses reported as invalid
    inputs: the provider host answers an ``InputPropertiesError`` with INVALID_ARGUMENT and
    its message, while any other error from a component's ``__init__`` (the library's
    ``RunError`` included) is shown with its Python stack (pulumi/provider/server.py,
    ``construct``)."""

    def construct(
        self,
        name: str,
        resource_type: str,
        inputs: Inputs,
        options: pulumi.ResourceOptions | None = None,
    ) -> ConstructResult:
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as error:
            if isinstance(error.inner, pulumi.RunError):
                raise InputPropertiesError(str(error.inner)) from None
            raise


def provider(version: str = VERSION) -> ComponentProvider:
    """The provider, its schema inferred from :func:`components` (default version: the
    package's)."""
    return JobProvider(components(), PACKAGE, None, version)


def schema(version: str = VERSION) -> dict[str, Any]:
    """The package schema the provider serves (`provider/schema.json`)."""
    served = provider(version).schema
    assert served is not None
    loaded: dict[str, Any] = json.loads(served)
    return loaded


if __name__ == "__main__":
    print(json.dumps(schema(), indent=2, sort_keys=True))
