"""Every local run of this user, wherever its run directory: an index of run directories.

`trainjobs run` adds its run directory here when it starts; `trainjobs runs` lists the runs
the index names besides those in ``out/runs``, and `trainjobs logs JOB` finds a job's latest
run through it, so a run made with ``--run-dir`` anywhere is found again.

The index is a directory of small files, one per run (``<run id>.json``, naming the run
directory), beside the run records: ``$TRAINJOBS_STATE_DIR/history`` when that is set, else
``$XDG_STATE_HOME/trainjobs/history`` (``~/.local/state/trainjobs/history``), since history
must outlive a reboot, unlike the records' tmpfs. It is private (``0700``) and read only when
it is this user's alone, as the records' directory is; an entry is only a pointer, and the
run directory it names is listed only while it still holds a run. Keeping the index is best
effort: a run never fails for it.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from pathlib import Path

from trainjobs.local.files import PRIVATE_DIRECTORY, untrusted, write_private
from trainjobs.local.ledger import STATE_ENV

_MAX_ENTRY_BYTES = 64 * 1024


def index_directory() -> Path | None:
    """Where the index lives (see the module's documentation); None without a home."""
    configured = os.environ.get(STATE_ENV)
    if configured:
        return Path(configured) / "history"
    base = os.environ.get("XDG_STATE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":
            return None
        base = os.path.join(home, ".local", "state")
    return Path(base) / "trainjobs" / "history"


def remember(run_dir: Path, run_id: str) -> None:
    """Add a run directory to the index (best effort)."""
    directory = index_directory()
    if directory is None:
        return
    with contextlib.suppress(OSError):
        directory.mkdir(mode=PRIVATE_DIRECTORY, parents=True, exist_ok=True)
        if _trusted(directory):
            document = {"runDir": str(run_dir.resolve()), "runId": run_id}
            write_private(directory / f"{run_id}.json", json.dumps(document) + "\n")


def indexed_run_directories() -> list[Path]:
    """The run directories the index names that still exist, in no particular order."""
    directory = index_directory()
    if directory is None or not _trusted(directory):
        return []
    found = []
    for entry in sorted(directory.glob("*.json")):
        run_dir = _pointer(entry)
        if run_dir is not None and run_dir.is_dir():
            found.append(run_dir)
    return found


def _trusted(directory: Path) -> bool:
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return not untrusted(os.fstat(handle))
    finally:
        os.close(handle)


def _pointer(entry: Path) -> Path | None:
    """The run directory an index entry names, read from a regular file, never a link."""
    try:
        handle = os.open(entry, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        with os.fdopen(handle, "rb") as stream:
            if not stat.S_ISREG(os.fstat(stream.fileno()).st_mode):
                return None
            document = json.loads(stream.read(_MAX_ENTRY_BYTES).decode("utf-8"))
    except (OSError, ValueError):
        return None
    run_dir = document.get("runDir") if isinstance(document, dict) else None
    return Path(run_dir) if isinstance(run_dir, str) and os.path.isabs(run_dir) else None
