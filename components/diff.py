"""Preview diffs: what `pulumi up` would do to each resource, judged offline from two previews.

Two `trainjobs preview` output directories (or a git ref and the working tree) are compared the
way the Pulumi engine and pulumi-kubernetes compare a stack's state with its program:

- Resources are matched by Pulumi identity (the URN: parent type chain, type and logical name),
  not by file name, whose number shifts when objects are added. A new logical name is a new
  resource, so renaming a job deletes its objects and creates new ones.
- `ignoreChanges` is applied first, as the engine does: the old value is put back into the new
  inputs, so an ignored change alone leaves a resource unchanged. Such changes are still
  reported ("ignored") because `pulumi up` will not apply them.
- Changed properties are classified with pulumi-kubernetes' replace-on-change table
  (`provider/pkg/provider/diff.go`, v4): a change under one of its paths replaces the object,
  any other change updates it in place. A replaced object whose name and namespace stay the
  same is deleted before its replacement is created (the provider asks for that whenever the
  name is fixed, and trainjobs never auto-names).

Both sides are assumed to match the cluster (no drift): the real provider diffs against the
live object, which only a cluster can show. Secrets are never shown: previews already hold
"[secret]" in place of secret values, and Secret data is masked again here.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from components.errors import UserError
from components.manifests import dump_yaml, prepare_output_dir

OPERATIONS = ("create", "update", "replace", "delete", "same")
# Replace-on-change inputs of dynamic resources, from their providers' `diff` (kept in step
# with components.completion.REPLACE_ON by a test; not imported, to keep the CLI light).
DYNAMIC_REPLACE_ON: dict[str, tuple[str, ...]] = {
    "pulumi-python:dynamic/trainjobs:JobCompletion": (
        "namespace",
        "job_name",
        "job_uid",
        "template_hash",
        "workers",
        "context",
    ),
}
REDACTED = "[secret]"  # the marker components.preview writes for secret values
DEFAULT_MAX_BYTES = 60 * 1024
"""Report size cap: GitHub refuses comments over 65,536 characters."""

PropertyPath = tuple[str | int, ...]

# pulumi-kubernetes' replace-on-change properties (JSONPath-like, `[*]` = any list item), per
# apiVersion and kind, for the kinds trainjobs renders and the workload kinds next to them.
# `.metadata.name` and `.metadata.namespace` apply to every kind. The provider also lists each
# selector's sub-fields; a prefix match on `.spec.selector` already covers them.
_STATEFULSET = (
    ".spec.podManagementPolicy",
    ".spec.revisionHistoryLimit",
    ".spec.selector",
    ".spec.serviceName",
    ".spec.volumeClaimTemplates",
)
_JOB = (".spec.completions", ".spec.parallelism", ".spec.selector", ".spec.template")
_ROLE_BINDING = (".roleRef",)
REPLACE_ON_CHANGE: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps/v1", "StatefulSet"): _STATEFULSET,
    ("apps/v1beta2", "StatefulSet"): _STATEFULSET,
    ("apps/v1beta1", "StatefulSet"): _STATEFULSET,
    ("apps/v1", "Deployment"): (".spec.selector",),
    ("apps/v1", "DaemonSet"): (".spec.selector",),
    ("batch/v1", "Job"): _JOB,
    ("v1", "Service"): (".spec.clusterIP",),
    ("v1", "PersistentVolumeClaim"): (
        ".spec.accessModes",
        ".spec.selector",
        ".spec.storageClassName",
        ".spec.volumeName",
    ),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _ROLE_BINDING,
}
_IDENTITY = (".metadata.name", ".metadata.namespace")


@dataclass(frozen=True)
class ProviderSettings:
    """The pulumi-kubernetes provider options that change what forces a replacement.

    Both default to off in pulumi-kubernetes 4.x: a ConfigMap's `data`/`binaryData` or a
    Secret's `data`/`stringData` change replaces the object unless the stack sets
    `kubernetes:enableConfigMapMutable` / `kubernetes:enableSecretMutable` (or the environment
    sets `PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE` / `PULUMI_K8S_ENABLE_SECRET_MUTABLE`). An object
    marked `immutable: true` is replaced either way.
    """

    config_map_mutable: bool = False
    secret_mutable: bool = False

    @classmethod
    def from_stack(cls, project_dir: Path, stack: str) -> ProviderSettings:
        config = _raw_stack_config(project_dir / f"Pulumi.{stack}.yaml")

        def enabled(key: str, variable: str) -> bool:
            value = config.get(f"kubernetes:{key}", os.environ.get(variable))
            return str(value).lower() == "true"

        return cls(
            config_map_mutable=enabled(
                "enableConfigMapMutable", "PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE"
            ),
            secret_mutable=enabled("enableSecretMutable", "PULUMI_K8S_ENABLE_SECRET_MUTABLE"),
        )


def replace_on_change(manifest: dict[str, Any], settings: ProviderSettings) -> tuple[str, ...]:
    """The properties whose change makes pulumi-kubernetes replace this object."""
    api_version, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
    immutable = manifest.get("immutable") is True
    paths = _IDENTITY + REPLACE_ON_CHANGE.get((api_version, kind), ())
    if (api_version, kind) == ("v1", "Secret"):
        paths += (".type",)
        if immutable or not settings.secret_mutable:
            paths += (".stringData", ".data")
    if (api_version, kind) == ("v1", "ConfigMap") and (
        immutable or not settings.config_map_mutable
    ):
        paths += (".binaryData", ".data")
    return paths


def _rule_tokens(rule: str) -> tuple[str, ...]:
    return tuple(rule.replace("[*]", ".*").strip(".").split("."))


def _rule_matches(rule: str, path: PropertyPath, value: Any) -> bool:
    """Whether a change at `path` (new value `value`) touches `rule`.

    As in the provider, the rule is looked up in the changed value shaped by its path: it
    matches a change at or under it, or a change above it whose new value contains it.
    """
    tokens = _rule_tokens(rule)
    for index, token in enumerate(tokens):
        if index == len(path):
            return _contains(value, tokens[index:])
        part = path[index]
        if (token == "*" and not isinstance(part, int)) or (token != "*" and part != token):
            return False
    return True


def _contains(value: Any, tokens: tuple[str, ...]) -> bool:
    if not tokens:
        return True
    token, rest = tokens[0], tokens[1:]
    if token == "*":
        return isinstance(value, list) and any(_contains(item, rest) for item in value)
    return isinstance(value, dict) and token in value and _contains(value[token], rest)


def format_path(path: PropertyPath) -> str:
    """A property path as Pulumi prints it: `a.b[0]["app.kubernetes.io/name"]`."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        elif any(char in part for char in '."[]'):
            text += '["' + part.replace('"', '\\"') + '"]'
        else:
            text += f".{part}" if text else part
    return text


