"""In-image paths a process run cannot provide, refused before any pod starts.

A process run gives a container this machine's filesystem, the image's declared files
(:mod:`trainjobs.images.declarations`) and its volumes, nothing else. A command that names a
program or a script inside the image (Kubeflow's examples run ``python3
/opt/pytorch-mnist/mnist.py``) would fail in every attempt, after each restart back-off; so
such a path is refused at once, naming it and the container runtime, which runs the image.

Only the program and an interpreter's script are checked: other arguments that look like
paths may name files the job writes.
"""

from __future__ import annotations

import os
import posixpath
import re
from typing import Any

from trainjobs.core.errors import UserError
from trainjobs.images.declarations import Image
from trainjobs.local.cluster import PodPlan

_INTERPRETER = re.compile(r"(python[0-9.]*|sh|bash|dash)")
_INLINE = ("-c", "-m")
"""Options after which an interpreter runs no script file (``-c CODE``, ``-m MODULE``)."""


def script_index(argv: list[str]) -> int | None:
    """The index of the script an interpreter runs (``python3 -u /opt/x.py``), or None."""
    if not argv or not _INTERPRETER.fullmatch(posixpath.basename(argv[0])):
        return None
    for index, argument in enumerate(argv[1:], start=1):
        if argument.startswith(_INLINE):
            return None
        if not argument.startswith("-"):
            return index
    return None


def check_image_paths(
    pod: PodPlan, group: str, index: int, container: dict[str, Any], image: Image
) -> None:
    """Refuse a program or script path of ``container`` that a process run cannot provide."""
    command = [str(part) for part in container.get("command") or []]
    args = [str(part) for part in container.get("args") or []]
    argv = [*command, *args] if command else [*image.entrypoint, *(args or image.cmd)]
    fields = [f"command[{i}]" for i in range(len(command))] + [
        f"args[{i}]" for i in range(len(args))
    ]
    # Without a command the image's ENTRYPOINT runs: its paths are the declaration's own.
    offset = 0 if command else len(image.entrypoint)
    checked = [0] + ([found] if (found := script_index(argv)) is not None else [])
    mounts = [str(mount.get("mountPath", "")) for mount in container.get("volumeMounts") or []]
    for position in checked:
        if position < offset or position - offset >= len(fields):
            continue
        path = argv[position]
        if not _unprovided(path, image, mounts):
            continue
        declared = ", ".join(item.path for item in image.files) or "no files"
        where = f"{pod.owner} pod template spec.{group}[{index}].{fields[position - offset]}"
        raise UserError(
            f"{where}: {path!r} is a file inside the image that a process run cannot provide "
            f"(image {image.reference} declares only {declared}, and no volume or file of this "
            "machine is there): run the job with --runtime container, which runs the image itself"
        )


def _unprovided(path: str, image: Image, mounts: list[str]) -> bool:
    """An absolute path (no ``$(VAR)`` in it) that no declared file, volume or host file
    provides."""
    if not path.startswith("/") or "$(" in path or image.file(path) is not None:
        return False
    if any(path == mount or path.startswith(mount.rstrip("/") + "/") for mount in mounts if mount):
        return False
    return not os.path.exists(path)
