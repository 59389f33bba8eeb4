"""The API-server stand-in of a container run: the two kubectl calls the assets make.

Each pod with a service account token mounted gets its own unix socket, mounted into its
containers where the token would be (:mod:`trainjobs.local.container.kubectl` is the client).
The socket a call arrives on says which pod calls, so identity cannot be claimed: the pod's
service account is checked against the job's Role (the grants of
:mod:`trainjobs.local.cluster`), with the API server's Forbidden message, exactly as the
process runtime's stand-in does (:mod:`trainjobs.local.kubectl`), counting every request in
the run's ``api-calls.log`` as it does.

- ``get pod POD -o jsonpath={.status.phase}``: the pod's phase, on the caller's stdout;
- ``exec [-i] POD -c CONTAINER -- COMMAND...``: the engine's exec in the target container, with
  the caller's own stdin (with ``-i``, else none), stdout and stderr, received with the call
  (``SCM_RIGHTS``): the command reads and writes the caller's pipes directly, and its exit code
  goes back. If the caller goes away (Open MPI ends its rsh agents), the exec is ended too.

Anything else is refused with the process stand-in's usage message.

A pod cannot exhaust the host through its socket: each pod's calls are served by at most
:data:`CALLS_PER_POD` threads at a time (more callers wait in the socket's backlog, as they
would for a busy API server), a call must be sent whole within :data:`REQUEST_SECONDS` or its
connection is closed, and the names it sends are escaped in ``api-calls.log``
(:func:`trainjobs.local.kubectl.call_line`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

from trainjobs.engines.engine import Engine
from trainjobs.local.cluster import ClusterPlan, PodPlan
from trainjobs.local.container.kubectl import SOCKET_NAME, decode
from trainjobs.local.files import open_log
from trainjobs.local.kubectl import CALLS_LOG, PROGRAM, USAGE, call_line, parse_call

_MAX_REQUEST = 1 << 20
_CHUNK = 1 << 16
CALLS_PER_POD = 64
"""Calls of one pod served at once, at least (a pod may exec into every other pod at once:
Open MPI starts its daemons in parallel), each with a thread and, for an exec, a second."""
REQUEST_SECONDS = 10.0
"""How long a connection may take to send its call: idle connections are closed."""


class CallFailed(Exception):
    """A call refused or failed as kubectl would: a message for stderr and an exit code."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class ServedPod(Protocol):
    """A pod of the run, as the stand-in sees it: a caller, or the target of a call
    (:class:`trainjobs.local.container.pod.ContainerPodRun`)."""

    @property
    def name(self) -> str: ...

    @property
    def plan(self) -> PodPlan: ...

    @property
    def phase(self) -> str: ...

    @property
    def deleted(self) -> bool: ...

    def running(self, container: str) -> bool: ...

    def container_name(self, container: str) -> str | None: ...


