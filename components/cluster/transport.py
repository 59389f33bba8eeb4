"""Every exchange with an API server, bounded in time and size.

urllib3's timeouts bound each socket operation, not a request: a server that sends one
byte per second never trips them, and a body is read whole however large it is. The API
client :func:`~trainjobs.cluster.client.load_api_client` returns talks through
:class:`BoundedPoolManager` instead, which

- gives every request a deadline for all of it, headers and body (the larger of its
  connect and read timeouts): a request still unanswered then fails with
  :class:`ResponseTooSlow`, a transient error the callers retry within their own limits
  (``--connect-timeout``, ``--timeout``), so nothing waits on a trickling server longer;
- reads at most :data:`MAX_RESPONSE_BYTES` of a body (:class:`ResponseTooLarge`, a
  one-line error, not a retry: the same request gets the same answer);
- leaves streamed responses (watches) to :func:`stream_lines`, which ends the stream at
  the caller's deadline and refuses a line longer than :data:`MAX_EVENT_BYTES`.

A request whose headers never arrive is left to a daemon thread (a blocked read cannot be
interrupted from outside); its connection is closed whenever the server answers. That
machinery (:mod:`trainjobs.cluster.exchange`) needs no urllib3: the JSON client uses it too.
"""

from __future__ import annotations

import io
import time
from collections.abc import Iterator
from typing import Any

import urllib3

from trainjobs.cluster.errors import BadResponse
from trainjobs.cluster.exchange import (
    Exchange,
    ResponseTooSlow,
    read_all,
)

MAX_EVENT_BYTES = 4 * 1024 * 1024
"""One watch event: one object (at most 1.5 MiB in etcd) and its envelope."""
DEFAULT_DEADLINE_SECONDS = 300.0
"""For a request that names no timeout (every request of trainjobs names one)."""


def _deadline_seconds(timeout: Any) -> float | None:
    if isinstance(timeout, urllib3.Timeout):
        limits = [t for t in (timeout.total, timeout.connect_timeout, timeout.read_timeout)]
        numbers = [float(t) for t in limits if isinstance(t, int | float)]
        return max(numbers) if numbers else None
    if isinstance(timeout, int | float):
        return float(timeout)
    return None


def bound(api: Any) -> Any:
    """``api`` (a kubernetes ApiClient), its requests bounded from now on."""
    rest = api.rest_client
    if not isinstance(rest.pool_manager, BoundedPoolManager):
        rest.pool_manager = BoundedPoolManager(rest.pool_manager)
    return api


class BoundedPoolManager:
    """urllib3's PoolManager with a deadline for each whole request and a size bound."""

    def __init__(self, manager: urllib3.PoolManager) -> None:
        self.manager = manager

    def __getattr__(self, name: str) -> Any:
        return getattr(self.manager, name)

    def request(self, method: str, url: str, **kwargs: Any) -> Any:
        given = _deadline_seconds(kwargs.get("timeout"))
        seconds = given if given is not None else DEFAULT_DEADLINE_SECONDS
        deadline = time.monotonic() + seconds
        preload = kwargs.get("preload_content", True) is not False
        exchange = Exchange(self.manager, (method, url), kwargs)
        kind, value = exchange.next(deadline)
        if kind == "late":
            raise ResponseTooSlow(f"no response from {_where(url)} within {seconds:g}s")
        if kind == "error":
            raise value
        response = value
        if _streamed(kwargs.get("fields")):
            response.trainjobs_exchange = exchange
            return response
        body = read_all(exchange, deadline, f"{method} {_where(url)}", seconds)
        return urllib3.HTTPResponse(
            body=io.BytesIO(body),
            headers=response.headers,
            status=response.status,
            reason=response.reason,
            preload_content=preload,
            decode_content=False,  # read1 already decoded it (gzip...)
            request_method=method,
        )


def _streamed(fields: Any) -> bool:
    """A watch or a followed log: its body is read as it comes, by :func:`stream_lines`."""
    pairs = fields.items() if isinstance(fields, dict) else (fields or [])
    return any(key in ("watch", "follow") and value in (True, "true") for key, value in pairs)


def _where(url: str) -> str:
    return urllib3.util.parse_url(url).path or "/"


def stream_lines(response: Any, deadline: float, what: str) -> Iterator[bytes]:
    """The lines of a streamed response (a watch) until it ends or ``deadline`` passes;
    a line longer than :data:`MAX_EVENT_BYTES` is a :class:`BadResponse`."""
    exchange = getattr(response, "trainjobs_exchange", None)
    if exchange is None:
        exchange = Exchange(None, (), {"response": response})
        exchange.next(deadline)  # the response itself
    pending = b""
    try:
        while True:
            kind, value = exchange.next(deadline)
            if kind in ("end", "late"):
                return
            if kind == "error":
                raise value
            pending += value
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if line.strip():
                    yield line
            if len(pending) > MAX_EVENT_BYTES:
                raise BadResponse(
                    what, f"an event longer than {MAX_EVENT_BYTES // (1024 * 1024)} MiB"
                )
    finally:
        exchange.stop()
