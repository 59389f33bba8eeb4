"""Files a local run writes: inside its run directory, atomically, readable by root only.

A run directory holds every container's environment (``pods.json``, the manifests) and what
the job writes: it is created ``0700`` and its files ``0600``, so other users of the machine
read none of it. Whole files are written to a temporary name beside the target and renamed
over it, so a reader (the kubectl stand-in) never sees half a file and a crash leaves the
old content; the temporary names start with ``.`` and end with :data:`TEMPORARY_SUFFIX`, so
clean-up can find them.

Every path the runtime builds from a spec (a pod, container or volume name, a configMap
item's ``path``) goes through :func:`inside` before anything is created, written or deleted
there: spec validation already refuses such names, and this holds even if it did not.
"""

from __future__ import annotations

import json
import os
import re
import stat
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from trainjobs.core.errors import EnvironmentFailure, UserError
from trainjobs.core.terminal import escape

TEMPORARY_SUFFIX = ".tmp"
SUMMARY = "summary.json"
# A log file line: the time it was written (UTC, RFC 3339 with microseconds, as
# `kubectl logs --timestamps` shows it) and the pod's line.
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ")
PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600
_MAX_LINKS = 40
"""As the kernel's limit on symbolic links followed in one path lookup (MAXSYMLINKS)."""


def inside(base: Path, *parts: str) -> Path:
    """``base`` joined with ``parts``, refused unless the result (symlinks resolved) is
    ``base`` itself or lies below it."""
    if any("\0" in part for part in parts):
        raise UserError(f"{'/'.join(parts)!r}: a path cannot hold a NUL character")
    joined = base.joinpath(*parts)
    resolved = joined.resolve()
    root = base.resolve()
    if resolved != root and root not in resolved.parents:
        raise UserError(
            f"{'/'.join(parts)!r} would lead outside {base}; a local run writes only inside "
            "its run directory"
        )
    return joined


def private_directory(path: Path) -> Path:
    """Create ``path`` (and missing parents) readable by its owner only. An existing ``path``
    is made private only if it is a directory of this user: never through a symbolic link."""
    path.mkdir(mode=PRIVATE_DIRECTORY, parents=True, exist_ok=True)
    handle = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        owner = os.fstat(handle).st_uid
        if owner != os.geteuid():
            raise EnvironmentFailure(f"{path} is owned by uid {owner}, not this user")
        os.fchmod(handle, PRIVATE_DIRECTORY)
    finally:
        os.close(handle)
    return path


def untrusted(status: os.stat_result) -> str:
    """Why a file or directory with this status may have been written by someone else."""
    if status.st_uid != os.geteuid():
        return f"is owned by uid {status.st_uid}"
    if status.st_mode & 0o022:
        return f"may be written by other users (mode {stat.S_IMODE(status.st_mode):04o})"
    return ""


def redirectable(path: Path) -> str:
    """Why another user could make writes below ``path`` land elsewhere, or ``""``.

    They could if they may rename or replace any directory or symbolic link on the way to
    it: every directory the path passes through must be root's or this user's, and not
    writable by others unless sticky (``/tmp``: others may add names there, never move
    ours); every symbolic link on the way must be root's or this user's (its target is
    walked the same way). Components that do not exist yet end the walk: they are created
    by this user, in a directory no one else controls."""
    me = os.geteuid()
    current = Path("/")
    pending = list(Path(os.path.abspath(path)).parts[1:])
    links = 0
    while pending:
        status = os.stat(current)
        if status.st_uid not in (0, me):
            return f"{current} is owned by uid {status.st_uid}"
        if status.st_mode & 0o022 and not status.st_mode & stat.S_ISVTX:
            mode = stat.S_IMODE(status.st_mode)
            return f"{current} may be written by other users (mode {mode:04o})"
        part = pending.pop(0)
        if part in ("", "."):
            continue
        if part == "..":
            current = current.parent
            continue
        candidate = current / part
        try:
            status = os.lstat(candidate)
        except FileNotFoundError:
            return ""
        if stat.S_ISLNK(status.st_mode):
            if status.st_uid not in (0, me):
                return f"{candidate} is a symbolic link owned by uid {status.st_uid}"
            links += 1
            if links > _MAX_LINKS:
                return f"{candidate}: too many levels of symbolic links"
            target = Path(os.readlink(candidate))
            if target.is_absolute():
                current = Path("/")
            pending = [*target.parts[1 if target.is_absolute() else 0 :], *pending]
            continue
        if not stat.S_ISDIR(status.st_mode):
            return ""  # not a directory: opening below it fails on its own
        current = candidate
    return ""


