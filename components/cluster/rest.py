"""GET requests to the API server, answered as parsed JSON, without the kubernetes client.

`trainjobs status` and the start of `trainjobs watch` only read objects: the kubernetes
client's models (its package imports them all, seconds per command) are not needed for
that. A :class:`JsonClient` sends the requests the kubernetes client would send (same URL,
query, ``Authorization`` header and TLS settings as its ``RESTClientObject``), through the
same bounds (:mod:`trainjobs.cluster.exchange`), and fails the same way: an
answer outside 2xx is an :class:`~trainjobs.cluster.api_error.ApiError` with its status and
reason; a connection or TLS failure is the error it is.

:func:`~trainjobs.cluster.client.connect` makes one from the kubeconfig, or, when only the
kubernetes client can authenticate (exec plugins, auth providers...), around that client.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import socket
import ssl
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlencode, urlsplit

from trainjobs.cluster.api_error import ApiError
from trainjobs.cluster.exchange import Exchange, ResponseTooSlow, read_all

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from trainjobs.cluster.kubeconfig import Endpoint, Pem

Send = Callable[[str, Mapping[str, str], tuple[float, float]], bytes]
"""(path, query, (connect, read) timeouts) -> the body of a 2xx answer."""


def segment(name: str) -> str:
    """``name`` as one segment of a request's path: the kubernetes client quotes path
    parameters with no safe characters (``Configuration.safe_chars_for_path_param``)."""
    return quote(name, safe="")


class TLSError(ConnectionError):
    """The TLS handshake failed (a certificate the CA did not sign...): a connection error,
    retried and then reported as an unreachable server, as urllib3's SSLError is under the
    kubernetes client (whose ``ssl.SSLCertVerificationError`` would otherwise read as a
    ValueError, a malformed answer)."""


class JsonClient:
    """Reads API objects as JSON; :meth:`direct` or :meth:`through` a kubernetes client."""

    def __init__(
        self, host: str, send: Send, close: Callable[[], None], wrapped: ApiClient | None = None
    ) -> None:
        self.host = host
        self._send = send
        self._close = close
        self.wrapped = wrapped
        """The kubernetes client this one sends through, if it does."""

    def get(self, path: str, query: Mapping[str, str], timeout: tuple[float, float]) -> Any:
        """The parsed JSON of GET ``path`` (its segments already quoted); a body that is not
        JSON is returned as its text, as ``ApiClient.deserialize`` keeps it, so that the
        readers report it as they report any answer of the wrong shape."""
        body = self._send(path, query, timeout)
        try:
            return json.loads(body)
        except ValueError:
            return body.decode("utf-8", "replace")

    def close(self) -> None:
        self._close()

    @classmethod
    def direct(cls, endpoint: Endpoint) -> JsonClient:
        """A client of its own, with the TLS settings ``kubernetes.client.rest.RESTClientObject``
        gives its pool manager, on the standard library's HTTP client (urllib3 alone costs
        as much to import as the rest of `trainjobs status`)."""
        files = _PemFiles()
        connections = _Connections(endpoint, files)
        headers = {"Accept": "application/json", "User-Agent": "trainjobs"}
        if endpoint.authorization is not None:
            headers["authorization"] = endpoint.authorization

        def send(path: str, query: Mapping[str, str], timeout: tuple[float, float]) -> bytes:
            target = path + ("?" + urlencode(query) if query else "")
            seconds = max(timeout)
            deadline = time.monotonic() + seconds
            exchange = Exchange(connections, ("GET", target, headers, timeout), {})
            kind, value = exchange.next(deadline)
            if kind == "late":
                raise ResponseTooSlow(f"no response from {path} within {seconds:g}s")
            if kind == "error":
                if isinstance(value, ssl.SSLError):
                    raise TLSError(str(value)) from value
                raise value
            body = read_all(exchange, deadline, f"GET {path}", seconds)
            if not 200 <= value.status <= 299:
                raise ApiError(value.status, value.reason)
            return body

        return cls(endpoint.host, send, files.remove)

    @classmethod
    def through(cls, api: ApiClient) -> JsonClient:
        """Requests sent by ``api`` (a kubernetes ApiClient: it authenticates as only it
        can, refreshing an exec plugin's token), answers read as JSON, not as models."""

        def send(path: str, query: Mapping[str, str], timeout: tuple[float, float]) -> bytes:
            response = api.call_api(
                path,
                "GET",
                query_params=list(query.items()),
                header_params={"Accept": "application/json"},
                auth_settings=["BearerToken"],
                _preload_content=False,
                _return_http_data_only=True,
                _request_timeout=timeout,
            )
            return bytes(response.data)

        return cls(str(api.configuration.host), send, api.close, api)


class _PemFiles:
    """``*-data`` certificates and keys written to files (``SSLContext.load_cert_chain``
    reads files alone), in a private directory removed on close."""

    def __init__(self) -> None:
        self.directory: str | None = None

    def path(self, pem: Pem | None) -> str | None:
        if pem is None or pem.path is not None:
            return None if pem is None else pem.path
        assert pem.data is not None
        import tempfile  # with shutil, only for such certificates

        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="trainjobs-tls-")
        descriptor, path = tempfile.mkstemp(dir=self.directory)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem.data)
        return path

    def remove(self) -> None:
        if self.directory is not None:
            import shutil

            with contextlib.suppress(OSError):
                shutil.rmtree(self.directory)
            self.directory = None


