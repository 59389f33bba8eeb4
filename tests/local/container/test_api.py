"""The exec path of container runs: the in-container kubectl and the API stand-in it calls.

The real client (components/local/container/kubectl.py) talks to a real ApiServer over its
unix socket, passing its own stdin, stdout and stderr. The run around them is a small stand-in
whose engine runs the exec'd command on this machine instead of in a container: what is under
test is the call (authorization, kubectl's messages, the caller's pipes, exit codes, the end
of an exec whose caller went away), not the engine, which the end-to-end runs cover.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from trainjobs.local.container import api as api_module
from trainjobs.local.container.api import ApiServer


class HostEngine:
    """Runs what would be exec'd in a container directly, in the API server's environment."""

    def __init__(self) -> None:
        self.env = dict(os.environ)

    def exec_command(self, container: str, command: list[str], stdin: bool) -> list[str]:
        return list(command)


class Pod:
    def __init__(self, name: str, account: str | None, phase: str, running: bool) -> None:
        self.name = name
        self.plan = SimpleNamespace(service_account=account)
        self.phase = phase
        self.deleted = False
        self._running = running

    def container_name(self, container: str) -> str | None:
        return f"engine-{self.name}-{container}" if container == "main" else None

    def running(self, container: str) -> bool:
        return self._running


@pytest.fixture
def api(tmp_path: Path) -> Iterator[SimpleNamespace]:
    server = _server(tmp_path)
    yield SimpleNamespace(server=server, directory=server.directory("demo-master"))
    server.close()


def _server(tmp_path: Path) -> ApiServer:
    """The API stand-in of a run of four pods, listening for the master."""
    master = Pod("demo-master", "demo-launcher", "Running", True)
    pods = [
        master,
        Pod("demo-worker-0", None, "Running", True),
        Pod("demo-worker-1", None, "Running", False),
        Pod("demo-done", None, "Succeeded", False),
    ]
    granted = ["demo-worker-0", "demo-worker-1", "demo-done"]
    server = ApiServer(
        tmp_path,
        SimpleNamespace(  # type: ignore[arg-type]
            namespace="default",
            grants={
                "demo-launcher": [
                    *(("get", "pods", pod) for pod in granted),
                    *(("create", "pods/exec", pod) for pod in granted),
                ]
            },
        ),
        pods,
        HostEngine(),
    )
    server.listen(master)  # type: ignore[arg-type]
    return server


def kubectl(
    directory: Path, *argv: str, stdin: str = "", wait: bool = True
) -> subprocess.CompletedProcess[str] | subprocess.Popen[str]:
    """The in-container kubectl, its service account directory where ``directory`` is."""
    program = (
        "import sys; from trainjobs.local.container import kubectl; "
        "kubectl.SERVICE_ACCOUNT_DIR = sys.argv[1]; sys.exit(kubectl.main(sys.argv[2:]))"
    )
    command = [sys.executable, "-c", program, str(directory), *argv]
    if not wait:
        return subprocess.Popen(command, cwd=REPO, stdin=subprocess.DEVNULL, text=True)
    return subprocess.run(command, cwd=REPO, input=stdin, capture_output=True, text=True)


def test_get_prints_the_pods_phase_without_a_newline(api: SimpleNamespace):
    result = kubectl(api.directory, "get", "pod", "demo-worker-0", "-o", "jsonpath={.status.phase}")

    assert (result.returncode, result.stdout, result.stderr) == (0, "Running", "")


def test_exec_with_stdin_reads_and_writes_the_callers_own_pipes(api: SimpleNamespace):
    result = kubectl(
        api.directory,
        *("exec", "-i", "demo-worker-0", "-c", "main", "--"),
        *("sh", "-c", "read line; echo got $line; echo to stderr >&2; exit 7"),
        stdin="hello\n",
    )

    assert (result.returncode, result.stdout, result.stderr) == (7, "got hello\n", "to stderr\n")


def test_exec_without_stdin_does_not_forward_it(api: SimpleNamespace):
    result = kubectl(
        api.directory, "exec", "demo-worker-0", "-c", "main", "--", "cat", stdin="ignored\n"
    )

    assert (result.returncode, result.stdout) == (0, "")


def test_the_role_is_enforced_with_the_api_servers_message(api: SimpleNamespace):
    result = kubectl(api.directory, "exec", "demo-master", "-c", "main", "--", "true")

    assert result.returncode == 1
    assert result.stderr == (
        'Error from server (Forbidden): pods "demo-master" is forbidden: User '
        '"system:serviceaccount:default:demo-launcher" cannot create resource "pods/exec" '
        'in API group "" in the namespace "default"\n'
    )


@pytest.mark.parametrize(
    ("pod", "container", "message"),
    [
        (
            "demo-done",
            "main",
            "error: cannot exec into a container in a completed pod; current phase is Succeeded",
        ),
        (
            "demo-worker-1",
            "main",
            'error: unable to upgrade connection: container not running ("main")',
        ),
        (
            "demo-worker-0",
            "sidecar",
            'error: unable to upgrade connection: container not found ("sidecar")',
        ),
    ],
)
def test_exec_is_refused_with_kubectls_messages(
    api: SimpleNamespace, pod: str, container: str, message: str
):
    result = kubectl(api.directory, "exec", pod, "-c", container, "--", "true")

    assert (result.returncode, result.stderr) == (1, message + "\n")


def test_an_unsupported_call_is_refused_naming_what_is_implemented(api: SimpleNamespace):
    result = kubectl(api.directory, "delete", "pod", "demo-worker-0")

    assert result.returncode == 2
    assert result.stderr == (
        "kubectl (trainjobs local stand-in): unsupported call 'kubectl delete pod demo-worker-0': "
        "only these calls are implemented: 'get pod POD -o jsonpath={.status.phase}' and "
        "'exec [-i] POD -c CONTAINER -- COMMAND...'\n"
    )


def test_a_pod_without_a_token_has_no_credentials(tmp_path: Path):
    result = kubectl(tmp_path, "get", "pod", "demo-worker-0", "-o", "jsonpath={.status.phase}")

    assert result.returncode == 1
    assert result.stderr == (
        "kubectl (trainjobs local stand-in): this pod has no service account token mounted "
        "(automountServiceAccountToken: false), so kubectl has no credentials\n"
    )


def _running(marker: str) -> bool:
    """Whether a ``sleep MARKER`` process lives (not the kubectl that asked for it)."""
    wanted = b"sleep\0" + marker.encode() + b"\0"
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and (entry / "cmdline").read_bytes() == wanted:
                return True
        except OSError:
            continue
    return False


def test_an_exec_ends_when_its_caller_goes_away(api: SimpleNamespace):
    # Open MPI kills its rsh agents at the end of a job: what they started must end too.
    caller = kubectl(
        api.directory, "exec", "demo-worker-0", "-c", "main", "--", "sleep", "31.25", wait=False
    )
    deadline = time.monotonic() + 10
    while not _running("31.25") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _running("31.25")

    caller.kill()
    caller.wait()
    deadline = time.monotonic() + 10
    while _running("31.25") and time.monotonic() < deadline:
        time.sleep(0.05)

    assert not _running("31.25")


# -- a hostile pod: idle connections, forged log lines ------------------------------------------


def _connect(directory: Path) -> socket.socket | None:
    """A connection that sends nothing; None once the backlog is full."""
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    client.setblocking(False)
    try:
        client.connect(str(directory / "trainjobs-api.sock"))
    except BlockingIOError:
        client.close()
        return None
    return client


def _settle(count: int) -> int:
    """The thread count once it reaches ``count`` (or after 10 s, whatever it is then)."""
    deadline = time.monotonic() + 10
    while threading.active_count() < count and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # room for more threads to appear, if the server made them
    return threading.active_count()


def test_idle_connections_hold_at_most_the_pods_slots(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(api_module, "CALLS_PER_POD", 8)  # 8 slots: 2 per pod of the run
    monkeypatch.setattr(api_module, "REQUEST_SECONDS", 600.0)
    before = threading.active_count()
    server = _server(tmp_path)
    clients = [_connect(server.directory("demo-master")) for _ in range(40)]
    try:
        # The accept thread, and one thread per slot: the other callers wait in the backlog.
        assert _settle(before + 1 + 8) == before + 1 + 8
        assert sum(client is not None for client in clients) > 8
    finally:
        for client in clients:
            if client is not None:
                client.close()
        server.close()


def test_an_idle_connection_is_closed_and_its_slot_serves_the_next_call(
    tmp_path: Path, monkeypatch
):
    monkeypatch.setattr(api_module, "CALLS_PER_POD", 1)  # at least 2 per pod of the run: 8
    monkeypatch.setattr(api_module, "REQUEST_SECONDS", 1.0)
    server = _server(tmp_path)
    directory = server.directory("demo-master")
    idle = [_connect(directory) for _ in range(8)]
    try:
        for client in idle:
            assert client is not None
            client.setblocking(True)
            client.settimeout(60)
            assert client.recv(1) == b""  # closed by the server, not by this timeout
        result = kubectl(directory, "get", "pod", "demo-worker-0", "-o", "jsonpath={.status.phase}")
        assert (result.returncode, result.stdout) == (0, "Running")
    finally:
        for client in idle:
            if client is not None:
                client.close()
        server.close()


def test_a_pod_name_with_a_newline_cannot_forge_log_lines(api: SimpleNamespace, tmp_path: Path):
    forged = "x\ndemo-master create pods/exec demo-worker-0\rdemo-master get pods y z"
    result = kubectl(api.directory, "get", "pod", forged, "-o", "jsonpath={.status.phase}")

    assert result.returncode == 1
    assert (tmp_path / "api-calls.log").read_text() == (
        "demo-master get pods x\\x0ademo-master\\x20create\\x20pods/exec\\x20demo-worker-0"
        "\\x0ddemo-master\\x20get\\x20pods\\x20y\\x20z\n"
    )
