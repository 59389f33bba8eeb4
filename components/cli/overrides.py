"""`trainjobs run --set KEY=VALUE`: the common knobs of a job spec, changed on the command line.

The keys name replica types as the spec does (``replicas.Worker=4``; any case), and each
override is written into the spec document before it is validated, so a value the spec would
refuse is refused with the spec's own message (``spec.worker.replicas: ...``).
"""

from __future__ import annotations

import copy
from typing import Any

from trainjobs.core.errors import UserError

USAGE = "replicas.TYPE=N, image=REF or image.TYPE=REF"
# The replica maps of the spec versions that key them by type; the v1alpha1 lists carry the
# type in a field of each item instead.
REPLICA_MAPS = ("tfReplicaSpecs", "pytorchReplicaSpecs")
REPLICA_LISTS = {"replicaSpecs": ("tfReplicaType", "replicaType")}
CHAINER_REPLICAS = ("master", "worker")


def replica_specs(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The job's replica specs by type name as the spec spells it (Worker, worker, WORKER)."""
    spec = document.get("spec")
    if not isinstance(spec, dict):
        return {}
    found: dict[str, dict[str, Any]] = {}
    if document.get("kind") == "ChainerJob":
        found.update(
            {key: spec[key] for key in CHAINER_REPLICAS if isinstance(spec.get(key), dict)}
        )
    for key in REPLICA_MAPS:
        if isinstance(spec.get(key), dict):
            found.update({k: v for k, v in spec[key].items() if isinstance(v, dict)})
    for key, type_fields in REPLICA_LISTS.items():
        for item in spec.get(key) or [] if isinstance(spec.get(key), list) else []:
            if isinstance(item, dict):
                name = next((item[f] for f in type_fields if isinstance(item.get(f), str)), None)
                found[name or "MASTER"] = item
    return found


def _replica(document: dict[str, Any], item: str, name: str) -> dict[str, Any]:
    specs = replica_specs(document)
    matches = [key for key in specs if key.lower() == name.lower()]
    if not matches:
        have = ", ".join(specs) or "none"
        raise UserError(
            f"--set {item}: the job has no replica type {name!r} (it has: {have}); use one of those"
        )
    return specs[matches[0]]


def _containers(replica: dict[str, Any]) -> list[dict[str, Any]]:
    template = replica.get("template")
    spec = template.get("spec") if isinstance(template, dict) else None
    containers = spec.get("containers") if isinstance(spec, dict) else None
    return [c for c in containers if isinstance(c, dict)] if isinstance(containers, list) else []


def apply_overrides(document: dict[str, Any], items: list[str]) -> dict[str, Any]:
    """A copy of the job document with each ``KEY=VALUE`` of ``items`` applied in order."""
    document = copy.deepcopy(document)
    for item in items:
        key, separator, value = item.partition("=")
        field, _, replica_type = key.partition(".")
        if not separator or not value:
            raise UserError(f"--set {item!r}: expected KEY=VALUE ({USAGE})")
        if field == "replicas" and replica_type:
            if not value.isdigit():
                raise UserError(
                    f"--set {item}: {value!r} is not a whole number of replicas; "
                    f"e.g. --set replicas.{replica_type}=4"
                )
            _replica(document, item, replica_type)["replicas"] = int(value)
        elif field == "image":
            replicas = (
                [_replica(document, item, replica_type)]
                if replica_type
                else list(replica_specs(document).values())
            )
            for replica in replicas:
                for container in _containers(replica):
                    container["image"] = value
        else:
            raise UserError(f"--set {item}: unknown key {key!r}; use {USAGE}")
    return document