class _Connections:
    """Opens a connection to the endpoint's server for each request (a command sends a
    handful), for :class:`~trainjobs.cluster.exchange.Exchange` to run in its thread."""

    def __init__(self, endpoint: Endpoint, files: _PemFiles) -> None:
        self.url = urlsplit(endpoint.host)
        self.context: ssl.SSLContext | None = None
        self.server_name = endpoint.tls_server_name or self.url.hostname
        if self.url.scheme == "https":
            self.context = _tls_context(endpoint, files)

    def request(
        self,
        method: str,
        target: str,
        headers: Mapping[str, str],
        timeout: tuple[float, float],
        preload_content: bool = False,
    ) -> _Response:
        """Connect within ``timeout[0]``, then each read within ``timeout[1]``."""
        default_port = 443 if self.context is not None else 80
        host, port = self.url.hostname or "localhost", self.url.port or default_port
        connection = http.client.HTTPConnection(host, port, timeout=timeout[0])
        connection.connect()
        if self.context is not None:
            assert connection.sock is not None
            connection.sock = self.context.wrap_socket(
                connection.sock, server_hostname=self.server_name
            )
        assert connection.sock is not None
        connection.sock.settimeout(timeout[1])
        # The server's own path prefix (a proxy's), as the kubernetes client joins them.
        connection.request(method, self.url.path.rstrip("/") + target, headers=dict(headers))
        return _Response(connection, connection.getresponse())


class _Response:
    """An answer, with what the exchange calls on it."""

    def __init__(self, connection: http.client.HTTPConnection, answer: Any) -> None:
        self.connection = connection
        self.answer = answer
        self.status: int = answer.status
        self.reason: str = answer.reason

    def read1(self, size: int) -> bytes:
        return bytes(self.answer.read1(size))

    def shutdown(self) -> None:
        if self.connection.sock is not None:
            self.connection.sock.shutdown(socket.SHUT_RDWR)

    def close(self) -> None:
        self.connection.close()

    release_conn = close  # no pool: a connection serves one request


def _tls_context(endpoint: Endpoint, files: _PemFiles) -> ssl.SSLContext:
    """As urllib3 sets it up from ``RESTClientObject``'s arguments: the kubeconfig's CA
    (else certifi's bundle, as the kubernetes client uses), no checks at all when it says
    ``insecure-skip-tls-verify``, and its client certificate."""
    ca = files.path(endpoint.ca)
    if ca is None:
        import certifi

        ca = certifi.where()
    context = ssl.create_default_context(cafile=ca)
    if not endpoint.verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert = files.path(endpoint.client_cert)
    if cert is not None:
        context.load_cert_chain(cert, files.path(endpoint.client_key))
    return context