def parse_path(text: str) -> PropertyPath:
    """Parse a Pulumi property path (`spec.replicas`, `a[0]`, `a["b.c"]`, `a[*]`)."""
    parts: list[str | int] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == ".":
            index += 1
        elif text.startswith('["', index):
            end = index + 2
            while end < len(text) and text[end] != '"':
                end += 2 if text[end] == "\\" else 1
            parts.append(text[index + 2 : end].replace('\\"', '"'))
            index = end + 2
        elif char == "[":
            end = text.index("]", index)
            inner = text[index + 1 : end]
            parts.append("*" if inner == "*" else int(inner))
            index = end + 1
        else:
            end = index
            while end < len(text) and text[end] not in ".[":
                end += 1
            parts.append(text[index:end])
            index = end
    return tuple(parts)


@dataclass(frozen=True)
class Change:
    """One changed property: `kind` is add, delete or update; `rule` the replace-on-change
    property it touches, if any."""

    path: PropertyPath
    kind: str
    old: Any
    new: Any
    rule: str | None = None

    @property
    def replaces(self) -> bool:
        return self.rule is not None


def _same_scalar(old: Any, new: Any) -> bool:
    if isinstance(old, bool) or isinstance(new, bool):
        return type(old) is type(new) and old == new
    return bool(old == new)


def property_changes(
    old: Any, new: Any, path: PropertyPath = ()
) -> Iterator[tuple[PropertyPath, str, Any, Any]]:
    """Leaf-level differences, the granularity of a Pulumi detailed diff."""
    if isinstance(old, dict) and isinstance(new, dict):
        for key in [*new, *(key for key in old if key not in new)]:
            if key not in old:
                yield (*path, key), "add", None, new[key]
            elif key not in new:
                yield (*path, key), "delete", old[key], None
            else:
                yield from property_changes(old[key], new[key], (*path, key))
    elif isinstance(old, list) and isinstance(new, list):
        for index in range(max(len(old), len(new))):
            if index >= len(old):
                yield (*path, index), "add", None, new[index]
            elif index >= len(new):
                yield (*path, index), "delete", old[index], None
            else:
                yield from property_changes(old[index], new[index], (*path, index))
    elif not _same_scalar(old, new):
        yield path, "update", old, new


