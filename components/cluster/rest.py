"""GET requests to the API server, answered as parsed JSON, without the kubernetes client.

`trainjobs status` and the start of `trainjobs watch` only read objects: the kubernetes
client's models (its package imports them all, seconds per command) are not needed for
that. A :class:`JsonClient` sends the requests the kubernetes client would send (same URL,
query, ``Authorization`` header and TLS settings as its ``RESTClientObject``), through the
same bounded transport (:mod:`trainjobs.cluster.transport`), and fails the same way: an
answer outside 2xx is an :class:`~trainjobs.cluster.api_error.ApiError` with its status and
reason, a TLS failure one with status 0.

:func:`~trainjobs.cluster.client.connect` makes one from the kubeconfig, or, when only the
kubernetes client can authenticate (exec plugins, auth providers...), around that client.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from trainjobs.cluster.api_error import ApiError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from trainjobs.cluster.kubeconfig import Endpoint, Pem

Send = Callable[[str, Mapping[str, str], tuple[float, float]], bytes]
"""(path, query, (connect, read) timeouts) -> the body of a 2xx answer."""


def segment(name: str) -> str:
    """``name`` as one segment of a request's path: the kubernetes client quotes path
    parameters with no safe characters (``Configuration.safe_chars_for_path_param``)."""
    return quote(name, safe="")


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

    def __enter__(self) -> JsonClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @classmethod
    def direct(cls, endpoint: Endpoint) -> JsonClient:
        """A client of its own, set up as ``kubernetes.client.rest.RESTClientObject`` sets
        up its pool manager from the same settings."""
        import ssl

        import urllib3

        from trainjobs.cluster.transport import BoundedPoolManager

        files = _PemFiles()
        options: dict[str, Any] = {
            "cert_reqs": ssl.CERT_REQUIRED if endpoint.verify else ssl.CERT_NONE,
            "cert_file": files.path(endpoint.client_cert),
            "key_file": files.path(endpoint.client_key),
        }
        ca = files.path(endpoint.ca)
        if ca is None:
            import certifi

            ca = certifi.where()
        options["ca_certs"] = ca
        if endpoint.tls_server_name:
            options["server_hostname"] = endpoint.tls_server_name
        pool = BoundedPoolManager(urllib3.PoolManager(num_pools=4, maxsize=4, **options))
        headers = {"Accept": "application/json", "User-Agent": "trainjobs"}
        if endpoint.authorization is not None:
            headers["authorization"] = endpoint.authorization

        def send(path: str, query: Mapping[str, str], timeout: tuple[float, float]) -> bytes:
            try:
                response = pool.request(
                    "GET",
                    endpoint.host + path,
                    fields=dict(query),
                    headers=headers,
                    timeout=urllib3.Timeout(connect=timeout[0], read=timeout[1]),
                )
            except urllib3.exceptions.SSLError as error:
                raise ApiError(0, f"{type(error).__name__}\n{error}") from None
            if not 200 <= response.status <= 299:
                raise ApiError(response.status, response.reason)
            return bytes(response.data)

        def close() -> None:
            pool.clear()
            files.remove()

        return cls(endpoint.host, send, close)

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
    """``*-data`` certificates and keys written to files (urllib3 loads a client
    certificate from files alone), in a private directory removed on close."""

    def __init__(self) -> None:
        self.directory: str | None = None

    def path(self, pem: Pem | None) -> str | None:
        if pem is None or pem.path is not None:
            return None if pem is None else pem.path
        assert pem.data is not None
        if self.directory is None:
            self.directory = tempfile.mkdtemp(prefix="trainjobs-tls-")
        descriptor, path = tempfile.mkstemp(dir=self.directory)
        with os.fdopen(descriptor, "wb") as file:
            file.write(pem.data)
        return path

    def remove(self) -> None:
        if self.directory is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(self.directory)
            self.directory = None
