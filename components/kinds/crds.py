"""CustomResourceDefinitions generated from the spec models.

The CRDs serve editors (schema validation while writing a job) and clusters that want the
kinds installed; the pydantic models stay the single source of truth, and a test keeps the
files in `crds/` current. Kubernetes requires *structural* OpenAPI v3 schemas: no `$ref`,
no `anyOf` with types, no `additionalProperties: false`; pass-through PodTemplates are
marked `x-kubernetes-preserve-unknown-fields`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from trainjobs.core.manifests import dump_yaml
from trainjobs.kinds.registry import KINDS

GENERATED_HEADER = (
    "# Generated from the spec models in components/kinds/ by `make crds`; do not edit.\n"
)


@dataclass(frozen=True)
class CrdSource:
    kind: str
    plural: str
    versions: Mapping[str, type[BaseModel]]
    """Version name -> spec model; the last one is the storage version."""
    group: str = "kubeflow.org"


def sources() -> list[CrdSource]:
    """A CRD per registered kind that wants one. Several versions of one kind are served
    side by side with no conversion webhook: the CRDs exist for schema validation (editors,
    `kubectl apply --dry-run=server`), not to store jobs."""
    return [
        CrdSource(kind.name, kind.plural, kind.spec_models(), kind.group)
        for kind in KINDS.values()
        if kind.crd
    ]


def structural_schema(source: CrdSource, version: str) -> dict[str, Any]:
    """The document's schema: the version's spec model, and what the API server owns."""
    raw = source.versions[version].model_json_schema(by_alias=True)
    spec = _structural(raw, raw.get("$defs", {}))
    return {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string", "enum": [f"{source.group}/{version}"]},
            "kind": {"type": "string", "enum": [source.kind]},
            # The API server owns metadata's schema; a CRD may only say it is an object.
            "metadata": {"type": "object"},
            "spec": spec,
            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
        },
        "required": ["apiVersion", "kind", "metadata", "spec"],
    }


def _structural(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    if "$ref" in node:
        target = definitions[node["$ref"].split("/")[-1]]
        merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        return _structural(merged, definitions)
    if "anyOf" in node:  # Optional[X]: absent means default, so X alone describes it
        options = [option for option in node["anyOf"] if option.get("type") != "null"]
        rest = {k: v for k, v in node.items() if k != "anyOf"}
        if rest.get("default", ...) is None:
            rest.pop("default")
        return _structural({**options[0], **rest}, definitions)
    out: dict[str, Any] = {}
    if "description" in node:
        out["description"] = " ".join(node["description"].split())
    kind = node.get("type")
    if kind == "object":
        out["type"] = "object"
        if "properties" in node:
            out["properties"] = {
                name: _structural(child, definitions) for name, child in node["properties"].items()
            }
            if node.get("required"):
                out["required"] = list(node["required"])
        elif isinstance(node.get("additionalProperties"), dict) and node["additionalProperties"]:
            out["additionalProperties"] = _structural(node["additionalProperties"], definitions)
            if "minProperties" in node:
                out["minProperties"] = node["minProperties"]
        else:  # a pass-through Kubernetes object (PodTemplateSpec, labels...)
            out["x-kubernetes-preserve-unknown-fields"] = True
    elif kind == "array":
        out["type"] = "array"
        out["items"] = _structural(node["items"], definitions)
        if "minItems" in node:
            out["minItems"] = node["minItems"]
    elif "const" in node:  # Literal["x"]
        out["type"] = "string"
        out["enum"] = [node["const"]]
    elif kind in ("integer", "string", "boolean", "number"):
        out["type"] = kind
        if "exclusiveMinimum" in node:  # OpenAPI v3.0 has no numeric exclusiveMinimum
            out["minimum"] = node["exclusiveMinimum"] + 1
        for bound in ("minimum", "maximum"):
            if bound in node:
                out[bound] = node[bound]
    else:
        raise ValueError(f"no structural schema for {node}")
    if "default" in node and node["default"] is not None and kind != "object":
        out["default"] = node["default"]
    return out


def crd(source: CrdSource) -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{source.plural}.{source.group}"},
        "spec": {
            "group": source.group,
            "names": {
                "kind": source.kind,
                "listKind": f"{source.kind}List",
                "plural": source.plural,
                "singular": source.kind.lower(),
            },
            "scope": "Namespaced",
            "versions": [
                {
                    "name": version,
                    "served": True,
                    "storage": version == list(source.versions)[-1],
                    "schema": {"openAPIV3Schema": structural_schema(source, version)},
                    "subresources": {"status": {}},
                }
                for version in source.versions
            ],
        },
    }


def rendered() -> dict[str, str]:
    """File name -> content of every CRD file."""
    return {
        f"{source.plural}.{source.group}.yaml": GENERATED_HEADER + dump_yaml(crd(source))
        for source in sources()
    }


def write(out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, content in rendered().items():
        path = out_dir / name
        path.write_text(content, encoding="utf-8")
        paths.append(path)
    return paths