def _lookup(value: Any, path: PropertyPath) -> tuple[bool, Any]:
    for part in path:
        if isinstance(part, int):
            if not isinstance(value, list) or part >= len(value):
                return False, None
        elif not isinstance(value, dict) or part not in value:
            return False, None
        value = value[part]
    return True, value


def _expand(path: PropertyPath, *trees: Any) -> list[PropertyPath]:
    """Concrete paths for a path with `*` segments, over the items present in any tree."""
    if "*" not in path:
        return [path]
    star = path.index("*")
    prefix = path[:star]
    items: set[int | str] = set()
    for tree in trees:
        found, value = _lookup(tree, prefix)
        if found and isinstance(value, list):
            items.update(range(len(value)))
        elif found and isinstance(value, dict):
            items.update(value)
    return [
        expanded
        for item in sorted(items, key=str)
        for expanded in _expand((*prefix, item, *path[star + 1 :]), *trees)
    ]


def apply_ignore_changes(old: Any, new: Any, ignore_changes: list[str]) -> Any:
    """The new inputs as the engine sees them: each ignored property reset to its old value
    (or removed, if the old inputs lacked it). A path whose parent is missing is left alone."""
    result = copy.deepcopy(new)
    for text in ignore_changes:
        for path in _expand(parse_path(text), old, new):
            has_parent, parent = _lookup(result, path[:-1])
            if not path or not has_parent or not isinstance(parent, dict | list):
                continue
            found, value = _lookup(old, path)
            last = path[-1]
            settable = isinstance(parent, dict) == isinstance(last, str)
            if found and settable and (isinstance(parent, dict) or last < len(parent)):
                parent[last] = copy.deepcopy(value)
            elif not found and isinstance(parent, dict) and last in parent:
                del parent[last]
    return result


@dataclass(frozen=True)
class Resource:
    """One resource of a preview: a Kubernetes object (with its manifest) or a component."""

    key: str
    type: str
    name: str
    ignore_changes: tuple[str, ...] = ()
    delete_before_replace: bool = False
    manifest: dict[str, Any] | None = None
    inputs: dict[str, Any] | None = None
    """Inputs of a resource that is not a Kubernetes object, when graph.json records them."""

    @property
    def label(self) -> str:
        if self.manifest is None:
            return f"{self.type.rsplit(':', 1)[-1]} {self.name}"
        meta = self.manifest.get("metadata", {})
        where = f"{meta['namespace']}/" if meta.get("namespace") else ""
        return f"{self.manifest.get('kind')} {where}{meta.get('name', self.name)}"


@dataclass(frozen=True)
class Snapshot:
    """A preview as loaded from its output directory."""

    stack: str
    resources: dict[str, Resource]
    outputs: dict[str, Any] = field(default_factory=dict)


def pulumi_type(manifest: dict[str, Any]) -> str:
    """The pulumi-kubernetes type token of a manifest: `kubernetes:core/v1:ConfigMap`."""
    api_version = str(manifest.get("apiVersion", ""))
    group_version = api_version if "/" in api_version else f"core/{api_version}"
    return f"kubernetes:{group_version}:{manifest.get('kind')}"


def _graph_file(directory: Path) -> Path:
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
    graph = json.loads(_graph_file(directory).read_text(encoding="utf-8"))
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
                f"{manifest.get('metadata', {}).get('name')} does not match graph.json entry "
                f"{entry['type']}::{entry['name']}; write the preview again"
            )
        key = f"{qualified_type(entry)}::{entry['name']}"
        resources[key] = Resource(
            key=key,
            type=entry["type"],
            name=entry["name"],
            ignore_changes=tuple(entry.get("ignoreChanges") or ()),
            delete_before_replace=bool(entry.get("deleteBeforeReplace")),
            manifest=manifest,
            inputs=entry.get("inputs"),
        )
    return Snapshot(graph.get("stack", ""), resources, graph.get("outputs") or {})


