"""A container pod's volumes on the host: emptyDir size limits, and nothing left after the run.

- emptyDir ``sizeLimit``: the kubelet enforces it on a disk-backed emptyDir by eviction (its
  eviction manager's ``emptyDirLimitEviction``, kubernetes ``pkg/kubelet/eviction/
  eviction_manager.go``: a pod whose emptyDir holds more than a positive limit is evicted at
  the next monitoring round, every 10 s), and on a memory-backed one with a tmpfs of that size
  (``setupTmpfs`` in ``pkg/volume/emptydir/empty_dir.go``). Here every emptyDir with a positive
  limit is such a tmpfs: a hard limit (a write past it fails with ENOSPC) instead of an
  eviction that comes only after the disk took up to 10 s of writes; its data is held in
  memory, at most the limit. A limit of 0 is no limit, as for the kubelet.
- When the run ends (or, after a crash, the clean-up that follows its ledger), a pod's subPath
  mounts (:mod:`.subpath`) and emptyDir tmpfs mounts go, and so does every emptyDir's content,
  device nodes included: the kubelet removes a pod's emptyDirs with the pod.
"""

from __future__ import annotations

import ctypes
import math
import os
import shutil
from pathlib import Path
from typing import Any

from trainjobs.core import quantity
from trainjobs.local.container.subpath import LIBC, detach, remove_mounts


def size_limit(volume: dict[str, Any]) -> int | None:
    """The emptyDir's limit in bytes (rounded up, as ``Quantity.Value``), None for none."""
    limit = (volume.get("emptyDir") or {}).get("sizeLimit")
    if limit is None:
        return None
    size = math.ceil(quantity.parse(limit))
    return size if size > 0 else None


def mount_limited(directory: Path, size: int) -> None:
    """A fresh tmpfs of ``size`` bytes at the emptyDir's (empty) directory."""
    options = f"size={size},mode=0777".encode()
    if LIBC.mount(b"tmpfs", os.fsencode(directory), b"tmpfs", 0, options) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code), str(directory))


def remove_pod_volumes(pod_directory: Path, empty_dirs: list[Path]) -> list[str]:
    """The pod's subPath mounts, then its emptyDirs (their tmpfs unmounted first); what could
    not be removed. ``rmtree`` never follows a link a container left there."""
    left = remove_mounts(pod_directory)
    for directory in empty_dirs:
        try:
            detach(directory)
        except OSError as error:
            left.append(f"emptyDir {directory} ({error.strerror})")
            continue
        shutil.rmtree(directory, ignore_errors=True)
        if directory.exists() or directory.is_symlink():
            left.append(f"emptyDir {directory}")
    return left
