"""Pod templates checked against the official Kubernetes OpenAPI schema (types and shapes).

The schema is the one ``kubernetes-validate`` bundles for the newest Kubernetes it knows
(``podtemplatespec-v1.json``, strict variant). A value of the wrong type (``env`` as a
mapping, ``command`` as a string, ``image`` as a list, ``terminationGracePeriodSeconds:
"abc"``), a missing required field (an env item without ``name``, a volumeMount without
``mountPath``, ``fieldRef: {}``) or an integer that does not fit the field's 32 or 64 bits is
a problem, each reported at its field path, all at once. An unknown field is a warning and is
removed from the template: the API server drops fields it does not know (its default field
validation warns), so it has no effect there, and a manifest that kept it would fail strict
validation and server-side apply's strict field validation.
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import json
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from trainjobs.core import answer_cache
from trainjobs.core.errors import Problem

if TYPE_CHECKING:
    import jsonschema

# jsonschema, referencing and kubernetes-validate load on the first check (about 0.2 s): a
# command that checks no template (`trainjobs run --help`, `status`) never pays for them.

_TYPE_NAMES = {
    "array": "a list",
    "object": "a mapping",
    "string": "a string",
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
}
_INT_RANGES = {"int32": 32, "int64": 64}


@cache
def kubernetes_version() -> str:
    """The Kubernetes version whose schema templates are checked against."""
    import kubernetes_validate.utils

    return str(kubernetes_validate.utils.latest_version())


@cache
def _validator() -> jsonschema.protocols.Validator:
    import jsonschema
    import kubernetes_validate.utils
    from referencing import Registry, Resource

    version = kubernetes_version()
    directory = f"kubernetes-json-schema/v{version}-local-strict"
    schema = kubernetes_validate.utils.schema_contents(
        f"{directory}/podtemplatespec-v1.json", version
    )
    definitions = kubernetes_validate.utils.schema_contents(
        f"{directory}/_definitions.json", version
    )
    registry = Resource.from_contents(definitions) @ (Resource.from_contents(schema) @ Registry())
    formats = jsonschema.FormatChecker(formats=())
    for name, bits in _INT_RANGES.items():
        formats.checks(name)(_fits(bits))
    return jsonschema.Draft202012Validator(schema, registry=registry, format_checker=formats)


def _fits(bits: int) -> Any:
    def check(value: Any) -> bool:
        if not isinstance(value, int) or isinstance(value, bool):
            return True
        return -(2 ** (bits - 1)) <= value < 2 ** (bits - 1)

    return check


def check_template_types(
    template: Any, path: str, problems: list[Problem], warnings: list[Problem]
) -> None:
    """Append a problem per schema violation of ``template`` (a PodTemplateSpec at ``path``)
    and a warning per field the schema does not know, which is removed from ``template``.

    Checked once per content: the templates of many replicas or many jobs are often the same,
    and the schema's answer depends on nothing else (``path`` only prefixes the field paths).
    The answer is also kept in the user's cache directory (:mod:`trainjobs.core.answer_cache`),
    so running or validating the same job again loads neither jsonschema nor the schema.
    """
    found = _answer(template)
    problems += [Problem(f"{path}{where}", message) for where, message in found[0]]
    warnings += [Problem(f"{path}{where}", message) for where, message in found[1]]
    for parts, key in found[2]:
        _drop(template, parts, key)


def _drop(template: Any, parts: tuple[str | int, ...], key: str) -> None:
    """Remove ``key`` from the mapping at ``parts`` below ``template``."""
    owner = template
    for part in parts:
        owner = owner[part]
    if isinstance(owner, dict):
        owner.pop(key, None)


Found = tuple[tuple[str, str], ...]
"""(field path below the template, message) pairs."""
Unknown = tuple[tuple[tuple[str | int, ...], str], ...]
"""(location of a mapping below the template, a key of it the schema does not know) pairs."""

_CHECKED: dict[str, tuple[Found, Found, Unknown]] = {}
"""Problems, warnings and unknown fields by template content (see :func:`_content`)."""
_CHECKED_MAX = 256


def _answer(template: Any) -> tuple[Found, Found, Unknown]:
    key = _content(template)
    if key is None:
        return _type_problems(template)
    found = _CHECKED.get(key)
    if found is None:
        found = _stored(answer_cache.load(_CACHE_KIND, _code_salt(), key))
        if found is None:
            found = _type_problems(template)
            answer_cache.store(_CACHE_KIND, _code_salt(), key, found)
        if len(_CHECKED) >= _CHECKED_MAX:
            _CHECKED.clear()
        _CHECKED[key] = found
    return found


_CACHE_KIND = "pod-schema"


@cache
def _code_salt() -> str:
    """Names the code an answer depends on: this module and the installed jsonschema,
    referencing and kubernetes-validate (the schema's files), by location, size and time, so
    an upgrade or an edit never reads an older answer. Found without importing them."""
    parts = [hashlib.sha256(Path(__file__).read_bytes()).hexdigest()]
    for name in ("jsonschema", "referencing", "kubernetes_validate"):
        spec = importlib.util.find_spec(name)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        info = origin.stat() if origin is not None else None
        parts.append(f"{origin}:{info.st_size}:{info.st_mtime_ns}" if info else f"{name}:none")
    return "\n".join(parts)


def _stored(answer: Any) -> tuple[Found, Found, Unknown] | None:
    """A stored answer back as :func:`_type_problems` returns it; None unless well formed."""
    try:
        problems, warnings, unknown = answer
        return (
            tuple((str(where), str(message)) for where, message in problems),
            tuple((str(where), str(message)) for where, message in warnings),
            tuple(
                (tuple(p if isinstance(p, int) else str(p) for p in parts), str(key))
                for parts, key in unknown
            ),
        )
    except (TypeError, ValueError):
        return None


def _content(template: Any) -> str | None:
    """The template's canonical JSON; None when JSON would change it (a mapping key that is
    not a string: ``true`` and ``"true"`` are different keys), which is then checked every
    time."""
    if not _string_keys(template):
        return None
    return json.dumps(template, sort_keys=True)


def _string_keys(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if not all(isinstance(key, str) for key in item):
                return False
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return True


def _type_problems(template: Any) -> tuple[Found, Found, Unknown]:
    """Problems, warnings and unknown fields of ``template``, each with its field path
    relative to it."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    unknown: list[tuple[tuple[str | int, ...], str]] = []
    errors = sorted(_validator().iter_errors(template), key=lambda e: _where("", e.absolute_path))
    for error in errors:
        where = _where("", error.absolute_path)
        if error.validator == "additionalProperties":
            found = _unknown_fields(error, where)
            warnings.extend(warning for warning, _ in found)
            unknown.extend((tuple(error.absolute_path), key) for _, key in found)
        elif error.validator == "required":
            given = error.instance if isinstance(error.instance, dict) else {}
            missing = [name for name in error.validator_value if name not in given]
            problems += [
                Problem(f"{where}.{name}", "Required value: this field must be set")
                for name in missing
            ]
        else:
            problems.append(Problem(where, _message(error)))
    return (
        tuple((p.path, p.message) for p in problems),
        tuple((w.path, w.message) for w in warnings),
        tuple(unknown),
    )