@dataclass(frozen=True)
class ResourceDiff:
    """What `pulumi up` would do to one resource, and why."""

    operation: str
    base: Resource | None
    head: Resource | None
    changes: tuple[Change, ...] = ()
    """Property changes Pulumi would apply (after ignoreChanges)."""
    ignored: tuple[Change, ...] = ()
    """Property changes held back by the resource's ignoreChanges."""
    delete_before_replace: bool = False

    @property
    def resource(self) -> Resource:
        resource = self.head or self.base
        assert resource is not None
        return resource

    @property
    def label(self) -> str:
        return self.resource.label

    @property
    def reason(self) -> str:
        """One line for a reviewer: which properties drive the operation."""
        kind = (self.resource.manifest or {}).get("kind", "")
        if self.operation == "create":
            return "new resource"
        if self.operation == "delete":
            return "no longer declared by the program"
        if self.operation == "replace":
            manifest = self.resource.manifest or {}
            rules = sorted({c.rule for c in self.changes if c.rule}, key=str)
            changed = ", ".join(f"`{rule.lstrip('.')}`" for rule in rules)
            triggers = tuple(c for c in self.changes if c.rule)
            text = f"{changed} changed ({_describe(triggers, secret=kind == 'Secret', limit=2)})"
            text += f": {_why_replaced(manifest, rules)}"
            if self.delete_before_replace:
                text += "; the old object is deleted first (same name)"
            return text
        if self.operation == "update":
            return _describe(self.changes, secret=kind == "Secret")
        if self.ignored:
            return "only ignored properties changed: " + _describe(
                self.ignored, secret=kind == "Secret"
            )
        return "unchanged"

    def unified_diff(self) -> str:
        """A unified diff of the two manifests as YAML (Secret values masked)."""
        old = (self.base.manifest or self.base.inputs) if self.base else None
        new = (self.head.manifest or self.head.inputs) if self.head else None
        old_text, new_text = _display_pair(old, new)
        label = self.label.replace(" ", "/", 1)
        lines = difflib.unified_diff(
            old_text.splitlines(),
            new_text.splitlines(),
            fromfile=f"base/{label}" if old is not None else "/dev/null",
            tofile=f"head/{label}" if new is not None else "/dev/null",
            lineterm="",
        )
        return "\n".join(lines)


def _why_replaced(manifest: dict[str, Any], rules: list[str]) -> str:
    if not manifest:  # the completion watcher
        return "a watcher follows one run of one Job with one set of workers"
    kind = f"{manifest.get('apiVersion')} {manifest.get('kind')}"
    if set(rules) <= set(_IDENTITY):
        return "a new name or namespace is a new object"
    if manifest.get("kind") in ("ConfigMap", "Secret") and set(rules) & {
        ".data",
        ".binaryData",
        ".stringData",
    }:
        if manifest.get("immutable") is True:
            return f"the {kind} is `immutable: true`"
        option = f"enable{manifest.get('kind')}Mutable"
        return (
            f"pulumi-kubernetes replaces a {kind} on data changes "
            f"unless `kubernetes:{option}` is true"
        )
    return f"pulumi-kubernetes replaces a {kind} when it changes"


def _short_value(value: Any) -> str | None:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if isinstance(value, int | float | str | bool) and len(text) <= 40 else None


def _describe(changes: tuple[Change, ...], *, secret: bool, limit: int = 3) -> str:
    parts = []
    for change in changes[:limit]:
        path = f"`{format_path(change.path)}`"
        old, new = _short_value(change.old), _short_value(change.new)
        if change.kind == "update" and old is not None and new is not None and not secret:
            parts.append(f"{path} {old} → {new}")
        else:
            parts.append(f"{path} {'added' if change.kind == 'add' else change.kind + 'd'}")
    if len(changes) > limit:
        parts.append(f"and {len(changes) - limit} more")
    return ", ".join(parts)


def _masked_secret(manifest: dict[str, Any], other: dict[str, Any] | None) -> dict[str, Any]:
    masked = dict(manifest)
    for key in ("data", "stringData"):
        values = manifest.get(key)
        if isinstance(values, dict):
            others = (other or {}).get(key) or {}
            masked[key] = {
                name: REDACTED
                if other is None or others.get(name) == value
                else "[secret, changed]"
                for name, value in values.items()
            }
    return masked


