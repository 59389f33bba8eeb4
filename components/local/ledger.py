"""The record of what a local run creates, written before anything is created.

With it, a killed run's leftovers can always be found and removed.

A run's ledger is one small JSON file in :func:`state_directory` (``/run/trainjobs`` as
root: a tmpfs, emptied at boot like the namespaces and processes it lists). It names the run,
its owner (the runtime's PID and start time) and, in order, everything the run is about to
create: its processes (found by their marker and their network namespaces), links, network
namespaces, paths such as ``/etc/netns/<ns>``, temporary files. Each entry is written,
atomically, *before* the thing it names exists, so at any instant the ledger lists at least
what exists. A run that ends normally removes everything and then its ledger.

When the owner is gone but its ledger is not (``kill -9``, a crash, a power cut of the
terminal), the run is dead: :func:`clean_dead_runs` (run by every ``trainjobs run`` before it
starts, and by ``trainjobs clean``) claims the ledger by renaming it, undoes its entries in
reverse order and says what it removed, and writes the dead run's ``summary.json``.

Adding a kind of resource (a container, a container network, an sshd process, a key file):
record it with :meth:`Ledger.record` before creating it, and register the function that
removes it with :func:`resource_kind` in the module that creates it, listed in
:data:`CLEANER_MODULES`. A cleaner takes the entry and returns what it removed (nothing if it
was already gone) and raises nothing for a missing resource.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import os
import secrets
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjobs.core.errors import EnvironmentFailure
from trainjobs.local.files import PRIVATE_DIRECTORY, temporary_files, untrusted, write_private
from trainjobs.local.kubectl import process_start_time

STATE_ENV = "TRAINJOBS_STATE_DIR"
"""Overrides where ledgers live (tests keep theirs apart from other runs on the machine)."""
CLEANER_MODULES = (
    "trainjobs.local.pods",
    "trainjobs.local.network",
    "trainjobs.local.ssh",
    "trainjobs.local.container.cleanup",
)
"""Modules that register cleaners with :func:`resource_kind`."""
_CLAIMED = ".cleaning-"
_MAX_LEDGER_BYTES = 16 * 1024 * 1024

Entry = dict[str, Any]
Cleaner = Callable[[Entry], list[str]]
_CLEANERS: dict[str, Cleaner] = {}


def resource_kind(kind: str) -> Callable[[Cleaner], Cleaner]:
    """Register the function that removes resources of ``kind`` left by a dead run."""

    def register(cleaner: Cleaner) -> Cleaner:
        _CLEANERS[kind] = cleaner
        return cleaner

    return register


def state_directory() -> Path:
    """Where ledgers live: ``$TRAINJOBS_STATE_DIR``, else ``/run/trainjobs`` as root, else
    ``$XDG_RUNTIME_DIR/trainjobs`` or ``/tmp/trainjobs-<uid>``."""
    configured = os.environ.get(STATE_ENV)
    if configured:
        return Path(configured)
    if os.geteuid() == 0:
        return Path("/run/trainjobs")
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    return Path(runtime) / "trainjobs" if runtime else Path(f"/tmp/trainjobs-{os.geteuid()}")


def _trusted(directory: Path) -> Path:
    """The state directory, only if this user alone may write it: clean-up removes and runs
    what its ledgers say, so a ledger someone else could write would let them steer root.

    Checked before anything changes: a missing directory is created private (ours, so
    ours to set up); one that exists is never chmod-ed (``TRAINJOBS_STATE_DIR=/tmp`` must
    not change /tmp), only refused when another user owns it or may write to it."""
    try:
        directory.mkdir(mode=PRIVATE_DIRECTORY, parents=True)
    except FileExistsError:
        pass
    except OSError as error:
        raise EnvironmentFailure(
            f"cannot use {directory} for run records ({STATE_ENV}): {error.strerror}"
        ) from None
    try:
        handle = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise EnvironmentFailure(
            f"cannot use {directory} for run records ({STATE_ENV}): {error.strerror}; give a "
            "directory, not a symbolic link"
        ) from None
    try:
        status = os.fstat(handle)
    finally:
        os.close(handle)
    problem = untrusted(status)
    if problem:
        raise EnvironmentFailure(
            f"{directory} ({STATE_ENV}) {problem}; run records must be in a directory only "
            f"uid {os.geteuid()} can write: unset {STATE_ENV} or give a private (0700) one"
        )
    return directory


@dataclass
class Ledger:
    """The ledger of one live run (this process is its owner)."""

    path: Path
    document: dict[str, Any]

    @classmethod
    def open(cls, job: str, run_dir: Path, taken: Callable[[str], bool]) -> Ledger:
        """A new ledger under a fresh run id (one that ``taken`` says is free)."""
        directory = _trusted(state_directory())
        while True:
            run_id = secrets.token_hex(3)
            path = directory / f"{run_id}.json"
            if not taken(run_id) and not path.exists():
                break
        ledger = cls(
            path,
            {
                "runId": run_id,
                "job": job,
                "runDir": str(run_dir),
                "owner": {"pid": os.getpid(), "starttime": process_start_time(os.getpid())},
                "created": [],
            },
        )
        ledger._save()
        return ledger

    @property
    def run_id(self) -> str:
        return str(self.document["runId"])

    def record(self, kind: str, **details: Any) -> None:
        """Note that a resource of ``kind`` is about to be created (before creating it)."""
        self.record_all([{"kind": kind, **details}])

    def record_all(self, entries: list[Entry]) -> None:
        """Note several resources at once (each a ``{"kind": ..., ...}`` entry)."""
        self.document["created"].extend(entries)
        self._save()

    def close(self) -> None:
        """Everything recorded is gone: the run leaves no trace."""
        self.path.unlink(missing_ok=True)

    def _save(self) -> None:
        write_private(self.path, json.dumps(self.document, indent=1) + "\n")


@dataclass(frozen=True)
class Cleaned:
    """What clean-up found of one dead run."""

    run_id: str
    job: str
    run_dir: str
    owner_pid: int
    removed: list[str]
    failed: list[str]


def clean_dead_runs() -> list[Cleaned]:
    """Remove what every dead run left (a run whose owner process no longer exists)."""
    directory = state_directory()
    if not directory.is_dir():
        return []
    _trusted(directory)
    for module in CLEANER_MODULES:
        importlib.import_module(module)
    found = []
    for path in sorted(directory.iterdir()):
        claimed = _claim(path)
        if claimed is not None:
            found.append(_clean(claimed))
    return found


def _claim(path: Path) -> Path | None:
    """Take a dead run's ledger for this process (by renaming it), or None if it is not one:
    a live run's, another cleaner's that is alive, or not a ledger at all."""
    name = path.name
    if name.startswith(".") or not (name.endswith(".json") or _CLAIMED in name):
        return None
    if _CLAIMED in name:
        cleaner_pid = name.rsplit(_CLAIMED, 1)[1]
        if cleaner_pid.isdigit() and _alive(int(cleaner_pid), None):
            return None
        run_id = name.split(".", 1)[0]
    else:
        run_id = name.removesuffix(".json")
        owner = _read(path).get("owner") or {}
        if _alive(owner.get("pid"), owner.get("starttime")):
            return None
    claimed = path.with_name(f"{run_id}.json{_CLAIMED}{os.getpid()}")
    try:
        os.rename(path, claimed)
    except OSError:
        return None  # another cleaner was first
    return claimed


def _alive(pid: Any, starttime: Any) -> bool:
    """A process with this PID and start time runs (a zombie, killed but not yet reaped by
    its parent, is dead: it holds nothing and will do nothing more)."""
    if not isinstance(pid, int):
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            state = handle.read().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    current = process_start_time(pid)
    return state not in ("Z", "X") and current is not None and starttime in (None, current)


def _read(path: Path) -> dict[str, Any]:
    """A ledger's document, read only if this user alone could have written it: opened
    without following a symbolic link and checked on the open file (no swap in between);
    a ledger that is not is refused, naming it, before anything it lists is touched."""
    try:
        handle = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise EnvironmentFailure(
                f"run record {path} is a symbolic link; remove it (clean-up follows only "
                "records this user wrote)"
            ) from None
        return {}
    with os.fdopen(handle, "rb") as stream:
        status = os.fstat(stream.fileno())
        problem = "is not a regular file" if not stat.S_ISREG(status.st_mode) else ""
        problem = problem or untrusted(status)
        if problem:
            raise EnvironmentFailure(
                f"run record {path} {problem}; remove it (clean-up follows only records "
                f"uid {os.geteuid()} alone can write)"
            )
        try:
            document = json.loads(stream.read(_MAX_LEDGER_BYTES).decode("utf-8"))
        except (OSError, ValueError):
            return {}
    return document if isinstance(document, dict) else {}


def _clean(claimed: Path) -> Cleaned:
    document = _read(claimed)
    run_id = str(document.get("runId") or claimed.name.split(".", 1)[0])
    removed: list[str] = []
    failed: list[str] = []
    for entry in reversed(document.get("created") or []):
        cleaner = _CLEANERS.get(str(entry.get("kind")))
        if cleaner is None:
            failed.append(f"{entry.get('kind')} (no cleaner knows this kind)")
            continue
        try:
            removed += cleaner(entry)
        except Exception as error:  # one stubborn resource must not stop the others
            failed.append(f"{entry.get('kind')}: {error}")
    for leftover in claimed.parent.glob(f".{run_id}.json.*"):
        leftover.unlink(missing_ok=True)
    if not failed:
        claimed.unlink(missing_ok=True)
    else:
        with contextlib.suppress(OSError):
            os.rename(claimed, claimed.with_name(f"{run_id}.json"))
    owner = document.get("owner") or {}
    return Cleaned(
        run_id=run_id,
        job=str(document.get("job") or "?"),
        run_dir=str(document.get("runDir") or ""),
        owner_pid=int(owner.get("pid") or 0),
        removed=removed,
        failed=failed,
    )


@resource_kind("temporary-files")
def _remove_temporary_files(entry: Entry) -> list[str]:
    """Half-written files of :func:`~trainjobs.local.files.write_private` under a directory."""
    removed = []
    for path in temporary_files(Path(entry["directory"])):
        path.unlink(missing_ok=True)
        removed.append(f"temporary file {path}")
    return removed
