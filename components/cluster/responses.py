"""What an API server answered, checked before anything reads it.

The kubernetes client's models take what they are given: a count that is a string stays
a string, a name that is a list stays a list, and the code that reads them fails later with
a traceback. :func:`check_job` checks every field of a Job the watcher and ``status`` read;
:func:`watch_events` reads a watch stream (newline-delimited JSON events, as the API
server's ``watch=true`` sends them: ``{"type": ..., "object": ...}``) through
:func:`~trainjobs.cluster.transport.stream_lines`, so a garbage event is one
:class:`~trainjobs.cluster.errors.BadResponse` naming the request, never a traceback.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Generator
from datetime import datetime
from typing import TYPE_CHECKING, Any

from trainjobs.cluster.errors import MALFORMED, BadResponse, bad_response

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

EVENT_TYPES = frozenset({"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"})
"""k8s.io/apimachinery pkg/watch/watch.go: the EventType values a watch sends."""


def _check(value: Any, kinds: type | tuple[type, ...], field: str, what: str) -> None:
    if value is None:
        return
    # bool is an int to Python, never a count or a name to Kubernetes.
    if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in _tuple(kinds)):
        raise BadResponse(what, f"{field} is {type(value).__name__} {_short(value)}")


def _tuple(kinds: type | tuple[type, ...]) -> tuple[type, ...]:
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_metadata(obj: Any, what: str) -> None:
    """The metadata every reader uses: name, namespace, uid, labels and annotations."""
    metadata = getattr(obj, "metadata", None)
    if metadata is None:
        raise BadResponse(what, "an object without metadata")
    _check(metadata.name, str, "metadata.name", what)
    if metadata.name is None:
        raise BadResponse(what, "an object without metadata.name")
    for field in ("namespace", "uid", "resource_version"):
        _check(getattr(metadata, field), str, f"metadata.{field}", what)
    _check(metadata.creation_timestamp, datetime, "metadata.creationTimestamp", what)
    for field in ("labels", "annotations"):
        mapping = getattr(metadata, field)
        _check(mapping, dict, f"metadata.{field}", what)
        for key, value in (mapping or {}).items():
            _check(value, str, f"metadata.{field}[{key!r}]", what)


def check_job(job: Any, what: str) -> Any:
    """``job`` (a V1Job), if every field the watcher reads has its type."""
    check_metadata(job, what)
    where = f"Job {job.metadata.name}"
    spec = job.spec
    if spec is not None:
        _check(spec.suspend, bool, f"{where} spec.suspend", what)
    status = job.status
    if status is None:
        return job
    for field in ("active", "ready", "succeeded", "failed"):
        _check(getattr(status, field), int, f"{where} status.{field}", what)
    for field in ("start_time", "completion_time"):
        _check(getattr(status, field), datetime, f"{where} status.{field}", what)
    _check(status.conditions, list, f"{where} status.conditions", what)
    for index, condition in enumerate(status.conditions or []):
        at = f"{where} status.conditions[{index}]"
        for field in ("type", "status", "reason", "message"):
            _check(getattr(condition, field, None), str, f"{at}.{field}", what)
        _check(condition.last_transition_time, datetime, f"{at}.lastTransitionTime", what)
    return job


def check_list(listing: Any, what: str, check: Callable[[Any, str], Any]) -> list[Any]:
    """The items of a list response, each checked; and its resourceVersion is a string."""
    metadata = getattr(listing, "metadata", None)
    if metadata is not None:
        _check(metadata.resource_version, str, "metadata.resourceVersion", what)
    items = listing.items or []
    _check(items, list, "items", what)
    for item in items:
        check(item, what)
    return list(items)


class _Raw:
    """What ``ApiClient.deserialize`` reads: a response's ``data``."""

    def __init__(self, data: str) -> None:
        self.data = data


def to_model(api: ApiClient, data: Any, model: str, what: str) -> Any:
    """``data`` (parsed JSON) as the kubernetes client's ``model``; BadResponse if it cannot."""
    from kubernetes.client.exceptions import ApiException

    try:
        return api.deserialize(_Raw(json.dumps(data)), model)
    except ApiException as error:  # a date it cannot parse
        raise BadResponse(what, str(error.reason)) from None
    except MALFORMED as error:
        raise bad_response(error, what) from None


def watch_events(
    api: ApiClient,
    response: Any,
    deadline: float,
    what: str,
    model: str,
    check: Callable[[Any, str], Any],
) -> Generator[tuple[str, Any], None, None]:
    """(type, object) of each event of a watch ``response`` until it ends or ``deadline``;
    an ERROR event becomes the ApiException its Status carries (410 Gone: re-list)."""
    from kubernetes.client.exceptions import ApiException

    from trainjobs.cluster.transport import stream_lines  # urllib3: only watches need it

    for line in stream_lines(response, deadline, what):
        try:
            event = json.loads(line)
        except ValueError as error:
            raise BadResponse(what, f"an event that is not JSON: {error}") from None
        if not isinstance(event, dict) or event.get("type") not in EVENT_TYPES:
            raise BadResponse(what, f"an event without a known type: {_short(line[:80])}")
        kind, obj = event["type"], event.get("object")
        if not isinstance(obj, dict):
            raise BadResponse(what, f"a {kind} event whose object is {type(obj).__name__}")
        if kind == "ERROR":
            code = obj.get("code")
            message = obj.get("message")
            status = code if isinstance(code, int) and not isinstance(code, bool) else 500
            raise ApiException(status=status, reason=str(message or obj.get("reason") or ""))
        if kind == "BOOKMARK":
            yield kind, None
            continue
        yield kind, check(to_model(api, obj, model, what), what)
