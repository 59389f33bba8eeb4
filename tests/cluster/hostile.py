"""A hostile or broken API server over real HTTP: each test says how it answers.

Unlike :mod:`tests.kubefake` it keeps no state: ``answer(method, path, query)`` returns what
to send, one of :class:`Json`, :class:`Raw`, :class:`Trickle`, :class:`Huge` or
:class:`Events`, and every request is counted.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass(frozen=True)
class Json:
    body: Any
    status: int = 200


@dataclass(frozen=True)
class Raw:
    body: bytes
    status: int = 200


@dataclass(frozen=True)
class Trickle:
    """Headers at once (or, with ``headers``, the status line itself), then one byte a
    second of ``body``, forever if it is long enough."""

    body: bytes = b'{"kind": "JobList", "items": [' + b" " * 100_000
    headers: bool = False


@dataclass(frozen=True)
class Huge:
    """A body of ``size`` bytes, sent as fast as the client reads."""

    size: int


@dataclass(frozen=True)
class Events:
    """A watch stream: these lines, then the stream ends."""

    lines: list[bytes]


Answer = Json | Raw | Trickle | Huge | Events


class HostileServer:
    def __init__(self, answer: Callable[[str, str, dict[str, str]], Answer]) -> None:
        self.answer = answer
        self.requests: Counter[str] = Counter()
        self.stopping = threading.Event()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                query = {k: v[-1] for k, v in parse_qs(parts.query).items()}
                kind = "watch" if query.get("watch", "").lower() == "true" else "GET"
                server.requests[f"{kind} {parts.path}"] += 1
                with contextlib.suppress(OSError):
                    server._send(self, server.answer("GET", parts.path, query))

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}"

    def count(self, kind: str, path: str) -> int:
        return self.requests[f"{kind} {path}"]

    def write_kubeconfig(self, path: Path) -> Path:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "hostile", "cluster": {"server": self.url}}],
            "users": [{"name": "u", "user": {"token": "t"}}],
            "contexts": [{"name": "hostile", "context": {"cluster": "hostile", "user": "u"}}],
            "current-context": "hostile",
        }
        path.write_text(json.dumps(config), encoding="utf-8")
        return path

    def close(self) -> None:
        self.stopping.set()
        self.http.shutdown()
        self.http.server_close()

    def _send(self, handler: BaseHTTPRequestHandler, answer: Answer) -> None:
        out = handler.wfile
        if isinstance(answer, Json | Raw):
            body = answer.body if isinstance(answer, Raw) else json.dumps(answer.body).encode()
            self._head(handler, answer.status, len(body))
            out.write(body)
        elif isinstance(answer, Trickle):
            head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n"
            if not answer.headers:
                out.write(head)
                out.flush()
            for byte in head + answer.body if answer.headers else answer.body:
                if self.stopping.wait(1.0):
                    return
                out.write(bytes([byte]))
                out.flush()
        elif isinstance(answer, Huge):
            self._head(handler, 200, answer.size)
            block = b" " * 65536
            for _ in range(answer.size // len(block)):
                out.write(block)
        else:
            handler.send_response(200)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Connection", "close")
            handler.end_headers()
            for line in answer.lines:
                out.write(line + b"\n")
                out.flush()
            handler.close_connection = True

    @staticmethod
    def _head(handler: BaseHTTPRequestHandler, status: int, length: int) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(length))
        handler.end_headers()


@contextlib.contextmanager
def hostile(answer: Callable[[str, str, dict[str, str]], Answer]) -> Iterator[HostileServer]:
    server = HostileServer(answer)
    try:
        yield server
    finally:
        server.close()


def job(name: str = "train-master", **status: Any) -> dict[str, Any]:
    """A batch/v1 Job as the API server sends it."""
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": "default", "uid": "u-1", "resourceVersion": "5"},
        "spec": {"template": {"spec": {"containers": []}}},
        "status": status,
    }


def job_list(*jobs: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "JobList",
        "metadata": {"resourceVersion": "7"},
        "items": list(jobs),
    }


def empty_list(kind: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": kind, "metadata": {"resourceVersion": "1"}, "items": []}


def now() -> float:
    return time.monotonic()
