"""`trainjobs status` over TLS, as a kubeconfig describes it: the CA (data), the server's
name (``tls-server-name``), a client certificate (a file relative to the kubeconfig, its key
as data) or a bearer token, all read without the kubernetes client; and an exec plugin's
token, through that client."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainjobs.cli import main as cli_main

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CA, a server certificate for the name kube.test alone, and a client's (CN tester)."""
    where = tmp_path_factory.mktemp("pki")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "1",
            "-subj", "/CN=test-ca", cwd=where)  # fmt: skip
    for name, subject, extension in (
        ("server", "/CN=kube.test", "subjectAltName=DNS:kube.test"),
        ("client", "/CN=tester", "extendedKeyUsage=clientAuth"),
    ):
        (where / f"{name}.ext").write_text(extension + "\n")
        openssl("req", *ec, "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", subject,
                cwd=where)  # fmt: skip
        openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey", "ca.key",
                "-CAcreateserial", "-out", f"{name}.pem", "-days", "1", "-extfile",
                f"{name}.ext", cwd=where)  # fmt: skip
    return where


@dataclass
class Seen:
    authorization: list[str | None] = field(default_factory=list)
    client: list[str | None] = field(default_factory=list)


@pytest.fixture
def server(certificates: Path) -> Iterator[tuple[int, Seen]]:
    """An API server on 127.0.0.1 with no training jobs, over TLS, asking for a client
    certificate signed by the CA; it records each request's credentials."""
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH, cafile=certificates / "ca.pem")
    context.load_cert_chain(certificates / "server.pem", certificates / "server.key")
    context.verify_mode = ssl.CERT_OPTIONAL
    yield from serve(context)


@pytest.fixture
def plain_server() -> Iterator[tuple[int, Seen]]:
    """The same over plain HTTP."""
    yield from serve(None)


def serve(context: ssl.SSLContext | None) -> Iterator[tuple[int, Seen]]:
    seen = Seen()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            tls = isinstance(self.connection, ssl.SSLSocket)
            peer: Any = self.connection.getpeercert() if tls else None
            subject = dict(pair[0] for pair in peer["subject"]) if peer else {}
            seen.authorization.append(self.headers.get("Authorization"))
            seen.client.append(subject.get("commonName"))
            body = json.dumps({"kind": "List", "metadata": {}, "items": []}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    if context is not None:
        httpd.socket = context.wrap_socket(httpd.socket, server_side=True)
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield httpd.server_address[1], seen
    finally:
        httpd.shutdown()
        httpd.server_close()


def kubeconfig(path: Path, port: int, certificates: Path, user: dict[str, Any]) -> Path:
    ca = base64.standard_b64encode((certificates / "ca.pem").read_bytes()).decode()
    cluster = {
        "server": f"https://127.0.0.1:{port}",
        "certificate-authority-data": ca,
        "tls-server-name": "kube.test",
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "tls", "cluster": cluster}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "tls", "context": {"cluster": "tls", "user": "u"}}],
        "current-context": "tls",
    }
    path.write_text(yaml.safe_dump(document))
    return path


def test_status_over_tls_with_a_client_certificate(server, certificates, tmp_path, capsys):
    port, seen = server
    shutil.copy(certificates / "client.pem", tmp_path / "client.pem")
    key = base64.standard_b64encode((certificates / "client.key").read_bytes()).decode()
    user = {"client-certificate": "client.pem", "client-key-data": key}
    config = kubeconfig(tmp_path / "config", port, certificates, user)

    assert cli_main(["status", "--kubeconfig", str(config)]) == 0

    assert capsys.readouterr().out == "no training jobs in namespace default\n"
    assert seen.client == ["tester", "tester"]  # services, then configmaps
    assert seen.authorization == [None, None]


def test_status_over_tls_with_a_token(server, certificates, tmp_path, capsys):
    port, seen = server
    config = kubeconfig(tmp_path / "config", port, certificates, {"token": "abc"})

    assert cli_main(["status", "--kubeconfig", str(config)]) == 0

    assert capsys.readouterr().out == "no training jobs in namespace default\n"
    assert seen.authorization == ["Bearer abc", "Bearer abc"]
    assert seen.client == [None, None]


def test_a_server_the_ca_did_not_sign_is_unreachable(server, certificates, tmp_path, capsys):
    # As with the kubernetes client: urllib3 retries a failed handshake, then the watcher
    # retries the request until the first contact's limit.
    port, seen = server
    (tmp_path / "other").mkdir()
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
            "-nodes", "-keyout", "ca.key", "-out", "ca.pem", "-days", "1", "-subj",
            "/CN=other-ca", cwd=tmp_path / "other")  # fmt: skip
    config = kubeconfig(tmp_path / "config", port, tmp_path / "other", {"token": "abc"})

    code = cli_main(["status", "--kubeconfig", str(config), "--connect-timeout", "1s"])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: the Kubernetes API at https://127.0.0.1:{port} could not be ")
    assert "(last error: TLSError: [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify " in err
    assert len(err.splitlines()) == 1
    assert seen.authorization == []


def test_an_exec_plugins_token_is_sent_through_the_kubernetes_client(
    plain_server, tmp_path, capsys
):
    # The reader leaves exec plugins to the kubernetes client (kubernetes/config/
    # exec_provider.py), which runs the command and sends its token.
    port, seen = plain_server
    plugin = tmp_path / "get-token"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-exec"},
    }
    plugin.write_text(f"#!/bin/sh\necho '{json.dumps(credential)}'\n")
    plugin.chmod(0o755)
    exec_config = {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "u", "user": {"exec": exec_config}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    }
    config = tmp_path / "config"
    config.write_text(yaml.safe_dump(document))

    assert cli_main(["status", "--kubeconfig", str(config)]) == 0

    assert capsys.readouterr().out == "no training jobs in namespace default\n"
    assert seen.authorization == ["Bearer from-exec", "Bearer from-exec"]
