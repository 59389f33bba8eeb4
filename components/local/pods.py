"""Local pods as host processes: a sandbox per pod, a process per container, their logs.

A pod's **sandbox** plays the part of Kubernetes' pause container. With network namespaces
it is a ``sleep infinity`` started through ``ip netns exec NETNS unshare --uts``, after it
has set the pod's hostname: it holds the pod's network, UTS and mount namespaces (the mount
namespace carries the per-pod ``/etc/hosts``). Every container, and every ``kubectl exec``,
enters those namespaces through the sandbox's PID with ``nsenter``. On loopback there is no
sandbox process and containers run in the host's namespaces.

Every pod process carries the run's registry path and its pod name in its environment
(:data:`~trainjobs.local.kubectl.REGISTRY_ENV`, :data:`~trainjobs.local.kubectl.POD_ENV`):
that is how processes are found again, including the ones ``kubectl exec`` starts on behalf
of another pod (Open MPI's daemons). On a cluster the kernel ends everything in a container
when its PID namespace ends; here :func:`pod_processes` finds them, so that stopping a pod
leaves nothing behind. A process that clears its environment is still found through its
network namespace, or its container's session (each container process leads one).

Container output (stdout and stderr merged, as ``kubectl logs`` shows them) streams with a
``[pod]`` prefix and goes to ``logs/<pod>.log`` in the run directory.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Set
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjobs.core.terminal import escape
from trainjobs.local.files import inside, log_record, open_log
from trainjobs.local.kubectl import POD_ENV, REGISTRY_ENV, process_start_time
from trainjobs.local.ledger import resource_kind
from trainjobs.local.network import NETNS_RUN
from trainjobs.local.output import TextStream

# Sets the hostname in the fresh UTS namespace, says so, then only holds the namespaces.
_SANDBOX_SCRIPT = 'echo "$0" > /proc/sys/kernel/hostname && echo ready && exec sleep infinity'


class LogSink:
    """Pod output to one stream with a ``[pod]`` prefix, and to a log file per pod.

    Writing never raises: when the terminal goes away (SIGHUP, a closed pipe such as
    ``| head``) the run must still stop its pods and remove its network, and the log files
    keep everything; when a log file cannot be written (a full disk), that is said once and
    the output keeps flowing to the terminal.
    """

    def __init__(self, stream: TextStream, log_dir: Path) -> None:
        self.stream: TextStream | None = stream
        # On a terminal, a pod's escape sequences would drive it: shown escaped instead
        # (the log files keep the bytes as written).
        self._escape = _isatty(stream)
        self.log_dir = log_dir
        self._files: dict[str, int | None] = {}
        self._lock = threading.Lock()

    def _show(self, text: str) -> None:
        if self.stream is None:
            return
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            self.stream = None

    def line(self, pod: str, text: str) -> None:
        with self._lock:
            self._log(pod, text)
            self._show(f"[{pod}] {escape(text) if self._escape else text}")

    def _log(self, pod: str, text: str) -> None:
        if pod in self._files and self._files[pod] is None:
            return
        path = self.log_dir / f"{pod}.log"
        try:
            handle = self._files.get(pod)
            if handle is None:
                handle = self._files[pod] = open_log(inside(self.log_dir, path.name))
            os.write(handle, log_record(text))
        except OSError as error:
            self._close(pod)
            self._files[pod] = None
            self._show(
                f"[trainjobs] {path}: cannot write ({error.strerror}); the output of pod "
                f"{pod} continues here only"
            )

    def _close(self, pod: str) -> None:
        handle = self._files.get(pod)
        if handle is not None:
            with contextlib.suppress(OSError):
                os.close(handle)

    def event(self, text: str) -> None:
        """A message of the runtime itself (scheduling, restarts, outcome)."""
        with self._lock:
            self._show(f"[trainjobs] {escape(text, keep_newlines=True) if self._escape else text}")

    def close(self) -> None:
        with self._lock:
            for pod in list(self._files):
                self._close(pod)
            self._files.clear()


def _isatty(stream: TextStream) -> bool:
    try:
        return stream.isatty()
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class ProcessSpec:
    """A process to start in a pod: what a container (or a sandbox) becomes."""

    argv: list[str]
    env: dict[str, str]
    cwd: Path


class Sandbox:
    """The pod's namespaces (see the module docstring); a no-op on loopback."""

    def __init__(self, pod: str, hostname: str, netns: str | None, env: dict[str, str]) -> None:
        self.pod = pod
        self.hostname = hostname
        self.netns = netns
        self.env = env
        self.process: subprocess.Popen[bytes] | None = None
        self.starttime: str | None = None

    def start(self) -> None:
        if self.netns is None:
            return
        enter = ["ip", "netns", "exec", self.netns, "unshare", "--uts", "--"]
        # Its output goes to a pipe of its own, never the run's stdout or stderr: a sandbox
        # outliving the run (SIGKILLed) would hold those open, and whoever reads the run's
        # output (a pipe, a CI log) would wait for it.
        self.process = subprocess.Popen(
            [*enter, "sh", "-c", _SANDBOX_SCRIPT, self.hostname],
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        assert self.process.stdout is not None
        # Containers may only enter once the namespaces exist and the hostname is set.
        said = self.process.stdout.readline()
        if said != b"ready\n":
            code = self.process.wait()
            reason = said.decode(errors="replace").strip() or f"exit code {code}"
            raise RuntimeError(f"pod {self.pod}: sandbox failed to start ({reason})")
        self.process.stdout.close()
        self.starttime = process_start_time(self.process.pid)

    @property
    def registry_entry(self) -> dict[str, object] | None:
        if self.process is None:
            return None
        return {"pid": self.process.pid, "starttime": self.starttime}

    def alive(self) -> bool:
        return self.netns is None or (self.process is not None and self.process.poll() is None)

    def wrap(self, spec: ProcessSpec) -> list[str]:
        """The argv that runs ``spec`` inside this pod's namespaces."""
        if self.process is None:
            return spec.argv
        return [
            "nsenter",
            f"--target={self.process.pid}",
            "--net",
            "--uts",
            "--mount",
            f"--wd={spec.cwd}",
            "--",
            *spec.argv,
        ]

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
        if self.process is not None:
            self.process.wait()


class ContainerProcess:
    """One run of a container: a process in the pod's sandbox whose output is streamed."""

    def __init__(self, pod: str, name: str, spec: ProcessSpec, sandbox: Sandbox, sink: LogSink):
        self.pod = pod
        self.name = name
        self.spec = spec
        self.sink = sink
        self.process: subprocess.Popen[bytes] | None
        try:
            self.process = subprocess.Popen(
                sandbox.wrap(spec),
                env=spec.env,
                cwd=spec.cwd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                # Its own session: a Ctrl-C in the terminal reaches the runtime only, which
                # then stops pods in order, as the kubelet would.
                start_new_session=True,
            )
        except OSError as error:
            # Like a container runtime's "executable file not found": the container fails.
            self.process = None
            self.start_error = f"cannot start {spec.argv[0]!r}: {error.strerror}"
            sink.line(pod, f"container {name}: {self.start_error}")
            return
        self._reader = threading.Thread(target=self._stream, daemon=True)
        self._reader.start()

    def _stream(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        with contextlib.suppress(OSError, ValueError):
            for raw in self.process.stdout:
                self.sink.line(self.pod, raw.decode("utf-8", "replace").rstrip("\r\n"))
        self.process.stdout.close()

    def poll(self) -> int | None:
        """None while running, else the exit code as Kubernetes reports it (128+N if killed)."""
        if self.process is None:
            return 128
        code = self.process.poll()
        if code is None:
            return None
        return 128 - code if code < 0 else code

    def terminate(self) -> None:
        """SIGTERM to the container's main process, as the kubelet sends it to PID 1."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)

    def reap(self, timeout: float = 5.0) -> None:
        """Collect the exit status and the rest of the output once every process is gone."""
        if self.process is None:
            return
        self.process.wait()
        self._reader.join(timeout)


def pod_processes(
    registry: str,
    pod: str | None = None,
    netns_inodes: Set[int] = frozenset(),
    sessions: Set[int] = frozenset(),
) -> list[int]:
    """PIDs of a run's live processes (of one pod if ``pod`` is given).

    A process belongs to the run when its environment names the run's registry, when it
    sits in one of ``netns_inodes`` (the run's network namespaces), or when it is in one of
    ``sessions`` (each container process leads its own session, which its children stay
    in unless they leave it: found even with an emptied environment on loopback). Zombies
    are skipped: they are dead already.
    """
    wanted = f"\0{REGISTRY_ENV}={registry}\0".encode()
    wanted_pod = f"\0{POD_ENV}={pod}\0".encode() if pod is not None else b""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry.name}/environ", "rb") as handle:
                environ = b"\0" + handle.read()
            in_netns = netns_inodes and os.stat(f"/proc/{entry.name}/ns/net").st_ino in netns_inodes
            in_session = bool(sessions) and session_of(int(entry.name)) in sessions
        except OSError:
            continue
        if (wanted in environ and wanted_pod in environ) or in_netns or in_session:
            found.append(int(entry.name))
    return found


def session_of(pid: int) -> int | None:
    """The session a live process is in (None for a zombie or a process that is gone)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            fields = handle.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return int(fields[3]) if fields[0] not in ("Z", "X") else None


def wait_for_an_exit(processes: Iterable[ContainerProcess], timeout: float) -> None:
    """Sleep until one of the running ``processes`` exits, or ``timeout`` seconds.

    The runtime's loop then acts on an init container's end at once rather than at its next
    tick (at 50 ms ticks, the two init containers of a ChainerJob's master cost its start-up
    about 0.1 s). It waits on each process's pidfd (Linux 5.3), which becomes readable when
    the process exits; it only sleeps where pidfds are not to be had. Processes that have
    already exited are not waited on, so the loop never spins on them."""
    descriptors: list[int] = []
    try:
        for each in processes:
            if each.process is None or each.process.poll() is not None:
                continue
            try:
                descriptors.append(os.pidfd_open(each.process.pid))
            except (AttributeError, OSError):
                time.sleep(timeout)
                return
        if not descriptors:
            time.sleep(timeout)
            return
        poller = select.poll()
        for descriptor in descriptors:
            poller.register(descriptor, select.POLLIN)
        poller.poll(timeout * 1000)
    finally:
        for descriptor in descriptors:
            os.close(descriptor)


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def namespace_inodes(names: list[str]) -> set[int]:
    """The inodes of the named network namespaces that still exist."""
    inodes = set()
    for name in names:
        with contextlib.suppress(OSError):
            inodes.add(os.stat(NETNS_RUN / name).st_ino)
    return inodes


@resource_kind("processes")
def _kill_processes(entry: dict[str, Any]) -> list[str]:
    """Every process of a dead run: its marker, or one of its network namespaces."""
    inodes = namespace_inodes(list(entry.get("netns") or []))
    killed: set[int] = set()
    for _ in range(200):
        pids = pod_processes(str(entry["marker"]), None, inodes)
        if not pids:
            break
        kill_all(pids)
        killed.update(pids)
        time.sleep(0.01)
    return [f"process {pid}" for pid in sorted(killed)]