def _where(path: str, parts: Iterable[Any]) -> str:
    where = path
    for part in parts:
        where += f"[{part}]" if isinstance(part, int) else f".{part}"
    return where


def _shown(value: Any) -> str:
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, list):
        return "a list"
    text = json.dumps(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _message(error: jsonschema.ValidationError) -> str:
    value = error.instance
    if error.validator == "type":
        allowed = [t for t in _as_list(error.validator_value) if t != "null"]
        expected = " or ".join(_TYPE_NAMES.get(t, t) for t in allowed)
        return f"Invalid value: {_shown(value)}: must be {expected}"
    if error.validator == "oneOf":
        kinds = sorted({t for s in error.validator_value for t in _as_list(s.get("type"))})
        expected = " or ".join(_TYPE_NAMES.get(t, t) for t in kinds if t != "null")
        return f"Invalid value: {_shown(value)}: must be {expected}"
    if error.validator == "format" and error.validator_value in _INT_RANGES:
        bits = _INT_RANGES[error.validator_value]
        return (
            f"Invalid value: {value}: must fit in {bits} bits (from {-(2 ** (bits - 1))} to "
            f"{2 ** (bits - 1) - 1})"
        )
    if error.validator == "enum":
        supported = ", ".join(json.dumps(v) for v in error.validator_value)
        return f"Unsupported value: {_shown(value)}: supported values: {supported}"
    return f"Invalid value: {_shown(value)}: {error.message}"


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _unknown_fields(error: jsonschema.ValidationError, where: str) -> list[tuple[Problem, str]]:
    """A warning for each key of the mapping that the schema does not know, with the key."""
    known = list((error.schema.get("properties") or {}).keys())
    instance = error.instance if isinstance(error.instance, dict) else {}
    found = []
    for key in instance:
        if key in known:
            continue
        close = difflib.get_close_matches(str(key), known, n=1, cutoff=0.75)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        found.append(
            (
                Problem(
                    f"{where}.{key}",
                    f"not a field of a Kubernetes {kubernetes_version()} pod template: the API "
                    f"server drops it, so it has no effect{hint}",
                ),
                key,
            )
        )
    return found
