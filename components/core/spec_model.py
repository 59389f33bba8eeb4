"""The base of Kubeflow spec models: what the real API accepts is accepted, unknown fields warn.

Kubeflow's API servers never refused an unknown field of a job: before structural CRDs
(training-operator 1.3) they stored it, after that they prune it, and either way the operator
ignores it. So an unknown field is a warning that names it and says it has no effect, never
an error; a close match to a real field is suggested, since that is usually a typo.

Releases before ``v1`` were decoded by Go's encoding/json, which matches field names without
regard to case (``ReplicaType`` and ``replicaType`` are the same field). Models of those
versions set ``case_insensitive`` so that specs written either way keep working here.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator
from pydantic.alias_generators import to_camel

from trainjobs.core.errors import Problem


class SpecModel(BaseModel):
    """A section of a Kubeflow job spec: camelCase on the wire, unknown fields kept aside."""

    model_config = ConfigDict(
        extra="allow",
        alias_generator=to_camel,
        populate_by_name=True,
        frozen=True,
        # Field docstrings become the descriptions of the generated CRDs.
        use_attribute_docstrings=True,
    )
    case_insensitive: ClassVar[bool] = False
    """Match field names without regard to case (Go's encoding/json, before ``v1``)."""

    @model_validator(mode="before")
    @classmethod
    def _args_as_mappings(cls, data: Any) -> Any:
        """A pulumi-kubernetes ``*Args`` object (a pod template) read as its mapping, with
        the Kubernetes field names; what it holds is read when the job is built."""
        if not isinstance(data, dict):
            return data
        return {key: _mapping_of_args(value) for key, value in data.items()}

    @model_validator(mode="before")
    @classmethod
    def _canonical_field_names(cls, data: Any) -> Any:
        if not cls.case_insensitive or not isinstance(data, dict):
            return data
        names = {_wire_name(cls, name).lower(): _wire_name(cls, name) for name in cls.model_fields}
        renamed: dict[Any, Any] = {}
        for key, value in data.items():
            canonical = names.get(key.lower(), key) if isinstance(key, str) else key
            # A spec that spells one field two ways keeps the exact spelling's value.
            if canonical in renamed and key != canonical:
                continue
            renamed[canonical] = value
        return renamed


def _mapping_of_args(value: Any) -> Any:
    """``value``, or its mapping when it is a Pulumi input type (``*Args``): such a value
    exists only once a program imported pulumi, which converts it as it serializes one."""
    if getattr(type(value), "_pulumi_input_type", False):
        return sys.modules["pulumi._types"].input_type_to_dict(value)
    return value


def known_fields(model: BaseModel) -> dict[str, Any]:
    """``model`` on the wire (camelCase, defaults left out) without the fields it does not
    know, at any depth: what an API server serving it with a structural schema keeps, since it
    prunes unknown fields (k8s.io/apiextensions-apiserver ``pkg/apiserver/schema/pruning``)."""
    dumped = model.model_dump(by_alias=True, exclude_defaults=True)
    _prune(model, dumped)
    return dumped


def _prune(value: Any, dumped: Any) -> None:
    if isinstance(value, BaseModel) and isinstance(dumped, dict):
        for key in value.model_extra or {}:
            dumped.pop(key, None)
        for name in type(value).model_fields:
            wire = _wire_name(type(value), name)
            if wire in dumped:
                _prune(getattr(value, name), dumped[wire])
    elif isinstance(value, list | tuple) and isinstance(dumped, list):
        for item, out in zip(value, dumped, strict=False):
            _prune(item, out)
    elif isinstance(value, dict) and isinstance(dumped, dict):
        for key, item in value.items():
            if key in dumped:
                _prune(item, dumped[key])


def _wire_name(model: type[BaseModel], name: str) -> str:
    field = model.model_fields[name]
    return field.alias or name


def unknown_fields(model: BaseModel, path: str, schema: str) -> list[Problem]:
    """A warning for every field of ``model`` (and its nested sections) that ``schema`` (e.g.
    ``TFJob kubeflow.org/v1``) does not have, with a suggestion when a real name is close."""
    return [_warning(section, key, where, schema) for section, key, where in _extras(model, path)]


def _extras(model: BaseModel, path: str) -> Iterator[tuple[BaseModel, str, str]]:
    for key in model.model_extra or {}:
        yield model, str(key), f"{path}.{key}" if path else str(key)
    for name in type(model).model_fields:
        value = getattr(model, name)
        where = f"{path}.{_wire_name(type(model), name)}" if path else _wire_name(type(model), name)
        yield from _nested(value, where)


def _nested(value: Any, where: str) -> Iterator[tuple[BaseModel, str, str]]:
    if isinstance(value, BaseModel):
        yield from _extras(value, where)
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _nested(item, f"{where}.{key}")
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _nested(item, f"{where}[{index}]")


def _warning(section: BaseModel, key: str, where: str, schema: str) -> Problem:
    known = [_wire_name(type(section), name) for name in type(section).model_fields]
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.75)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return Problem(
        where,
        f"not a field of {schema}: Kubeflow's API server keeps or drops it and its operator "
        f"ignores it, so it has no effect here{hint}",
    )
