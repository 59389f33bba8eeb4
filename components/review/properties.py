"""Property paths, the changes between two objects, and the engine's ignoreChanges."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

PropertyPath = tuple[str | int, ...]


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
            if found and settable and (isinstance(parent, dict) or int(last) < len(parent)):
                parent[last] = copy.deepcopy(value)  # type: ignore[index]  # settable: key fits
            elif not found and isinstance(parent, dict) and last in parent:
                del parent[last]
    return result
