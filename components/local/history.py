"""The history of local runs: what each run directory says about its run, and its logs.

A run writes ``run.json`` when it starts (job, kind, start time, command line, and its own
process, so a reader can tell a running run from one whose runtime was killed) and
``summary.json``, in its place, when it ends; ``logs/<pod>.log`` has one timestamped line
per output line (:func:`trainjobs.local.files.log_record`). `trainjobs runs` and
`trainjobs logs` read these.
"""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from trainjobs.core.apimachinery import dns1123_subdomain
from trainjobs.core.errors import UserError
from trainjobs.core.phases import JobPhase
from trainjobs.core.terminal import escape
from trainjobs.kinds.registry import JobDefinition
from trainjobs.local.files import SUMMARY, without_timestamp, write_private
from trainjobs.local.kubectl import process_start_time
from trainjobs.local.run_index import indexed_run_directories, remember

RUN_RECORD = "run.json"
RUNS_DIRECTORY = Path("out") / "runs"
FOLLOW_POLL_SECONDS = 0.2
_MAX_RECORD_BYTES = 1024 * 1024


def default_run_dir(job: str) -> Path:
    """Where a run of ``job`` goes unless told: ``out/runs/<job>-<timestamp>``."""
    return RUNS_DIRECTORY / f"{job}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"


def record_start(
    run_dir: Path, job: JobDefinition, run_id: str, command: tuple[str, ...]
) -> dict[str, Any]:
    """Write ``run.json`` for a run starting now; returns what its summary repeats."""
    identity = {
        "kind": job.kind,
        "started": datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z"),
        "command": list(command),
    }
    pid = os.getpid()
    owner = {"pid": pid, "starttime": process_start_time(pid)}
    record = {"job": job.name, "runId": run_id, **identity, "owner": owner}
    write_private(run_dir / RUN_RECORD, json.dumps(record, indent=2) + "\n")
    remember(run_dir, run_id)
    return identity


def record_end(run_dir: Path, summary: str) -> None:
    """Write ``summary.json``, which replaces ``run.json`` (it repeats what that says): on a
    full disk the start record's room is what lets the summary be written."""
    (run_dir / RUN_RECORD).unlink(missing_ok=True)
    write_private(run_dir / SUMMARY, summary)


