"""The provider's argument types, derived from each registered kind's spec models.

``pulumi.provider.experimental`` infers the package schema from the ``TypedDict`` a
component's ``args`` is annotated with, and reads each field's description from the class's
source (``inspect.getsource``; pulumi/provider/experimental/analyzer.py, ``get_docstring``).
So the types are written as Python source from the models (field by field: type, whether
required, description and default) and executed as a module whose source ``linecache``
serves: the schema is the models', with nothing written by hand to drift from them.
"""

from __future__ import annotations

import linecache
import sys
import types
import typing
from collections.abc import Iterable
from typing import Annotated, Any, Literal

from pydantic import BaseModel
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

from trainjobs.kinds.kind import Kind

MODULE = "trainjobs.deploy.generated_args"
"""The module the types live in (made by :func:`args_module`, no file of its own)."""

_SCALARS = {int: "int", str: "str", bool: "bool", float: "float"}


class _Writer:
    """Python source for the TypedDicts of some models, each after the ones it uses."""

    def __init__(self) -> None:
        self.names: dict[type[BaseModel], str] = {}
        self.used: dict[str, type[BaseModel]] = {}
        """Type name -> its model, to describe a field by its type's summary."""
        self.classes: list[str] = []

    def model(self, model: type[BaseModel], name: str | None = None) -> str:
        if model in self.names:
            return self.names[model]
        name = name or f"{model.__name__}Args"
        if name in self.used:  # two models of one name: the schema would show only one
            raise ValueError(f"two spec models make the provider type {name}")
        self.names[model] = name
        self.used[name] = model
        lines = [f"class {name}(TypedDict):", f"    {_literal(_summary(model))}"]
        for field_name, field in model.model_fields.items():
            if field.alias not in (None, to_camel(field_name)):
                raise ValueError(f"{model.__name__}.{field_name}: alias {field.alias!r}")
            written = self.annotation(field.annotation)
            about = _about(field) or _summary(self.used.get(written, model))
            if not field.is_required():
                written = f"NotRequired[{written}]"
            lines += [f"    {field_name}: {written}", f"    {_literal(about)}"]
        self.classes.append("\n".join(lines))
        return name

    def annotation(self, annotation: Any) -> str:
        origin = typing.get_origin(annotation)
        arguments = [a for a in typing.get_args(annotation) if a is not type(None)]
        if origin is Annotated:
            return self.annotation(arguments[0])
        if origin in (typing.Union, types.UnionType):
            # Optional[X] is X (absent is its default); a union of scalars takes any value.
            return self.annotation(arguments[0]) if len(arguments) == 1 else "Any"
        if origin is Literal:
            return _SCALARS[type(arguments[0])]
        if origin is list:
            return f"list[{self.annotation(arguments[0])}]"
        if origin is dict:
            return f"dict[str, {self.annotation(arguments[1])}]"
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            return self.model(annotation)
        if annotation in _SCALARS:
            return _SCALARS[annotation]
        return "Any"


def _summary(model: type[BaseModel]) -> str:
    return " ".join((model.__doc__ or model.__name__).split())


def _about(field: FieldInfo) -> str:
    """The field's description, with its default where the description does not say it."""
    about = " ".join((field.description or "").split())
    default = field.get_default(call_default_factory=True)
    if "Default" not in about and not field.is_required() and default not in (None, {}, []):
        about = f"{about} Default: {default}.".strip()
    return about


def _literal(text: str) -> str:
    return repr(text)


def args_source(kinds: Iterable[Kind]) -> str:
    """The module's source: for each kind, ``<Kind>Args`` (its ``spec`` in its latest version,
    ``namespace``, ``labels`` and, beside a job that takes them, ``runtimes``)."""
    writer = _Writer()
    for kind in kinds:
        *_, latest = kind.spec_models().values()
        spec = writer.model(latest, f"{kind.spec_class}Args")
        # Inputs, not plain: a program of any language may pass Outputs (the library takes
        # them where an object only carries the value, and refuses one where the graph
        # needs a plain value).
        fields = [
            f"    spec: Input[{spec}]",
            f"    {_literal(f'The {kind.name} spec, as in its YAML.')}",
            "    namespace: NotRequired[Input[str]]",
            '    "The job\'s namespace. Default: default."',
            "    labels: NotRequired[Input[dict[str, Input[str]]]]",
            '    "Labels of the job. Default: none."',
        ]
        if kind.takes_runtimes:
            runtimes = f"Training runtime documents beside the {kind.name}, as in its file."
            fields[2:2] = [
                "    runtimes: NotRequired[list[dict[str, Any]]]",
                f"    {_literal(f'{runtimes} Default: none.')}",
            ]
        head = [
            f"class {kind.name}Args(TypedDict):",
            f"    {_literal(f'The inputs of a {kind.name}.')}",
        ]
        writer.classes.append("\n".join([*head, *fields]))
    # Output: pulumi.Input names it by a forward reference.
    header = (
        "from typing import Any, NotRequired, TypedDict\n\nfrom pulumi import Input, Output\n\n\n"
    )
    return header + "\n\n\n".join(writer.classes) + "\n"


def args_module(kinds: Iterable[Kind]) -> types.ModuleType:
    """The module of :func:`args_source`, importable as :data:`MODULE` and with its source
    where ``inspect.getsource`` looks for it."""
    source = args_source(kinds)
    filename = f"<{MODULE}>"
    linecache.cache[filename] = (len(source), None, source.splitlines(keepends=True), filename)
    module = types.ModuleType(MODULE)
    module.__file__ = filename
    sys.modules[MODULE] = module
    # dont_inherit: the annotations are evaluated, not left strings by this module's future import.
    exec(compile(source, filename, "exec", dont_inherit=True), module.__dict__)
    return module
