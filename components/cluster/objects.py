"""API objects read from JSON under the attribute names of the kubernetes client's models.

`trainjobs status` reads Services, ConfigMaps and Jobs as JSON (:mod:`trainjobs.cluster.rest`);
the checks and rules that read them (``check_job``, ``JobStatus.from_job``, ``decide``) were
written against the models (``job.metadata.creation_timestamp``, ``job.status.start_time``).
An :class:`ApiObject` gives them the same names and the same values: JSON keys in snake case,
timestamps parsed as the client parses them (``ApiClient.__deserialize_datetime``:
``dateutil.parser.parse``), maps of strings (labels, annotations) as the JSON gave them, and
every other value unchanged, so ``check_job`` judges its types.
"""

from __future__ import annotations

from typing import Any

from trainjobs.cluster.errors import BadResponse

DATETIME_FIELDS = frozenset(
    {"creationTimestamp", "deletionTimestamp", "startTime", "completionTime"}
    | {"lastTransitionTime", "lastProbeTime"}
)
"""The ``date-time`` fields of ObjectMeta, JobStatus and JobCondition."""
MAP_FIELDS = frozenset({"labels", "annotations", "data", "matchLabels", "nodeSelector"})
"""``map[string]string`` fields: a mapping, not an object with attributes."""


class ApiObject:
    """One JSON object; an absent field reads as None, as a model's unset attribute does."""

    __slots__ = ("_fields",)

    def __init__(self, fields: dict[str, Any]) -> None:
        self._fields = fields

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        first, *rest = name.split("_")
        return self._fields.get(first + "".join(part[:1].upper() + part[1:] for part in rest))

    def __repr__(self) -> str:
        return f"ApiObject({self._fields!r})"


def read_object(data: Any, what: str) -> Any:
    """``data`` (parsed JSON) as :class:`ApiObject` (nested ones for its objects); a
    timestamp that does not parse is a BadResponse naming the request ``what``."""
    return _value("", data, what)


def read_list(data: Any, what: str) -> ApiObject:
    """A list answer (``metadata`` and ``items``), each item read by :func:`read_object`.

    The client's list models require ``items`` and deserialize whatever iterates as a list;
    the same answers give the same messages here, whichever client read them."""
    items = data.get("items") if isinstance(data, dict) else None
    if items is None:
        raise BadResponse(what, "ValueError: Invalid value for `items`, must not be `None`")
    metadata = _value("metadata", data.get("metadata"), what)
    return ApiObject({"metadata": metadata, "items": [read_object(item, what) for item in items]})


def _value(key: str, value: Any, what: str) -> Any:
    if key in MAP_FIELDS:
        return value
    if key in DATETIME_FIELDS and isinstance(value, str):
        return _datetime(value, what)
    if isinstance(value, dict):
        return ApiObject({name: _value(name, item, what) for name, item in value.items()})
    if isinstance(value, list):
        return [_value("", item, what) for item in value]
    return value


def _datetime(text: str, what: str) -> Any:
    from dateutil.parser import parse  # type: ignore[import-untyped]

    try:
        return parse(text)
    except (ValueError, OverflowError):
        raise BadResponse(what, f"Failed to parse `{text}` as datetime object") from None
