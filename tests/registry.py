"""A real OCI registry for tests: Debian's ``docker-registry`` (the CNCF distribution registry
2.8) on 127.0.0.1, served over TLS with a certificate from a CA made for the test, with or
without basic auth (an htpasswd file, bcrypt as the registry requires).

The engine trusts the CA through this project's engine settings only
(``out/engine/certs.d/127.0.0.1:PORT/ca.crt``, :data:`trainjobs.engines.settings.CERTS_DIR`),
never the machine's /etc; the directory goes when the registry stops.
"""

from __future__ import annotations

import base64
import json
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from trainjobs.engines.settings import CERTS_DIR

REGISTRY_TOOLS = ("docker-registry", "htpasswd", "openssl")
MISSING_TOOLS = [tool for tool in REGISTRY_TOOLS if shutil.which(tool) is None]
SKIP_REASON = (
    f"needs {', '.join(MISSING_TOOLS)} (as root, make test installs Debian's docker-registry "
    "and apache2-utils)"
)
START_TIMEOUT_S = 15


@dataclass(frozen=True)
class Registry:
    host: str
    """``127.0.0.1:PORT``."""
    ca: Path
    user: str | None
    password: str | None

    def docker_config(self) -> dict[str, object]:
        """The docker config a pull Secret or ``--authfile`` holds for this registry."""
        if self.user is None or self.password is None:
            return {"auths": {}}
        token = base64.b64encode(f"{self.user}:{self.password}".encode()).decode()
        return {"auths": {self.host: {"auth": token}}}

    def pull_secret(self, name: str) -> dict[str, object]:
        """A kubernetes.io/dockerconfigjson Secret with this registry's credentials."""
        config = json.dumps(self.docker_config()).encode()
        return {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": name},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64.b64encode(config).decode()},
        }


def _openssl(*arguments: str, cwd: Path) -> None:
    subprocess.run(["openssl", *arguments], cwd=cwd, check=True, capture_output=True)


def _certificates(where: Path) -> None:
    """A CA, and a certificate for 127.0.0.1 (an IP subjectAltName) it signed."""
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl("req", "-x509", *ec, "-keyout", "ca.key", "-out", "ca.crt", "-days", "1",
             "-subj", "/CN=trainjobs-test-ca", cwd=where)  # fmt: skip
    (where / "server.ext").write_text("subjectAltName=IP:127.0.0.1\n")
    _openssl("req", *ec, "-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1",
             cwd=where)  # fmt: skip
    _openssl("x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key",
             "-CAcreateserial", "-out", "server.crt", "-days", "1", "-extfile", "server.ext",
             cwd=where)  # fmt: skip


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _config(where: Path, port: int, auth: bool) -> str:
    lines = [
        "version: 0.1",
        "log:",
        "  level: error",
        "  accesslog:",
        "    disabled: true",
        "storage:",
        "  filesystem:",
        f"    rootdirectory: {where / 'storage'}",
        "http:",
        f"  addr: 127.0.0.1:{port}",
        "  tls:",
        f"    certificate: {where / 'server.crt'}",
        f"    key: {where / 'server.key'}",
    ]
    if auth:
        lines += [
            "auth:",
            "  htpasswd:",
            "    realm: trainjobs-test",
            f"    path: {where / 'htpasswd'}",
        ]
    return "\n".join(lines) + "\n"


def _answers(host: str, ca: Path) -> bool:
    """Whether the registry serves its API (``/v2/``: 200 open, 401 with auth)."""
    context = ssl.create_default_context(cafile=str(ca))
    try:
        urllib.request.urlopen(f"https://{host}/v2/", context=context, timeout=1)
    except urllib.error.HTTPError as error:
        return error.code == 401
    except OSError:
        return False
    return True


@contextmanager
def running_registry(where: Path, auth: bool) -> Iterator[Registry]:
    """A registry for the duration of the block, trusted by this project's engine calls."""
    where.mkdir(parents=True, exist_ok=True)
    _certificates(where)
    user, password = ("puller", "registry-test-password") if auth else (None, None)
    if auth:
        hashed = subprocess.run(
            ["htpasswd", "-Bbn", str(user), str(password)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        (where / "htpasswd").write_text(hashed)
    port = _free_port()
    (where / "config.yml").write_text(_config(where, port, auth))
    host = f"127.0.0.1:{port}"
    trusted = CERTS_DIR / host
    trusted.mkdir(parents=True)
    shutil.copy(where / "ca.crt", trusted / "ca.crt")
    process = subprocess.Popen(
        ["docker-registry", "serve", str(where / "config.yml")],
        stdout=subprocess.DEVNULL,
        stderr=open(where / "registry.log", "wb"),  # noqa: SIM115  # closed with the process
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _answers(host, where / "ca.crt"):
            if process.poll() is not None or time.monotonic() > deadline:
                log = (where / "registry.log").read_text(errors="replace")
                raise RuntimeError(f"docker-registry did not start on {host}: {log}")
            time.sleep(0.1)
        yield Registry(host, where / "ca.crt", user, password)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(trusted, ignore_errors=True)
