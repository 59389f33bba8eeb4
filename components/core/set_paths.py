"""Where `trainjobs run --set` writes in a job document: each replica type's count and images.

Each kind says where its spec keeps them (a ``set_paths`` function beside its models, listed
in :mod:`trainjobs.kinds.registry`); the CLI only writes the values there. Paths are found
in the document as written, before validation, so a value the spec would refuse is refused
with the spec's own message.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

FieldPath = tuple[str | int, ...]
"""Keys and list indexes from the document's root to one field."""


@dataclass(frozen=True)
class SetPaths:
    """The fields `--set` may write in one job document, by replica type as the spec spells
    it (``Worker``, ``worker``, ``PS``)."""

    replicas: dict[str, FieldPath] = field(default_factory=dict)
    """Replica type -> the field holding its number of pods."""
    images: dict[str, list[FieldPath]] = field(default_factory=dict)
    """Replica type -> the image fields of its containers (types with none are left out)."""

    def under(self, prefix: FieldPath) -> SetPaths:
        """The same paths, for a document found at ``prefix`` of another (a List's item)."""
        return SetPaths(
            {name: (*prefix, *path) for name, path in self.replicas.items()},
            {name: [(*prefix, *path) for path in paths] for name, paths in self.images.items()},
        )

    def keys(self) -> list[str]:
        """The `--set` keys these paths allow, in the spec's order."""
        return [
            *(f"replicas.{name}" for name in self.replicas),
            *(["image"] if self.images else []),
            *(f"image.{name}" for name in self.images),
        ]


def spec_of(document: dict[str, Any]) -> dict[str, Any]:
    """The document's ``spec`` when it is a mapping (anything else is the parser's to refuse)."""
    spec = document.get("spec")
    return spec if isinstance(spec, dict) else {}


def replica(name: str, prefix: FieldPath, value: Any, counted: bool = True) -> SetPaths:
    """Replica type ``name`` at ``prefix`` (a ReplicaSpec-shaped mapping: ``replicas`` and a
    pod ``template``). ``counted`` (default True): it has a ``replicas`` field (a ChainerJob's
    master has none)."""
    if not isinstance(value, dict):
        return SetPaths()
    images = template_images((*prefix, "template"), value.get("template"))
    return SetPaths(
        {name: (*prefix, "replicas")} if counted else {},
        {name: images} if images else {},
    )


def replica_map(document: dict[str, Any], key: str) -> SetPaths:
    """The replica types of a map ``spec.<key>`` (``tfReplicaSpecs``: type -> ReplicaSpec)."""
    specs = spec_of(document).get(key)
    if not isinstance(specs, dict):
        return SetPaths()
    return merge(*(replica(str(name), ("spec", key, name), value) for name, value in specs.items()))


def replica_list(
    document: dict[str, Any], key: str, type_field: str, default: str = "MASTER"
) -> SetPaths:
    """The replica types of a ``v1alpha1`` list ``spec.<key>``, each item naming its type in
    ``type_field`` (the operator's ``default`` when it names none)."""
    items = spec_of(document).get(key)
    if not isinstance(items, list):
        return SetPaths()
    found = []
    for index, item in enumerate(items):
        if isinstance(item, dict):
            named = item.get(type_field)
            name = named if isinstance(named, str) else default
            found.append(replica(name, ("spec", key, index), item))
    return merge(*found)


def template_images(prefix: FieldPath, template: Any) -> list[FieldPath]:
    """The image field of every container of the pod template at ``prefix``."""
    pod = template.get("spec") if isinstance(template, dict) else None
    containers = pod.get("containers") if isinstance(pod, dict) else None
    if not isinstance(containers, list):
        return []
    return [
        (*prefix, "spec", "containers", index, "image")
        for index, container in enumerate(containers)
        if isinstance(container, dict)
    ]


def merge(*paths: SetPaths) -> SetPaths:
    """The paths of several replica types, in order."""
    replicas: dict[str, FieldPath] = {}
    images: dict[str, list[FieldPath]] = {}
    for found in paths:
        replicas.update(found.replicas)
        images.update(found.images)
    return SetPaths(replicas, images)
