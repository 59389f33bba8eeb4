"""`trainjobs run --set KEY=VALUE`: the common knobs of a job spec, changed on the command line.

The keys name replica types as the spec does (``replicas.Worker=4``; any case), and each
override is written into the spec document before it is validated, so a value the spec would
refuse is refused with the spec's own message (``spec.worker.replicas: ...``). Where each kind
keeps a replica type's count and images is the kind's to say (:func:`set_paths`); a key the
job has no field for is refused, never ignored.
"""

from __future__ import annotations

import copy
from typing import Any

from trainjobs.core.bounds import parse_count
from trainjobs.core.errors import UserError
from trainjobs.core.set_paths import FieldPath, SetPaths
from trainjobs.kinds.registry import runtimes_owner, set_paths

USAGE = "replicas.TYPE=N, image=REF or image.TYPE=REF"


def _targets(paths: SetPaths, field: str, replica_type: str) -> list[FieldPath]:
    """The fields ``field[.replica_type]`` names (replica types in any case); none when the
    job has no such field."""
    if field == "replicas" and replica_type:
        return [path for name, path in paths.replicas.items() if name.lower() == replica_type]
    if field == "image" and replica_type:
        return [
            p for name, found in paths.images.items() if name.lower() == replica_type for p in found
        ]
    if field == "image":
        return [path for found in paths.images.values() for path in found]
    return []


def _write(document: dict[str, Any], path: FieldPath, value: object) -> None:
    """Set the field at ``path``, making the mappings on the way that the spec leaves out (a
    TrainJob without ``trainer``)."""
    target: Any = document
    for key in path[:-1]:
        target = target.setdefault(key, {}) if isinstance(key, str) else target[key]
    target[path[-1]] = value


def apply_overrides(document: dict[str, Any], items: list[str]) -> dict[str, Any]:
    """A copy of the job document with each ``KEY=VALUE`` of ``items`` applied in order.

    A document of no known kind is returned as it is: parsing it refuses its kind."""
    document = copy.deepcopy(document)
    for item in items:
        key, separator, value = item.partition("=")
        field, _, replica_type = key.partition(".")
        if not separator or not value:
            raise UserError(f"--set {item!r}: expected KEY=VALUE ({USAGE})")
        paths = set_paths(document)
        if paths is None:
            return document
        written: object = value
        if field == "replicas" and replica_type:
            written = parse_count(value)
            if written is None:
                raise UserError(
                    f"--set {item}: {value!r} is not a whole number of replicas; "
                    f"e.g. --set replicas.{replica_type}=4"
                )
        targets = _targets(paths, field, replica_type.lower())
        if not targets:
            raise UserError(
                f"--set {item}: this {document_kind(document)} has no key {key!r} (value "
                f"{value!r}); valid keys: {', '.join(paths.keys()) or 'none'}"
            )
        for path in targets:
            _write(document, path, written)
    return document


def document_kind(document: dict[str, Any]) -> str:
    """The job's kind, a List's being its job's (a job with its training runtimes)."""
    if document.get("kind") == "List":
        return runtimes_owner()
    return str(document.get("kind"))