def _read_json(path: Path) -> dict[str, Any]:
    """A run's record, read only from a regular file of that name (never through a link)."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return {}
    try:
        with os.fdopen(handle, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                return {}
            document = json.loads(stream.read(_MAX_RECORD_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return {}
    return document if isinstance(document, dict) else {}


def _owner_running(owner: Any) -> bool:
    """The runtime that wrote run.json still runs (same PID and start time, not a zombie)."""
    if not isinstance(owner, dict) or not isinstance(owner.get("pid"), int):
        return False
    pid = owner["pid"]
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X") and process_start_time(pid) == owner.get("starttime")


@dataclass(frozen=True)
class RunRecord:
    """One run directory, as `trainjobs runs` lists it."""

    run_dir: Path
    job: str
    kind: str
    outcome: str
    """Succeeded, Failed, Interrupted; Running while its runtime runs; Unknown when it
    ended without a summary (killed, and not yet cleaned up after). As its summary says it:
    a summary is a file, which may hold anything."""
    started: datetime | None
    duration_seconds: float | None

    @property
    def finished(self) -> bool:
        return self.outcome != JobPhase.RUNNING


def read_run(run_dir: Path) -> RunRecord | None:
    """The run in ``run_dir``, or None if it holds none."""
    record, summary = _read_json(run_dir / RUN_RECORD), _read_json(run_dir / SUMMARY)
    if not record and not summary:
        return None
    started = _parse_time(record.get("started") or summary.get("started"))
    duration = summary.get("durationSeconds")
    if summary:
        outcome = str(summary.get("outcome", JobPhase.UNKNOWN))
    elif _owner_running(record.get("owner")):
        outcome = JobPhase.RUNNING
        duration = None if started is None else (datetime.now(UTC) - started).total_seconds()
    else:
        outcome = JobPhase.UNKNOWN
    return RunRecord(
        run_dir=run_dir,
        job=str(record.get("job") or summary.get("job") or "?"),
        kind=str(record.get("kind") or summary.get("kind") or "?"),
        outcome=outcome,
        started=started,
        duration_seconds=float(duration) if isinstance(duration, int | float) else None,
    )


def _parse_time(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def list_runs(directory: Path) -> list[RunRecord]:
    """Every run in a directory of run directories, oldest first."""
    if not directory.is_dir():
        return []
    return _oldest_first(path for path in directory.iterdir() if path.is_dir())


def all_runs(directory: Path) -> list[RunRecord]:
    """Every run this user made (:mod:`trainjobs.local.run_index`) and every run in
    ``directory``, oldest first, each once."""
    here = [path for path in directory.iterdir() if path.is_dir()] if directory.is_dir() else []
    return _oldest_first([*here, *indexed_run_directories()])


def _oldest_first(run_dirs: Iterable[Path]) -> list[RunRecord]:
    unique = {path.resolve(): path for path in run_dirs}
    runs = [run for path in unique.values() if (run := read_run(path))]
    oldest = datetime.min.replace(tzinfo=UTC)
    return sorted(runs, key=lambda run: (run.started or oldest, run.run_dir.name))


def find_run(name: str, directory: Path, everywhere: bool = True) -> Path:
    """RUN as `trainjobs logs` takes it: a run directory, a run directory's name under
    ``directory``, or a job name (its latest run there, or, ``everywhere``, anywhere the
    index knows)."""
    for candidate in (Path(name), directory / name):
        if candidate.is_dir() and read_run(candidate) is not None:
            return candidate
    runs = all_runs(directory) if everywhere else list_runs(directory)
    latest = [run for run in runs if run.job == name]
    if latest:
        return latest[-1].run_dir
    elsewhere = " or among your runs elsewhere" if everywhere else ""
    raise UserError(
        f"{escape(name)}: no run directory or job of that name in {escape(str(directory))}"
        f"{elsewhere}; `trainjobs runs` lists the runs"
    )


def log_files(run_dir: Path, pod: str | None) -> list[Path]:
    """The log files of the run's pods, or of ``pod`` only: regular files that the run wrote in
    its ``logs/``, never a link (a name planted there is not followed)."""
    logs = run_dir / "logs"
    present = sorted(path for path in logs.glob("*.log") if _regular(path))
    if pod is None:
        return present
    path = logs / f"{pod}.log"
    # A pod's name is a DNS-1123 subdomain, as the API server requires: never a path.
    if dns1123_subdomain(pod) or path not in present:
        pods = ", ".join(p.stem for p in present) or "none yet"
        raise UserError(
            f"pod {escape(repr(pod))}: no log in {escape(str(run_dir))} "
            f"(pods with logs: {escape(pods)})"
        )
    return [path]


def _regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def read_logs(
    run_dir: Path,
    pod: str | None,
    follow: bool,
    timestamps: bool,
    emit: Callable[[str], None],
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Emit the logs of one pod, or of every pod with a ``[pod]`` prefix in time order; with
    ``follow``, go on emitting new lines (and new pods' logs) until the run has ended."""
    offsets: dict[Path, int] = {}
    while True:
        ended = not follow or (read_run(run_dir) or _ENDED).finished
        try:
            files = log_files(run_dir, pod)
        except UserError:
            if ended:
                raise
            files = []  # the pod has not started yet
        lines = sorted(_new_lines(files, offsets, prefix=pod is None))
        for _, text in lines:
            emit(text if timestamps else without_timestamp(text))
        if ended:
            return
        sleep(FOLLOW_POLL_SECONDS)


_ENDED = RunRecord(Path(), "", "", JobPhase.UNKNOWN, None, None)


def _new_lines(
    files: list[Path], offsets: dict[Path, int], prefix: bool
) -> Iterator[tuple[str, str]]:
    """(timestamp, line) for each whole line written to ``files`` since the last call."""
    for path in files:
        try:
            handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            continue
        with os.fdopen(handle, "rb") as stream:
            if not stat.S_ISREG(os.fstat(handle).st_mode):
                continue
            stream.seek(offsets.get(path, 0))
            data = stream.read()
        whole = data[: data.rfind(b"\n") + 1]
        offsets[path] = offsets.get(path, 0) + len(whole)
        for raw in whole.decode("utf-8", "replace").splitlines():
            stamp = raw[:27] if raw != without_timestamp(raw) else ""
            text = without_timestamp(raw)
            shown = f"[{path.stem}] {text}" if prefix else text
            yield stamp, f"{stamp} {shown}" if stamp else shown
