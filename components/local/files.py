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
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from trainjobs.core.errors import EnvironmentFailure, UserError

TEMPORARY_SUFFIX = ".tmp"
SUMMARY = "summary.json"
# A log file line: the time it was written (UTC, RFC 3339 with microseconds, as
# `kubectl logs --timestamps` shows it) and the pod's line.
_TIMESTAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z ")
PRIVATE_DIRECTORY = 0o700
PRIVATE_FILE = 0o600


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
    """Create ``path`` (and missing parents) readable by its owner only."""
    path.mkdir(mode=PRIVATE_DIRECTORY, parents=True, exist_ok=True)
    path.chmod(PRIVATE_DIRECTORY)
    return path


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
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, PRIVATE_FILE)


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

    Creating it is the claim: two runs started in the same second get different ones."""
    if requested is not None:
        return _claim_requested(requested)
    candidate, suffix = default, 1
    while True:
        try:
            default.parent.mkdir(parents=True, exist_ok=True)
            candidate.mkdir(mode=PRIVATE_DIRECTORY)
            return candidate.resolve()
        except FileExistsError:
            suffix += 1
            candidate = Path(f"{default}-{suffix}")
        except OSError as error:
            raise EnvironmentFailure(
                f"cannot create the run directory {candidate}: {error.strerror}"
            ) from None


def _claim_requested(path: Path) -> Path:
    where = f"--run-dir {path}"
    if path.is_symlink() and not path.exists():
        raise UserError(f"{where}: a symbolic link to nothing; give a directory")
    if path.exists() and not path.is_dir():
        raise UserError(f"{where}: exists and is not a directory; give a new or empty directory")
    try:
        if path.is_dir():
            if any(path.iterdir()):
                raise UserError(f"{where}: {_occupant(path)}; {_another(path)}")
            path.chmod(PRIVATE_DIRECTORY)
        else:
            path.mkdir(mode=PRIVATE_DIRECTORY, parents=True)
    except OSError as error:
        raise EnvironmentFailure(f"{where}: {error.strerror}") from None
    return path.resolve()


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
