"""Local runs from Python: start a job on this machine, wait for it, read its logs, list runs.

The verbs of Kubeflow Trainer's SDK backends (``train``, ``wait_for_job_status``,
``get_job_logs``, ``list_jobs``) for the local runtime, so a notebook or a test drives local
runs as `trainjobs run`, `runs` and `logs` do::

    import trainjobs

    run = trainjobs.start_local_run("jobs/chainermn-mnist.yaml")
    record = run.wait()            # a RunRecord: job, kind, outcome, start, duration
    print(record.outcome, run.logs("chainermn-mnist-master")[-1])

A run is `trainjobs run` in a process of its own (it sets up network namespaces and signal
handlers, which belong to a main thread): the spec is validated here first, so a mistake is a
:class:`~trainjobs.core.errors.UserError` at once, and the run directory is claimed here, so
the handle knows it before the run starts.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from trainjobs.core.errors import UserError
from trainjobs.local.files import new_run_directory
from trainjobs.local.history import (
    RUNS_DIRECTORY,
    RunRecord,
    all_runs,
    default_run_dir,
    find_run,
    list_runs,
    read_logs,
    read_run,
)

Runtime = Literal["process", "container"]


@dataclass
class LocalRun:
    """A local run started by :func:`start_local_run`."""

    run_dir: Path
    process: subprocess.Popen[str] = field(repr=False)

    def wait(self, timeout: float | None = None) -> RunRecord:
        """The run's record once it has ended (``subprocess.TimeoutExpired`` after
        ``timeout`` seconds); a spec or machine the run refused is a UserError."""
        _, errors = self.process.communicate(timeout=timeout)
        record = read_run(self.run_dir)
        if record is None or not record.finished:
            lines = [line for line in errors.splitlines() if line.startswith("error: ")]
            reason = lines[-1].removeprefix("error: ") if lines else "it wrote no summary"
            raise UserError(f"the local run in {self.run_dir} did not run: {reason}")
        return record

    def logs(self, pod: str | None = None) -> list[str]:
        """Its pods' lines so far (every pod's with a ``[pod]`` prefix, or one pod's)."""
        return local_run_logs(self.run_dir, pod)

    def stop(self) -> None:
        """Stop it as Ctrl-C does: its pods get their grace period, then it ends."""
        self.process.send_signal(signal.SIGINT)


def start_local_run(
    spec: str | Path, *, run_dir: str | Path | None = None, runtime: Runtime = "process"
) -> LocalRun:
    """Start the job of the spec file on this machine, as `trainjobs run` does."""
    # Imported here: listing runs and reading logs need no spec models.
    from trainjobs.core.documents import load_file
    from trainjobs.kinds.registry import parse_job

    job = parse_job(load_file(Path(spec)), str(spec))
    requested = None if run_dir is None else Path(run_dir)
    claimed = new_run_directory(requested, default_run_dir(job.name))
    command = [sys.executable, "-m", "trainjobs.cli", "run", str(spec), "--run-dir", str(claimed)]
    process = subprocess.Popen(
        [*command, "--runtime", runtime],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return LocalRun(claimed, process)


def run_locally(
    spec: str | Path, *, run_dir: str | Path | None = None, runtime: Runtime = "process"
) -> RunRecord:
    """Run the job of the spec file to its end (:func:`start_local_run`, then wait)."""
    return start_local_run(spec, run_dir=run_dir, runtime=runtime).wait()


def list_local_runs(directory: str | Path | None = None) -> list[RunRecord]:
    """Your local runs, oldest first: those in ``out/runs`` and anywhere else you made one,
    or only those in ``directory``."""
    return all_runs(RUNS_DIRECTORY) if directory is None else list_runs(Path(directory))


def local_run_logs(run: str | Path, pod: str | None = None) -> list[str]:
    """The logs of a run (its directory, or a job name: its latest run), as `trainjobs logs`
    prints them."""
    lines: list[str] = []
    read_logs(find_run(str(run), RUNS_DIRECTORY), pod, False, False, lines.append)
    return lines
