"""The provider's schema is the spec models': every field of every registered kind's latest
spec model is an input, with the model's description, and nothing the models do not say."""

from __future__ import annotations

import json
import typing
from typing import Any

from pydantic import BaseModel
from pydantic.alias_generators import to_camel

from tests.conftest import REPO
from trainjobs.kinds.registry import KINDS

SCHEMA_FILE = REPO / "provider" / "schema.json"


def _models(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for argument in typing.get_args(annotation) for model in _models(argument)]


def missing_fields(types: dict[str, Any]) -> list[str]:
    """``Type.field`` for each field of the kinds' spec models that ``types`` lacks."""
    missing: list[str] = []
    seen: set[type[BaseModel]] = set()

    def visit(model: type[BaseModel], name: str) -> None:
        if model in seen:
            return
        seen.add(model)
        properties = types.get(f"trainjobs:index:{name}", {}).get("properties", {})
        for field_name, field in model.model_fields.items():
            if to_camel(field_name) not in properties:
                missing.append(f"{name}.{to_camel(field_name)}")
            for nested in _models(field.annotation):
                visit(nested, f"{nested.__name__}Args")

    for kind in KINDS.values():
        *_, latest = kind.spec_models().values()
        visit(latest, f"{kind.spec_class}Args")
    return missing


def test_every_field_of_every_kinds_spec_model_is_in_the_schema():
    served = json.loads(SCHEMA_FILE.read_text())
    assert missing_fields(served["types"]) == []


def test_a_field_missing_from_the_schema_is_named():
    types = json.loads(SCHEMA_FILE.read_text())["types"]
    del types["trainjobs:index:RunPolicyArgs"]["properties"]["managedBy"]
    assert missing_fields(types) == ["RunPolicyArgs.managedBy"]


def test_the_schema_says_the_models_descriptions_and_no_default_they_do_not_have():
    types = json.loads(SCHEMA_FILE.read_text())["types"]
    restart = types["trainjobs:index:ReplicaSpecArgs"]["properties"]["restartPolicy"]
    # Each kind has its own default (a PyTorchJob's is OnFailure): the shared type names none.
    assert restart["description"] == (
        "Always, OnFailure, Never or ExitCode (1-127 fail the job, others are retried)."
    )
    managed_by = types["trainjobs:index:RunPolicyArgs"]["properties"]["managedBy"]
    assert managed_by == {
        "description": "The controller of the job (Kueue's MultiKueue); informational here.",
        "plain": True,
        "type": "string",
    }
    backend = types["trainjobs:index:ChainerJobSpecArgs"]["properties"]["backend"]
    assert backend["description"] == "Communication backend. Only 'mpi' is supported. Default: mpi."
