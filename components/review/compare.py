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
  (`provider/pkg/provider/diff.go`, v4) and the resource's own `replaceOnChanges` option
  (trainjobs sets it for the Job fields Kubernetes keeps immutable): a change under one of
  those paths replaces the object, any other change updates it in place. A replaced object
  whose name and namespace stay the same is deleted before its replacement is created (the
  provider asks for that whenever the name is fixed, and trainjobs never auto-names).

Both sides are assumed to match the cluster (no drift): the real provider diffs against the
live object, which only a cluster can show. Secrets are never shown: previews already hold
"[secret]" in place of secret values, and Secret data is masked again here.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjobs.core.manifests import dump_yaml
from trainjobs.review.properties import Change, apply_ignore_changes, format_path, property_changes
from trainjobs.review.replacement import (
    _IDENTITY,
    DYNAMIC_REPLACE_ON,
    ProviderSettings,
    _raw_stack_config,
    _rule_matches,
    replace_on_change,
)
from trainjobs.review.snapshot import Resource, Snapshot, metadata_of

OPERATIONS = ("create", "update", "replace", "delete", "same")
REDACTED = "[secret]"  # the marker trainjobs.review.preview writes for secret values
DEFAULT_MAX_BYTES = 60 * 1024
"""Report size cap: GitHub refuses comments over 65,536 characters."""


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
            own = {f".{path}" for path in self.resource.replace_on_changes}
            text += f": {_why_replaced(manifest, rules, own)}"
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


def _why_replaced(manifest: dict[str, Any], rules: list[str], own: set[str]) -> str:
    if not manifest:  # the completion watcher
        return "a watcher follows the jobs of one cluster"
    kind = f"{manifest.get('apiVersion')} {manifest.get('kind')}"
    if set(rules) <= own and manifest.get("kind") in ("Job", "JobSet"):
        return (
            f"a {kind} runs once, so the program replaces it on any change (replaceOnChanges; "
            "an update could not reach one its TTL removed, nor move a queued one)"
        )
    if set(rules) <= own:
        return (
            f"the API server refuses to change it on a {kind}, so the program replaces the "
            "object (replaceOnChanges)"
        )
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
    rules = replace_on_change(new, settings) + tuple(f".{p}" for p in head.replace_on_changes)

    def classified(after: dict[str, Any]) -> tuple[Change, ...]:
        return tuple(
            Change(
                path,
                kind,
                before,
                value,
                next((r for r in rules if _rule_matches(r, path, value)), None),
            )
            for path, kind, before, value in property_changes(old, after)
        )

    changes = classified(effective_new)
    applied = {change.path for change in changes}
    ignored = tuple(change for change in classified(new) if change.path not in applied)
    if not changes:
        return ResourceDiff("same", base, head, (), ignored)
    if not any(change.replaces for change in changes):
        return ResourceDiff("update", base, head, tuple(changes), ignored)
    old_meta, new_meta = metadata_of(old), metadata_of(new)
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
    """The completion watcher follows each job's runs through its workloads' uids
    (``jobs[i].uids``): a replaced Job, StatefulSet or JobSet gets a new uid, and the
    watcher an in-place update that watches the new run. Previews cannot see uids (the
    cluster assigns them), hence this rule, applied the way the engine would after the
    replacement."""
    replaced = {
        metadata_of(d.head.manifest).get("name")
        for d in diffs
        if d.operation == "replace"
        and d.head
        and d.head.manifest
        and d.head.manifest["kind"] in ("Job", "StatefulSet", "JobSet")
    }
    result = []
    for d in diffs:
        watcher = d.head is not None and d.head.type in DYNAMIC_REPLACE_ON and d.head.inputs
        if watcher and d.operation in ("same", "update"):
            assert d.head is not None and d.head.inputs is not None
            uids = [
                Change(
                    ("jobs", index, "uids", name),
                    "update",
                    f"(uid of the old {name})",
                    f"(uid of the new {name})",
                    None,
                )
                for index, job in enumerate(d.head.inputs.get("jobs") or [])
                for name in _workloads_of(job.get("target") or {})
                if name in replaced
            ]
            if uids:
                d = ResourceDiff("update", d.base, d.head, (*d.changes, *uids), d.ignored)
        result.append(d)
    return result


def _workloads_of(target: dict[str, Any]) -> list[str]:
    names = [*target.get("success_jobs", []), *target.get("worker_jobs", [])]
    names += [worker["name"] for worker in target.get("workers", [])]
    if target.get("jobset"):
        names.append(target["jobset"])
    return list(dict.fromkeys(names))


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


def config_changes(
    base_file: Path, head_file: Path, secret: set[str] | frozenset[str] = frozenset()
) -> list[str]:
    """Changed stack settings, one Markdown line each. Secure values, and the settings in
    ``secret`` (those the program made secret, as the preview records them), are never
    printed."""

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
        elif key in secret:
            lines.append(f"`{key}`: secret value changed (not shown)")
        elif key not in old:
            lines.append(f"`{key}`: added, {shown(after)}")
        elif key not in new:
            lines.append(f"`{key}`: removed (was {shown(before)})")
        else:
            lines.append(f"`{key}`: {shown(before)} → {shown(after)}")
    return lines
