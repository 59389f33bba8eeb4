"""A stopped request's connection is closed by the thread that reads it, never handed back to
the pool by the caller: a connection given back while its reader still holds it was closed
under the next request (the scale-down PATCH after a watch ended: 'NoneType' object has no
attribute 'makefile', and the workers stayed up)."""

from __future__ import annotations

import threading
import time

from trainjobs.cluster.exchange import Exchange


class Response:
    """A streamed response whose read blocks until its socket is shut down; it records who
    did what to it, in order."""

    def __init__(self, body: list[bytes]) -> None:
        self.body = body
        self.calls: list[tuple[str, str]] = []
        self.shut = threading.Event()

    def _record(self, what: str) -> None:
        self.calls.append((what, threading.current_thread().name))

    def read1(self, size: int) -> bytes:
        if self.body:
            return self.body.pop(0)
        self.shut.wait(10)
        raise OSError("the socket was shut down")

    def shutdown(self) -> None:
        self._record("shutdown")
        self.shut.set()

    def close(self) -> None:
        self._record("close")

    def release_conn(self) -> None:
        self._record("release_conn")


def wait_for(condition, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline
        time.sleep(0.01)


def test_a_stopped_stream_is_shut_by_the_caller_and_closed_then_released_by_its_reader():
    response = Response([b"an event\n"])
    exchange = Exchange(None, (), {"response": response})
    assert exchange.next(time.monotonic() + 10) == ("response", response)
    assert exchange.next(time.monotonic() + 10) == ("data", b"an event\n")

    exchange.stop()
    wait_for(lambda: len(response.calls) == 3)

    main = threading.current_thread().name
    assert response.calls == [
        ("shutdown", main),
        ("close", "api-request"),
        ("release_conn", "api-request"),
    ]


def test_a_stop_after_the_response_ended_leaves_the_pooled_connection_alone():
    response = Response([b"{}", b""])
    exchange = Exchange(None, (), {"response": response})
    kinds = [exchange.next(time.monotonic() + 10)[0] for _ in range(3)]
    assert kinds == ["response", "data", "end"]

    exchange.stop()  # the connection serves other requests by now: no shutdown, no close

    assert response.calls == [("release_conn", "api-request")]
