"""Volume subPaths mounted as the kubelet mounts them: through an open descriptor, not a path.

A container may replace a directory of its volume with a symbolic link at any moment (a
sidecar's ``renameat2(RENAME_EXCHANGE)`` swaps one in atomically). An engine is handed paths
and follows the links in them, so checking a subPath and then handing the engine its path
leaves a window in which a swap sends the mount anywhere on the host. As the kubelet does
since its subPath fixes (kubernetes ``pkg/volume/util/subpath/subpath_linux.go``:
``doSafeMakeDir``, ``doSafeOpen``, ``doBindSubPath``), the subPath is resolved once, checked
to lie beneath the volume, then created and opened one component at a time beneath the
volume's descriptor with ``O_NOFOLLOW`` (a link met now is refused, never followed), and that
descriptor itself (``/proc/self/fd/N``) is bind-mounted onto a staging path of the run's own
(``<pod>/volume-subpaths/<volume>/<container>/<index>``, the kubelet's layout: in the pod's
directory, outside every volume, where no container reaches). The engine gets the staging
path: whatever a container swaps after the open, the mount holds the directory opened.

Mounting needs root (``CAP_SYS_ADMIN``); each container start mounts afresh, as the kubelet
prepares subPaths at each start; the mounts go with the pod, with the run, or through the
run's ledger (:func:`remove_mounts`) after a crash.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import stat
from pathlib import Path

DIRECTORY = "volume-subpaths"
"""The kubelet's ``containerSubPathDirectoryName``."""
_MS_BIND = 4096
_MNT_DETACH = 2
_UMOUNT_NOFOLLOW = 8
LIBC = ctypes.CDLL(None, use_errno=True)


class LinkFound(Exception):
    """The subPath leads out of its volume, or a link appeared in it while it was opened."""


def staging_path(pod_directory: Path, volume: str, container: str, index: int) -> Path:
    """Where a container's ``index``-th volume mount is staged (names are DNS labels)."""
    return pod_directory / DIRECTORY / volume / container / str(index)


def bind(volume: Path, sub_path: str, target: Path) -> None:
    """Mount ``sub_path`` of ``volume`` at ``target`` through a descriptor opened beneath the
    volume; LinkFound if it leads out of the volume or a link is met on the way."""
    base = os.path.realpath(volume)
    # Links that stay inside the volume are followed once here, as the kubelet's
    # EvalSymlinks does; the walk below then refuses any link, so a swap after this is seen.
    try:
        resolved = os.path.realpath(os.path.join(base, sub_path))
    except OSError as error:
        if error.errno != errno.EINVAL:
            raise
        raise LinkFound from None  # a link that was a directory when read: a swap
    if resolved != base and not resolved.startswith(base + os.sep):
        raise LinkFound
    parts = [part for part in os.path.relpath(resolved, base).split(os.sep) if part != "."]
    handle = _open_beneath(base, parts)
    try:
        status = os.fstat(handle)
        _prepare_target(target, stat.S_ISDIR(status.st_mode))
        source = f"/proc/self/fd/{handle}".encode()
        if LIBC.mount(source, os.fsencode(target), None, _MS_BIND, None) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(target))
        # What is mounted is what was opened (the kubelet's checkSubPathFileEqual).
        mounted = os.stat(target, follow_symlinks=False)
        if (mounted.st_dev, mounted.st_ino) != (status.st_dev, status.st_ino):
            detach(target)
            raise LinkFound
    finally:
        os.close(handle)


def _open_beneath(base: str, parts: list[str]) -> int:
    """A descriptor of ``base/parts...``, each component opened beneath the last without
    following links and made (with the volume's mode) if missing: ``doSafeMakeDir`` and
    ``doSafeOpen``. ``O_PATH``: a FIFO swapped in cannot block the open."""
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
    handle = os.open(base, flags | os.O_DIRECTORY)
    mode = stat.S_IMODE(os.fstat(handle).st_mode)
    try:
        for part in parts:
            try:
                child = os.open(part, flags, dir_fd=handle)
            except FileNotFoundError:
                child = _make_directory(handle, part, mode)
            if stat.S_ISLNK(os.fstat(child).st_mode):
                os.close(child)
                raise LinkFound
            os.close(handle)
            handle = child
    except OSError as error:
        os.close(handle)
        if error.errno == errno.ELOOP:
            raise LinkFound from None
        raise
    except LinkFound:
        os.close(handle)
        raise
    return handle


def _make_directory(parent: int, name: str, mode: int) -> int:
    """``name`` made in ``parent`` and opened without following a link; its mode set through
    the descriptor (mkdir's is cut by the umask). One a container made first is taken as it
    is: it is the container's own."""
    try:
        os.mkdir(name, mode, dir_fd=parent)
    except FileExistsError:
        return os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    child = os.open(
        name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent
    )
    os.fchmod(child, mode)
    return child


def _prepare_target(target: Path, directory: bool) -> None:
    """An empty directory (or file: a file takes any non-directory's bind mount) at ``target``,
    the previous start's mount gone."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    detach(target)
    if target.is_dir() and not directory:
        target.rmdir()
    elif target.exists() and directory and not target.is_dir():
        target.unlink()
    if directory:
        target.mkdir(mode=0o700, exist_ok=True)
    else:
        os.close(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))


def detach(target: Path) -> None:
    """Every mount at ``target`` gone (lazily: an engine may still hold it); nothing if none."""
    while LIBC.umount2(os.fsencode(target), _MNT_DETACH | _UMOUNT_NOFOLLOW) == 0:
        pass
    code = ctypes.get_errno()
    if code not in (errno.EINVAL, errno.ENOENT):
        raise OSError(code, os.strerror(code), str(target))


def remove_mounts(pod_directory: Path) -> list[str]:
    """Unmount and remove a pod's staging paths; what could not be removed.

    Only the staging layout's fixed depth is walked and only empty directories are removed
    (``rmdir``, never a recursive delete): a mount that would not go keeps what it holds."""
    root = pod_directory / DIRECTORY
    left: list[str] = []
    for volume in _entries(root):
        for container in _entries(volume):
            for target in _entries(container):
                try:
                    detach(target)
                    if target.is_dir() and not target.is_symlink():
                        target.rmdir()
                    else:
                        target.unlink()
                except OSError as error:
                    left.append(f"subPath mount {target} ({error.strerror})")
            _remove_empty(container)
        _remove_empty(volume)
    _remove_empty(root)
    return left


def _entries(directory: Path) -> list[Path]:
    if directory.is_symlink() or not directory.is_dir():
        return []
    return sorted(directory.iterdir())


def _remove_empty(directory: Path) -> None:
    with contextlib.suppress(OSError):
        directory.rmdir()
