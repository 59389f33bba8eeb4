"""Answers kept between commands in the user's private cache directory.

For work whose answer depends only on its input and on the code that computes it, so a
later command can skip both the work and the imports it needs (the pod-template schema
check: jsonschema and the Kubernetes schema cost `trainjobs run` about 0.08 s every time).
Each answer is stored under a hash of its input and a salt naming the code, so new code
never reads an old answer.

The directory is `$TRAINJOBS_CACHE_DIR`, else `$XDG_CACHE_HOME/trainjobs`, else
`~/.cache/trainjobs`. It is used only when it is this user's own and nobody else can write
to it: an answer planted by someone else is never read. A cache that cannot be read or
written is no cache: the work is done, nothing is reported, and it is always safe to delete.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

MAX_ANSWERS = 4096
"""Answers kept per kind; storing one more starts the kind afresh (answers are small and
cheap to recompute, so a simple bound beats bookkeeping)."""


def cache_dir() -> Path | None:
    """Where answers are kept (see the module's documentation); None without a home."""
    explicit = os.environ.get("TRAINJOBS_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "trainjobs"


def load(kind: str, salt: str, key: str) -> Any | None:
    """The answer stored for ``key`` by code ``salt``, or None."""
    directory = _private_dir(kind, create=False)
    if directory is None:
        return None
    try:
        with open(directory / _name(salt, key), encoding="utf-8") as stream:
            return json.load(stream)
    except (OSError, ValueError):
        return None


def store(kind: str, salt: str, key: str, answer: Any) -> None:
    """Keep ``answer`` (JSON) for ``key``, replacing the file atomically; best effort."""
    directory = _private_dir(kind, create=True)
    if directory is None:
        return
    try:
        if len(os.listdir(directory)) >= MAX_ANSWERS:
            for name in os.listdir(directory):
                (directory / name).unlink(missing_ok=True)
        handle, temporary = tempfile.mkstemp(prefix=".answer.", dir=directory)
    except OSError:
        return
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as stream:
            json.dump(answer, stream)
        os.replace(temporary, directory / _name(salt, key))
    except (OSError, TypeError, ValueError):
        Path(temporary).unlink(missing_ok=True)


def _name(salt: str, key: str) -> str:
    return hashlib.sha256(f"{salt}\0{key}".encode()).hexdigest() + ".json"


def _private_dir(kind: str, create: bool) -> Path | None:
    """``cache_dir()/kind`` when it and its parent are this user's and closed to others."""
    root = cache_dir()
    if root is None:
        return None
    directory = root / kind
    for path in (root, directory):
        try:
            if create:
                path.mkdir(mode=0o700, parents=True, exist_ok=True)
            info = path.lstat()
        except OSError:
            return None
        if (
            not stat.S_ISDIR(info.st_mode)
            or info.st_uid != os.geteuid()
            or info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        ):
            return None
    return directory
