"""The base of every spec model, and pydantic's errors as field-path problems."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from trainjobs.core.errors import Problem


class OwnModel(BaseModel):
    """Base for trainjobs' own sections: camelCase on the wire, unknown fields are errors."""

    model_config = ConfigDict(
        extra="forbid", alias_generator=to_camel, populate_by_name=True, frozen=True
    )


class ObjectMeta(BaseModel):
    """The job's metadata. Kubernetes owns this section, so extra keys are kept, not rejected."""

    model_config = ConfigDict(extra="allow", frozen=True)

    name: str = Field(description="The job name; every object name is derived from it.")
    namespace: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)

    @field_validator("labels", "annotations", mode="before")
    @classmethod
    def _null_is_unset(cls, value: Any) -> Any:
        # The API server decodes a null map as a nil one (encoding/json, as apimachinery's
        # ObjectMeta is read): the object has no labels, which is no error.
        return {} if value is None else value


_PYDANTIC_MESSAGES = {
    "missing": "required field is missing",
    "extra_forbidden": "unknown field; check the spelling (allowed fields are in crds/)",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "string_type": "must be a string",
    "dict_type": "must be a mapping",
    "model_type": "must be a mapping",
    "bool_type": "must be true or false",
    "list_type": "must be a list",
}


def problem_from_pydantic(error: Any) -> Problem:
    path = _dotted(error["loc"])
    kind = error["type"]
    got = error.get("input")
    if kind == "value_error":
        message = str(error["ctx"]["error"])
    elif kind == "greater_than":
        message = f"must be greater than {error['ctx']['gt']} (got {got!r})"
    elif kind == "greater_than_equal":
        message = f"must be at least {error['ctx']['ge']} (got {got!r})"
    elif kind == "less_than_equal":
        message = f"must be at most {error['ctx']['le']} (got {got!r})"
    elif kind == "list_type" and isinstance(got, str) and error["loc"][-1] in ("command", "args"):
        # A command written as one string, as a shell would take it: YAML's list is the fix.
        message = (
            f"must be a list of strings (got {got!r}): write it as a YAML list, "
            f"e.g. {got.split()!r}"
        )
    elif kind == "extra_forbidden":
        message = f"unknown field {str(error['loc'][-1])!r}; check the spelling (see crds/)"
    elif kind in _PYDANTIC_MESSAGES:
        message = _PYDANTIC_MESSAGES[kind]
        if got is None and kind != "missing":
            message += " (got null): give a value, or remove the key"
        elif kind != "missing":
            message += f" (got {got!r})"
    else:
        message = error["msg"]
    return Problem(path, message)


def _dotted(loc: tuple[Any, ...]) -> str:
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else str(part)
    return path


def config_problem(error: Any) -> Problem:
    """A pydantic error as a Problem, with messages for the checks our config models add."""
    problem = problem_from_pydantic(error)
    if error["type"] == "literal_error":
        expected = error["ctx"]["expected"]
        return Problem(problem.path, f"must be {expected} (got {error['input']!r})")
    if error["type"] == "too_short":
        return Problem(problem.path, "at least one is required")
    return problem