def _display_pair(old: dict | None, new: dict | None) -> tuple[str, str]:
    def shown(manifest: dict | None, other: dict | None) -> str:
        if manifest is None:
            return ""
        if manifest.get("kind") == "Secret":
            manifest = _masked_secret(manifest, other)
        return dump_yaml(manifest)

    # Mask the old side without comparing, so only the new side says "changed".
    return shown(old, None), shown(new, old)


def diff_resource(
    base: Resource | None, head: Resource | None, settings: ProviderSettings
) -> ResourceDiff:
    if base is None:
        return ResourceDiff("create", None, head)
    if head is None:
        return ResourceDiff("delete", base, None)
    if base.manifest is None or head.manifest is None:
        # Components have no inputs of their own: an existing one is always the same. Other
        # resources (dynamic ones) are diffed if graph.json records their inputs, with their
        # provider's replacement rules where trainjobs knows them (its completion watcher).
        if base.inputs is None or head.inputs is None:
            return ResourceDiff("same", base, head)
        replace_on = DYNAMIC_REPLACE_ON.get(head.type, ())
        changes = tuple(
            Change(path, kind, before, after, path[0] if path[0] in replace_on else None)
            for path, kind, before, after in property_changes(base.inputs, head.inputs)
        )
        if any(change.replaces for change in changes):
            return ResourceDiff("replace", base, head, changes)
        return ResourceDiff("update" if changes else "same", base, head, changes)
    old, new = base.manifest, head.manifest
    effective_new = apply_ignore_changes(old, new, list(head.ignore_changes))
    rules = replace_on_change(new, settings)

    def classified(after: dict[str, Any]) -> list[Change]:
        return [
            Change(
                path,
                kind,
                before,
                value,
                next((r for r in rules if _rule_matches(r, path, value)), None),
            )
            for path, kind, before, value in property_changes(old, after)
        ]

    changes = classified(effective_new)
    applied = {change.path for change in changes}
    ignored = tuple(change for change in classified(new) if change.path not in applied)
    if not changes:
        return ResourceDiff("same", base, head, (), ignored)
    if not any(change.replaces for change in changes):
        return ResourceDiff("update", base, head, tuple(changes), ignored)
    old_meta, new_meta = old.get("metadata", {}), new.get("metadata", {})
    delete_first = head.delete_before_replace or (
        bool(new_meta.get("name"))
        and old_meta.get("name") == new_meta.get("name")
        and old_meta.get("namespace") == new_meta.get("namespace")
    )
    return ResourceDiff("replace", base, head, tuple(changes), ignored, delete_first)


@dataclass(frozen=True)
class Comparison:
    """Every resource of two previews, head order first, then what only the base has."""

    stack: str
    resources: tuple[ResourceDiff, ...]
    outputs_diff: str = ""

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(OPERATIONS, 0)
        for resource in self.resources:
            counts[resource.operation] += 1
        return counts

    @property
    def changed(self) -> tuple[ResourceDiff, ...]:
        return tuple(r for r in self.resources if r.operation != "same")

    @property
    def has_changes(self) -> bool:
        return bool(self.changed)

    @property
    def with_ignored_changes(self) -> tuple[ResourceDiff, ...]:
        return tuple(r for r in self.resources if r.ignored)

    @property
    def notable(self) -> tuple[ResourceDiff, ...]:
        """Resources worth a row and a diff: changed, or with changes Pulumi will ignore."""
        return tuple(r for r in self.resources if r.operation != "same" or r.ignored)


def _rewatch_replaced_jobs(diffs: list[ResourceDiff]) -> list[ResourceDiff]:
    """A completion watcher follows one run: its `job_uid` input is the master Job's uid, so
    replacing the Job replaces the watcher. Previews cannot see uids (the cluster assigns
    them), hence this rule, applied the way the engine would after the Job's replacement."""
    replaced_jobs = {
        d.head.manifest["metadata"]["name"]
        for d in diffs
        if d.operation == "replace"
        and d.head
        and d.head.manifest
        and d.head.manifest["kind"] == "Job"
    }
    result = []
    for d in diffs:
        watcher = d.head is not None and d.head.type in DYNAMIC_REPLACE_ON and d.head.inputs
        if (
            watcher
            and d.operation in ("same", "update")
            and d.head.inputs.get("job_name") in replaced_jobs
        ):
            uid = Change(
                ("job_uid",), "update", "(uid of the old Job)", "(uid of the new Job)", "job_uid"
            )
            d = ResourceDiff("replace", d.base, d.head, (*d.changes, uid), d.ignored)
        result.append(d)
    return result