def write_private(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically, as a ``0600`` file."""
    handle, temporary = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=TEMPORARY_SUFFIX, dir=path.parent
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            stream.write(text)
        os.replace(temporary, path)
    except OSError as error:
        Path(temporary).unlink(missing_ok=True)
        raise OSError(error.errno, error.strerror, str(path)) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def open_log(path: Path) -> int:
    """A ``0600`` log file opened for appending."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(path, flags, PRIVATE_FILE)


def log_record(text: str) -> bytes:
    """One line of a pod's log file: the time now, then ``text``."""
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    return f"{stamp} {text}\n".encode("utf-8", "replace")


def without_timestamp(line: str) -> str:
    """A log file line as the pod printed it."""
    return line[28:] if _TIMESTAMP.match(line) else line


def read_log(path: Path) -> list[str]:
    """A pod's log file, its lines as the pod printed them."""
    return [without_timestamp(line) for line in path.read_text(encoding="utf-8").splitlines()]


def temporary_files(directory: Path) -> list[Path]:
    """Temporary files :func:`write_private` left below ``directory`` (a killed writer's)."""
    if not directory.is_dir():
        return []
    return sorted(
        path
        for path in directory.rglob(f".*{TEMPORARY_SUFFIX}")
        if path.is_file() and not path.is_symlink()
    )


def new_run_directory(requested: Path | None, default: Path) -> Path:
    """The run directory, created now and private: ``requested`` if given (it must be new or
    empty), else ``default`` or, if another run took that name first, ``default-2``...

    Creating it is the claim: two runs started in the same second get different ones. A
    run directory is trusted as the run records' directory is (:func:`redirectable`,
    :func:`untrusted`): root writes pods' logs and files there, so no other user may own
    it or anything on the way to it. That is checked before anything is created or
    changed, and again once the directory exists."""
    if requested is not None:
        return _claim_requested(requested)
    _refuse_redirectable(default, "the run directory")
    candidate, suffix = default, 1
    while True:
        try:
            default.parent.mkdir(parents=True, exist_ok=True)
            candidate.mkdir(mode=PRIVATE_DIRECTORY)
            break
        except FileExistsError:
            suffix += 1
            candidate = Path(f"{default}-{suffix}")
        except OSError as error:
            raise EnvironmentFailure(
                f"cannot create the run directory {candidate}: {error.strerror}"
            ) from None
    _refuse_redirectable(candidate, "the run directory")
    return candidate.resolve()


def _refuse_redirectable(path: Path, where: str) -> None:
    try:
        problem = redirectable(path)
    except OSError as error:
        raise EnvironmentFailure(f"{where} {escape(str(path))}: {error.strerror}") from None
    if problem:
        raise UserError(
            f"{where} {escape(str(path))}: {escape(problem)}, so another user could redirect "
            "what the run writes; give a directory only you and root control (e.g. --run-dir "
            "under your home or /tmp)"
        )


def _claim_requested(path: Path) -> Path:
    where = f"--run-dir {escape(str(path))}"
    if path.is_symlink() and not path.exists():
        raise UserError(f"{where}: a symbolic link to nothing; give a directory")
    if path.exists() and not path.is_dir():
        raise UserError(f"{where}: exists and is not a directory; give a new or empty directory")
    _refuse_redirectable(path, "--run-dir")
    try:
        path.mkdir(mode=PRIVATE_DIRECTORY, parents=True, exist_ok=True)
    except OSError as error:
        raise EnvironmentFailure(f"{where}: {error.strerror}") from None
    _refuse_redirectable(path, "--run-dir")
    resolved = path.resolve()
    try:
        handle = os.open(resolved, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise EnvironmentFailure(f"{where}: {error.strerror}") from None
    try:
        status = os.fstat(handle)
        if status.st_uid != os.geteuid():
            raise UserError(
                f"{where}: is owned by uid {status.st_uid}; a run directory must be yours: "
                "give a new directory (it is created private) or one of your own"
            )
        if os.listdir(handle):
            raise UserError(f"{where}: {_occupant(resolved)}; {_another(path)}")
        os.fchmod(handle, PRIVATE_DIRECTORY)
    except OSError as error:
        raise EnvironmentFailure(f"{where}: {error.strerror}") from None
    finally:
        os.close(handle)
    return resolved


def _occupant(path: Path) -> str:
    """What a non-empty requested run directory holds, for the refusal."""
    try:
        summary = json.loads((path / SUMMARY).read_text(encoding="utf-8"))
        return f"holds an earlier run of {summary['job']} ({summary['outcome']})"
    except (OSError, ValueError, KeyError, TypeError):
        return "not empty"


def _another(path: Path) -> str:
    """The fix: a free sibling name (as docker asks for another container name), or removal."""
    suffix = 2
    while Path(f"{path}-{suffix}").exists():
        suffix += 1
    return f"give a new directory (e.g. --run-dir {path}-{suffix}) or remove it first"
