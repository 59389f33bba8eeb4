"""Names as a deployment gives them: the engine's URNs, and pulumi-kubernetes' auto-names.

The engine refuses a duplicate URN, and pulumi-kubernetes names the objects that have no name.
The SDK's mock monitor builds URNs from the parent's last type only, and keeps the later of two
registrations of one URN silently; the offline preview must see what a deployment would.
"""

from __future__ import annotations

import hashlib
from typing import Any

ROOT_STACK_TYPE = "pulumi:pulumi:Stack"
AUTONAMED = "pulumi.com/autonamed"
"""The annotation pulumi-kubernetes puts on the objects it names (metadata/annotations.go)."""
_SECRET_SIGNATURE = "4dabf18193072939515e22adb298388d"  # the SDK's rpc._special_sig_key


def engine_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """The URN the engine gives a resource: the parent's whole type chain (its qualified
    type), except the root stack's, before the resource's own type (pulumi pkg/resource/
    deploy/deployment.go ``generateURN``, sdk/go/common/resource/urn.go ``NewURN``)."""
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != ROOT_STACK_TYPE:
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def duplicate_urn_message(urn: str) -> str:
    """The engine's error for a second resource of one URN: it refuses the deployment
    (pulumi pkg/diag/errors.go ``GetDuplicateResourceURNError``, raised by the step
    generator's ``generateURN`` for registered and read resources alike)."""
    return f"Duplicate resource URN '{urn}'; try giving it a unique name"


# `properties`: a registration's inputs as the monitor receives them, a protobuf Struct
# (google.protobuf ships no type hints, hence Any).


def is_kubernetes_object(type_: str, properties: Any) -> bool:
    """A resource pulumi-kubernetes creates as one object: it sends apiVersion and kind (a
    Helm Release, a chart or a YAML component does not)."""
    fields = properties.fields
    return type_.startswith("kubernetes:") and "apiVersion" in fields and "kind" in fields


def auto_name(properties: Any, urn: str, name: str) -> Any:
    """The inputs with the name pulumi-kubernetes' Check gives an object that has neither
    ``metadata.name`` nor ``metadata.generateName``, known or not: its resource ``name``, a
    dash and 8 hex characters, and the :data:`AUTONAMED` annotation (provider/pkg/metadata/
    naming.go ``AssignNameIfAutonamable``, with the engine's ``resource.NewUniqueName``).
    None when the object is named. The 8 characters are random there, seeded per resource;
    here they come from the URN, so every preview of a program names it the same (as an
    update keeps the name it was created with: ``AdoptOldAutonameIfUnnamed``)."""
    metadata = properties.fields.get("metadata")
    if metadata is not None and metadata.WhichOneof("kind") != "struct_value":
        return None  # not known yet, or null: pulumi-kubernetes leaves it to the API server
    fields: Any = metadata.struct_value.fields if metadata is not None else {}
    if "name" in fields or "generateName" in fields or _SECRET_SIGNATURE in fields:
        return None
    annotations = fields.get("annotations")
    if annotations is not None and annotations.WhichOneof("kind") != "struct_value":
        return None
    named = type(properties)()
    named.CopyFrom(properties)
    meta = named.get_or_create_struct("metadata")
    suffix = hashlib.sha256(urn.encode()).hexdigest()[:8]
    meta["name"] = f"{name}-{suffix}"
    meta.get_or_create_struct("annotations")[AUTONAMED] = "true"
    return named