def compare(base: Snapshot, head: Snapshot, settings: ProviderSettings | None = None) -> Comparison:
    settings = settings or ProviderSettings()
    diffs = [
        diff_resource(base.resources.get(key), resource, settings)
        for key, resource in head.resources.items()
    ]
    diffs += [
        diff_resource(resource, None, settings)
        for key, resource in base.resources.items()
        if key not in head.resources
    ]
    diffs = _rewatch_replaced_jobs(diffs)
    outputs = ""
    if base.outputs != head.outputs:
        outputs = "\n".join(
            difflib.unified_diff(
                dump_yaml(base.outputs).splitlines(),
                dump_yaml(head.outputs).splitlines(),
                "base/outputs",
                "head/outputs",
                lineterm="",
            )
        )
    return Comparison(head.stack or base.stack, tuple(diffs), outputs)


def _raw_stack_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    document = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return {
        (key if ":" in key else f"trainjobs:{key}"): value
        for key, value in (document.get("config") or {}).items()
    }


def config_changes(base_file: Path, head_file: Path) -> list[str]:
    """Changed stack settings, one Markdown line each. Secure values are never printed."""

    def shown(value: Any) -> str:
        text = value if isinstance(value, str) else json.dumps(value)
        return f"`{text[:77]}...`" if len(text) > 80 else f"`{text}`"

    old, new = _raw_stack_config(base_file), _raw_stack_config(head_file)
    lines = []
    for key in sorted(old.keys() | new.keys()):
        before, after = old.get(key), new.get(key)
        if before == after:
            continue
        secure = any(isinstance(v, dict) and "secure" in v for v in (before, after))
        if secure:
            lines.append(f"`{key}`: secure value changed (not shown)")
        elif key not in old:
            lines.append(f"`{key}`: added, {shown(after)}")
        elif key not in new:
            lines.append(f"`{key}`: removed (was {shown(before)})")
        else:
            lines.append(f"`{key}`: {shown(before)} → {shown(after)}")
    return lines