class ApiServer:
    """One listening socket per pod with a token; a thread per call."""

    def __init__(
        self, run_dir: Path, plan: ClusterPlan, pods: Sequence[ServedPod], engine: Engine
    ) -> None:
        self.run_dir = run_dir
        self.plan = plan
        self.pods = pods
        """Every pod of the run (the list grows as the run makes them)."""
        self.engine = engine
        self.listening: set[str] = set()
        self.listeners: list[socket.socket] = []
        self.calls: set[subprocess.Popen[bytes]] = set()
        self.lock = threading.Lock()
        self.closed = False

    def directory(self, pod: str) -> Path:
        """What the pod mounts as its service account directory."""
        return self.run_dir / "api" / pod

    def listen(self, pod: ServedPod) -> None:
        """The pod's socket, from its first creation to the run's end."""
        if pod.name in self.listening:
            return
        self.listening.add(pod.name)
        directory = self.directory(pod.name)
        directory.parent.mkdir(exist_ok=True)
        directory.parent.chmod(0o700)
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o755)
        (directory / "namespace").write_text(self.plan.namespace, encoding="utf-8")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        # A socket path must fit 108 bytes; the run directory's may not: bind through an fd.
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
        try:
            listener.bind(f"/proc/self/fd/{handle}/{SOCKET_NAME}")
        finally:
            os.close(handle)
        # Containers may run as any user (the kubectl init container runs as 65534); the
        # directory above the pods' directories is the host's access check (0700).
        (directory / SOCKET_NAME).chmod(0o666)
        listener.listen(16)
        self.listeners.append(listener)
        slots = threading.BoundedSemaphore(max(CALLS_PER_POD, 2 * len(self.pods)))
        threading.Thread(target=self._accept, args=(listener, pod, slots), daemon=True).start()

    def close(self) -> None:
        self.closed = True
        for listener in self.listeners:
            listener.close()
        with self.lock:
            for call in self.calls:
                call.kill()

    def _accept(
        self, listener: socket.socket, caller: ServedPod, slots: threading.Semaphore
    ) -> None:
        """Accept a call only when one of the pod's slots is free; each call frees its own."""
        while not self.closed:
            if not slots.acquire(timeout=1.0):
                continue
            try:
                connection, _ = listener.accept()
            except OSError:
                slots.release()
                return
            threading.Thread(
                target=self._serve, args=(connection, caller, slots), daemon=True
            ).start()

    def _serve(
        self, connection: socket.socket, caller: ServedPod, slots: threading.Semaphore
    ) -> None:
        try:
            self._answer(connection, caller)
        finally:
            slots.release()

    def _answer(self, connection: socket.socket, caller: ServedPod) -> None:
        fds: list[int] = []
        code = 1
        try:
            # The whole call within REQUEST_SECONDS (an idle or trickling connection is
            # closed), then no limit: an exec lasts as long as its command.
            deadline = time.monotonic() + REQUEST_SECONDS
            connection.settimeout(REQUEST_SECONDS)
            data, fds, _, _ = socket.recv_fds(connection, _CHUNK, 3)
            argv = decode(data)
            while argv is None and len(data) < _MAX_REQUEST:
                connection.settimeout(max(deadline - time.monotonic(), 0.001))
                more = connection.recv(_CHUNK)
                if not more:
                    return
                data += more
                argv = decode(data)
            if argv is None or len(fds) != 3:
                return
            connection.settimeout(None)
            try:
                code = self._call(argv, caller, fds, connection)
            except CallFailed as failure:
                os.write(fds[2], (str(failure) + "\n").encode())
                code = failure.code
            connection.sendall(str(code).encode())
        except OSError:
            return
        finally:
            for fd in fds:
                os.close(fd)
            # shutdown, not just close: it also wakes the thread waiting for the caller to
            # go away (closing a descriptor leaves another thread's recv() blocked).
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
            connection.close()

    def _call(
        self, argv: list[str], caller: ServedPod, fds: list[int], connection: socket.socket
    ) -> int:
        call = parse_call(argv)
        if call is None:
            raise CallFailed(f"{PROGRAM}: unsupported call 'kubectl {' '.join(argv)}': {USAGE}", 2)
        if call.verb == "get":
            self._authorize(caller, "get", "pods", call.pod)
            os.write(fds[1], self._pod(call.pod).phase.encode())
            return 0
        return self._exec(
            caller, call.pod, call.container, call.command, call.stdin, fds, connection
        )

    def _authorize(self, caller: ServedPod, verb: str, resource: str, pod: str) -> None:
        self._record(caller.name, verb, resource, pod)
        account = caller.plan.service_account
        grants = {tuple(grant) for grant in self.plan.grants.get(account or "", [])}
        if (verb, resource, pod) in grants or (verb, resource, "*") in grants:
            return
        namespace = self.plan.namespace
        raise CallFailed(
            f'Error from server (Forbidden): pods "{pod}" is forbidden: User '
            f'"system:serviceaccount:{namespace}:{account}" cannot {verb} resource "{resource}" '
            f'in API group "" in the namespace "{namespace}"'
        )

    def _record(self, caller: str, verb: str, resource: str, pod: str) -> None:
        """Count the request as the process runtime's stand-in does (``api-calls.log``)."""
        with self.lock:
            descriptor = open_log(self.run_dir / CALLS_LOG)
            try:
                os.write(descriptor, call_line(caller, verb, resource, pod).encode())
            finally:
                os.close(descriptor)

    def _pod(self, name: str) -> ServedPod:
        pod = next((pod for pod in self.pods if pod.name == name and not pod.deleted), None)
        if pod is None:
            raise CallFailed(f'Error from server (NotFound): pods "{name}" not found')
        return pod

    def _exec(
        self,
        caller: ServedPod,
        name: str,
        container: str,
        command: tuple[str, ...],
        stdin: bool,
        fds: list[int],
        connection: socket.socket,
    ) -> int:
        self._authorize(caller, "create", "pods/exec", name)
        pod = self._pod(name)
        if pod.phase in ("Succeeded", "Failed"):
            raise CallFailed(
                "error: cannot exec into a container in a completed pod; "
                f"current phase is {pod.phase}"
            )
        engine_name = pod.container_name(container)
        if engine_name is None:
            raise CallFailed(
                f'error: unable to upgrade connection: container not found ("{container}")'
            )
        if not pod.running(container):
            raise CallFailed(
                f'error: unable to upgrade connection: container not running ("{container}")'
            )
        call = subprocess.Popen(
            self.engine.exec_command(engine_name, command, stdin),
            stdin=fds[0] if stdin else subprocess.DEVNULL,
            stdout=fds[1],
            stderr=fds[2],
            env=self.engine.env,
            start_new_session=True,
        )
        with self.lock:
            self.calls.add(call)
        # The caller's end closing (kubectl killed) ends the exec too.
        threading.Thread(target=_end_when_gone, args=(connection, call), daemon=True).start()
        code = call.wait()
        with self.lock:
            self.calls.discard(call)
        return 128 - code if code < 0 else code


def _end_when_gone(connection: socket.socket, call: subprocess.Popen[bytes]) -> None:
    try:
        gone = connection.recv(1) == b""
    except OSError:
        gone = True
    if gone and call.poll() is None:
        call.kill()
