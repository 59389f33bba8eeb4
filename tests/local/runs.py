"""Helpers for local-run tests: `trainjobs run` in a subprocess, and what it left behind."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from trainjobs.local import network
from trainjobs.local.files import read_log
from trainjobs.local.kubectl import REGISTRY_ENV

needs_open_mpi = pytest.mark.skipif(
    shutil.which("mpiexec") is None, reason="needs Debian's openmpi-bin (make system-deps)"
)


needs_pod_network = pytest.mark.skipif(
    network.netns_available() is not None or shutil.which("mpiexec") is None,
    reason="needs root, iproute2, util-linux and Debian's openmpi-bin (make system-deps)",
)


RUN_TIMEOUT_S = 300
"""Seconds before a run is stopped: far above what any run here takes."""


class Run:
    """One `trainjobs run` in a subprocess: its exit code, output lines and run directory."""

    def __init__(
        self,
        job: Path,
        run_dir: Path,
        *flags: str,
        on_line: Callable[[str, subprocess.Popen[str]], None] | None = None,
    ) -> None:
        self.run_dir = run_dir
        command = [sys.executable, "-m", "trainjobs.cli", "run", str(job), "--run-dir"]
        process = subprocess.Popen(
            [*command, str(run_dir), *flags],
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None and process.stderr is not None
        # A run that hangs is stopped as a user would stop it (SIGTERM: the run cleans up and
        # reports "Interrupted"), so the test fails in minutes instead of holding CI.
        watchdog = threading.Timer(RUN_TIMEOUT_S, process.terminate)
        watchdog.start()
        self.lines: list[str] = []
        try:
            for line in process.stdout:
                self.lines.append(line.rstrip("\n"))
                if on_line is not None:
                    on_line(line, process)
            self.stderr = process.stderr.read()
            self.exit_code = process.wait()
        finally:
            watchdog.cancel()

    @property
    def output(self) -> str:
        """Both streams, for an assertion's message: a failed job reports on stdout."""
        return "\n".join([*self.lines, self.stderr])

    @property
    def summary(self) -> dict[str, Any]:
        return json.loads((self.run_dir / "summary.json").read_text(encoding="utf-8"))

    def pod_log(self, pod: str) -> list[str]:
        return read_log(self.run_dir / "logs" / f"{pod}.log")


def leaks(run: Run) -> list[str]:
    """What the run left behind, found independently of the runtime's own bookkeeping."""
    return leaks_of(run.run_dir, run.summary["runId"])


def leaks_of(run_dir: Path, run_id: str) -> list[str]:
    """What the run ``run_id`` in ``run_dir`` left: processes, namespaces, links, configs."""
    marker = f"\0{REGISTRY_ENV}={run_dir.resolve() / 'pods.json'}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in b"\0" + (entry / "environ").read_bytes():
                found.append(f"process {entry.name}")
        except OSError:
            continue
    if shutil.which("ip"):
        prefix = f"{network.PREFIX}{run_id}"
        namespaces = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True)
        links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
        found += [f"netns {line}" for line in namespaces.stdout.splitlines() if prefix in line]
        found += [f"link {line}" for line in links.stdout.splitlines() if prefix in line]
    if network.NETNS_CONFIG.is_dir():
        found += [str(p) for p in network.NETNS_CONFIG.glob(f"{network.PREFIX}{run_id}-*")]
    return found


def final_accuracy(run: Run) -> float:
    """The accuracy rank 0 prints last, read from the master's (or an MPIJob launcher's)
    prefixed output; a queued MPIJob's launcher is its JobSet's pod ``<job>-launcher-0-0``."""
    pattern = re.compile(
        r"\[[a-z0-9-]+-(?:master|launcher)(?:-0-0)?\] final validation accuracy: ([0-9.]+)"
    )
    values = [float(m.group(1)) for line in run.lines if (m := pattern.fullmatch(line))]
    assert len(values) == 1
    return values[0]


# Open MPI's launcher forks the rsh agent and then moves it into its own process group; when the
# child has already exec'd, that setpgid fails with EACCES and mpiexec prints this warning. The
# agent runs on regardless (Open MPI ignores the error), so the line may appear in any master log
# on a busy machine and carries nothing about the job.
SETPGID_RACE = re.compile(
    r"(\[[a-z0-9-]+-master\] )?\[[a-z0-9.-]+:\d+\] plm:rsh: Warning: setpgid\(\d+,\d+\) "
    r"failed in parent with errno=Permission denied\(13\)"
)


def without_launcher_race(lines: list[str]) -> list[str]:
    return [line for line in lines if not SETPGID_RACE.fullmatch(line)]


def sigkill_run_at(job: Path, run_dir: Path, marker: str, *flags: str) -> None:
    """Start `trainjobs run`, SIGKILL the runtime at its first output line starting with
    ``marker``, and wait for it."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainjobs.cli",
            "run",
            str(job),
            "--run-dir",
            str(run_dir),
            *flags,
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if line.startswith(marker):
            process.kill()
            break
    process.wait()
    process.stdout.close()
