"""A `trainjobs preview` directory read back: resources by Pulumi identity, with their inputs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from trainjobs.core.errors import UserError


def metadata_of(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest's metadata; empty while a preview could not know it (the marker string)."""
    metadata = manifest.get("metadata")
    return metadata if isinstance(metadata, dict) else {}


@dataclass(frozen=True)
class Resource:
    """One resource of a preview: a Kubernetes object (with its manifest) or a component."""

    key: str
    type: str
    name: str
    ignore_changes: tuple[str, ...] = ()
    replace_on_changes: tuple[str, ...] = ()
    """Pulumi's ``replaceOnChanges`` option: changes there replace, whatever the provider
    says (a preview written before trainjobs recorded it has none)."""
    delete_before_replace: bool = False
    manifest: dict[str, Any] | None = None
    inputs: dict[str, Any] | None = None
    """Inputs of a resource that is not a Kubernetes object, when graph.json records them."""

    @property
    def label(self) -> str:
        if self.manifest is None:
            return f"{self.type.rsplit(':', 1)[-1]} {self.name}"
        meta = metadata_of(self.manifest)
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.manifest.get('kind')} {where}{meta.get('name', self.name)}"


@dataclass(frozen=True)
class Snapshot:
    """A preview as loaded from its output directory."""

    stack: str
    resources: dict[str, Resource]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_config: tuple[str, ...] = ()
    """Stack settings the program made secret (their values are never shown)."""


def pulumi_type(manifest: dict[str, Any]) -> str:
    """The pulumi-kubernetes type token of a manifest: `kubernetes:core/v1:ConfigMap`."""
    api_version = str(manifest.get("apiVersion", ""))
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{manifest.get('kind')}"


def graph_file(directory: Path) -> Path:
    graph_file = directory / "graph.json"
    if not graph_file.is_file():
        raise UserError(
            f"{directory}: not a trainjobs preview (no graph.json); write one with "
            "`trainjobs preview --stack NAME --out DIR`"
        )
    return graph_file


def load_preview(directory: Path) -> Snapshot:
    """Read a `trainjobs preview --out` directory.

    Its YAML files are numbered in the order of the Kubernetes resources in `graph.json`, which
    is how each manifest is paired with its Pulumi resource (type, logical name, options).
    """
    graph = json.loads(graph_file(directory).read_text(encoding="utf-8"))
    files = sorted(
        (path for path in directory.glob("*.yaml") if path.name.split("-", 1)[0].isdigit()),
        key=lambda path: int(path.name.split("-", 1)[0]),
    )
    manifests = [yaml.safe_load(path.read_text(encoding="utf-8")) for path in files]
    entries = graph.get("resources", [])
    kubernetes = [entry for entry in entries if entry["type"].startswith("kubernetes:")]
    if len(kubernetes) != len(manifests):
        raise UserError(
            f"{directory}: graph.json lists {len(kubernetes)} Kubernetes objects but there are "
            f"{len(manifests)} manifest files; write the preview again"
        )
    manifest_of = {
        id(entry): manifest for entry, manifest in zip(kubernetes, manifests, strict=True)
    }
    by_short = {f"{entry['type']}::{entry['name']}": entry for entry in entries}

    def qualified_type(entry: dict[str, Any]) -> str:
        parent = by_short.get(entry.get("parent") or "")
        own = entry["type"]
        return f"{qualified_type(parent)}${own}" if parent else own

    resources: dict[str, Resource] = {}
    for entry in entries:
        manifest = manifest_of.get(id(entry))
        if manifest is not None and pulumi_type(manifest) != entry["type"]:
            raise UserError(
                f"{directory}: manifest {manifest.get('kind')} "
                f"{metadata_of(manifest).get('name')} does not match graph.json entry "
                f"{entry['type']}::{entry['name']}; write the preview again"
            )
        key = f"{qualified_type(entry)}::{entry['name']}"
        resources[key] = Resource(
            key=key,
            type=entry["type"],
            name=entry["name"],
            ignore_changes=tuple(entry.get("ignoreChanges") or ()),
            replace_on_changes=tuple(entry.get("replaceOnChanges") or ()),
            delete_before_replace=bool(entry.get("deleteBeforeReplace")),
            manifest=manifest,
            inputs=entry.get("inputs"),
        )
    return Snapshot(
        graph.get("stack", ""),
        resources,
        graph.get("outputs") or {},
        tuple(graph.get("secretConfig") or ()),
    )