# Runs `trainjobs preview` with a project directory first on sys.path, so that each side of a
# diff is evaluated with its own components/ package when it has one.
_PREVIEW_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from components.cli import main
sys.exit(main(["preview", "--stack", sys.argv[2], "--project", sys.argv[1], "--out", sys.argv[3]]))
"""


def preview_in_subprocess(project_dir: Path, stack: str, out_dir: Path, side: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _PREVIEW_SCRIPT, str(project_dir), stack, str(out_dir)],
        cwd=project_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        detail = completed.stderr.strip().removeprefix("error: ")
        raise UserError(f"preview of stack {stack} at {side} failed:\n{detail}")


def _git(directory: Path, *args: str) -> str:
    try:
        completed = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise UserError("`trainjobs diff --base` needs git on PATH") from None
    if completed.returncode != 0:
        raise UserError(f"git {' '.join(args)}: {completed.stderr.strip()}")
    return completed.stdout.strip()


def export_ref(project_dir: Path, ref: str, into: Path) -> Path:
    """Write the repository's tree at `ref` into `into`; returns the project directory in it.

    `git archive` leaves no worktree or other state in the repository. Like any archive it
    skips paths marked `export-ignore` and the contents of submodules.
    """
    project_dir = project_dir.resolve()
    top = Path(_git(project_dir, "rev-parse", "--show-toplevel"))
    prefix = _git(project_dir, "rev-parse", "--show-prefix")
    try:
        commit = _git(top, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")
    except UserError:
        raise UserError(f"--base {ref}: not a commit in {top}") from None
    archive = subprocess.Popen(
        ["git", "-C", str(top), "archive", "--format=tar", commit], stdout=subprocess.PIPE
    )
    assert archive.stdout is not None
    with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
        tar.extractall(into, filter="data")
    if archive.wait() != 0:
        raise UserError(f"git archive {ref} failed")
    return into / prefix


def diff_against_ref(
    project_dir: Path, stack: str, ref: str, previews: Path
) -> tuple[Comparison, list[str]]:
    """Preview `stack` at git `ref` and in the working tree; compare them.

    Each side runs in its own process with its own checkout first on sys.path, so a change to
    components/ shows up in the diff just like a change to a job spec. A project without a
    components/ package falls back to the installed trainjobs for both sides. A stack that
    does not exist at `ref` is compared with an empty stack (everything is created).
    """
    project_dir = project_dir.resolve()
    with tempfile.TemporaryDirectory(prefix="trainjobs-base-") as checkout:
        base_project = export_ref(project_dir, ref, Path(checkout))
        stack_file = f"Pulumi.{stack}.yaml"
        config = config_changes(base_project / stack_file, project_dir / stack_file)
        prepare_output_dir(previews)
        if (base_project / stack_file).is_file():
            preview_in_subprocess(base_project, stack, previews / "base", ref)
            base = load_preview(previews / "base")
        else:
            base = Snapshot(stack, {})
            config.insert(0, f"stack `{stack}` does not exist at `{ref}`: everything is new")
    preview_in_subprocess(project_dir, stack, previews / "head", "the working tree")
    head = load_preview(previews / "head")
    return compare(base, head, ProviderSettings.from_stack(project_dir, stack)), config


def _check_expectation(comparison: Comparison, expect_no_changes: bool) -> int:
    return 1 if expect_no_changes and comparison.has_changes else 0


def check_against(args: argparse.Namespace) -> None:
    """Before `trainjobs preview --against` runs: refuse a baseline that is not a preview or
    that `--out` would overwrite, and `--expect-no-changes` without a baseline."""
    if args.against is None:
        if args.expect_no_changes:
            raise UserError("--expect-no-changes needs --against BASE_DIR")
        return
    if args.against.resolve() == args.out.resolve():
        raise UserError(f"--against {args.against}: must differ from --out (it is overwritten)")
    _graph_file(args.against)


def report_against(args: argparse.Namespace) -> int:
    """`trainjobs preview --against`: compare the preview just written with a previous one."""
    from components.report import render

    comparison = compare(
        load_preview(args.against),
        load_preview(args.out),
        ProviderSettings.from_stack(args.project, args.stack),
    )
    command = (
        f"trainjobs preview --stack {args.stack} --out {args.out} --against {args.against} "
        "--max-bytes 0"
    )
    print()
    print(
        render(
            comparison,
            base=str(args.against),
            head=str(args.out),
            full_command=command,
            max_bytes=args.max_bytes,
        )
    )
    return _check_expectation(comparison, args.expect_no_changes)


def _diff(args: argparse.Namespace) -> int:
    from components.report import render

    if args.previews is not None:
        comparison, config = diff_against_ref(args.project, args.stack, args.base, args.previews)
    else:
        with tempfile.TemporaryDirectory(prefix="trainjobs-previews-") as previews:
            comparison, config = diff_against_ref(
                args.project, args.stack, args.base, Path(previews)
            )
    command = f"trainjobs diff --stack {args.stack} --base {args.base} --max-bytes 0"
    report = render(
        comparison,
        base=args.base,
        head="working tree",
        full_command=command,
        max_bytes=args.max_bytes,
        config=config,
        previews=args.previews,
    )
    if args.out is None:
        print(report)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        counts = ", ".join(f"{n} {op}" for op, n in comparison.counts.items() if n)
        print(f"stack {args.stack} ({args.base} -> working tree): {counts or 'no resources'}")
        print(f"wrote {args.out}")
    return _check_expectation(comparison, args.expect_no_changes)


def _size(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or a positive number of bytes")
    return number


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by `diff` and `preview --against`."""
    parser.add_argument(
        "--expect-no-changes",
        action="store_true",
        help="exit 1 if any resource would be created, updated, replaced or deleted",
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"cap the Markdown report (default {DEFAULT_MAX_BYTES}, under GitHub's comment "
        "limit; 0: no cap)",
    )


def register_diff(subparsers: argparse._SubParsersAction) -> None:
    diff = subparsers.add_parser(
        "diff",
        help="preview a stack at a git ref and in the working tree; report what would change",
    )
    diff.add_argument("--stack", required=True, metavar="NAME", help="reads Pulumi.NAME.yaml")
    diff.add_argument("--base", required=True, metavar="GIT_REF", help="e.g. origin/main")
    diff.add_argument("--project", default=Path("."), type=Path, metavar="DIR")
    diff.add_argument("--out", type=Path, metavar="REPORT.md", help="write the report here")
    diff.add_argument(
        "--previews", type=Path, metavar="DIR", help="keep both previews in DIR/base, DIR/head"
    )
    add_report_arguments(diff)
    diff.set_defaults(handler=_diff)
