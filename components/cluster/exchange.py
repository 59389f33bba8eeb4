"""One request to an API server, bounded in time and size, whichever HTTP client sends it.

A request runs in a thread of its own (:class:`Exchange`): the caller waits for it only until
its deadline, for all of it, headers and body, as :mod:`trainjobs.cluster.transport` explains;
a body is read to at most :data:`MAX_RESPONSE_BYTES`. The kubernetes client's urllib3 pool
(:class:`~trainjobs.cluster.transport.BoundedPoolManager`) and the JSON client's own
connections (:mod:`trainjobs.cluster.rest`) both send through it; this module loads neither
urllib3 nor the kubernetes client.
"""

from __future__ import annotations

import contextlib
import http.client
import queue
import threading
import time
from typing import Any

from trainjobs.cluster.errors import ResponseTooLarge

MAX_RESPONSE_BYTES = 64 * 1024 * 1024
"""A whole response. etcd stores objects of at most 1.5 MiB (its ``--max-request-bytes``
default), so this holds a list of a few thousand Jobs or pods with room to spare."""
_CHUNK = 64 * 1024


class ResponseTooSlow(http.client.HTTPException):
    """The server did not send a whole response before the request's deadline."""


class Exchange:
    """One request in its own thread: the caller waits for it only until its deadline."""

    def __init__(self, manager: Any, args: tuple[Any, ...], kwargs: Any) -> None:
        self.answers: queue.Queue[tuple[str, Any]] = queue.Queue(maxsize=8)
        self.stopped = threading.Event()
        self.response: Any = None
        """The open response; None again once it was read to its end and handed back."""
        self._lock = threading.Lock()
        thread = threading.Thread(
            target=self._run, args=(manager, args, kwargs), daemon=True, name="api-request"
        )
        thread.start()

    def _put(self, kind: str, value: Any) -> bool:
        while not self.stopped.is_set():
            try:
                self.answers.put((kind, value), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, manager: Any, args: tuple[Any, ...], kwargs: Any) -> None:
        try:
            if manager is None:  # a response already open (a client without the bounds)
                response = kwargs["response"]
            else:
                response = manager.request(*args, **{**kwargs, "preload_content": False})
        except Exception as error:
            self._put("error", error)
            return
        with self._lock:
            self.response = response
            if self.stopped.is_set():
                self._discard()
                return
        if not self._put("response", response):
            self._discard()
            return
        try:
            while not self.stopped.is_set():
                chunk = response.read1(_CHUNK)
                if not chunk:
                    break
                if not self._put("data", chunk):
                    self._discard()
                    return
        except Exception as error:
            self._discard()
            self._put("error", error)
            return
        with self._lock:
            if self.stopped.is_set():
                self._discard()
                return
            with contextlib.suppress(Exception):
                response.release_conn()  # read to its end: the connection can serve again
            self.response = None
        self._put("end", None)

    def next(self, deadline: float) -> tuple[str, Any]:
        """The next thing the request produced; ("late", None) at the deadline."""
        try:
            return self.answers.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            self.stop()
            return "late", None

    def stop(self) -> None:
        """Give up the request: its socket is shut, so a blocked read returns now. Only the
        request's own thread closes the connection and hands it back to the pool: handed
        back from here, it could be serving the next request by the time the reader's
        clean-up closed it (a watch's end, then the scale-down PATCH on the same connection:
        urllib3 closes a response's connection when a read of it fails)."""
        self.stopped.set()
        with self._lock:
            if self.response is not None:
                with contextlib.suppress(Exception):
                    self.response.shutdown()

    def _discard(self) -> None:
        """In the request's thread: a response not read to its end never serves again."""
        with contextlib.suppress(Exception):
            self.response.close()
        with contextlib.suppress(Exception):
            self.response.release_conn()  # a closed connection back: the pool keeps its size


def read_all(exchange: Exchange, deadline: float, what: str, seconds: float) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        kind, value = exchange.next(deadline)
        if kind == "end":
            return b"".join(chunks)
        if kind == "error":
            raise value
        if kind == "late":
            raise ResponseTooSlow(f"{what}: the response did not end within {seconds:g}s")
        size += len(value)
        if size > MAX_RESPONSE_BYTES:
            exchange.stop()
            raise ResponseTooLarge(
                f"the Kubernetes API answered {what} with more than "
                f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MiB; refusing to read it"
            )
        chunks.append(value)
