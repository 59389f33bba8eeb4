"""SubPath mounts made through a descriptor opened beneath the volume (as the kubelet does).

On the host, as root, without an engine: what is mounted at the staging path is always the
volume's own directory, even while another thread swaps that directory for a link to ``/``
as fast as it can (``renameat2(RENAME_EXCHANGE)``, what a sidecar container does).
"""

from __future__ import annotations

import ctypes
import os
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from trainjobs.local.container import subpath

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")

_RENAME_EXCHANGE = 2
_AT_FDCWD = -100
_LIBC = ctypes.CDLL(None, use_errno=True)


@pytest.fixture
def host_marker() -> Iterator[Path]:
    """A file in the host's /tmp that no volume holds."""
    marker = Path("/tmp") / f"trainjobs-host-marker-{uuid.uuid4().hex}"
    marker.write_text("host\n")
    yield marker
    marker.unlink()


def _volume(tmp_path: Path) -> tuple[Path, Path]:
    pod = tmp_path / "pods" / "p"
    volume = pod / "volumes" / "data"
    volume.mkdir(parents=True)
    volume.chmod(0o777)
    return pod, volume


def test_a_missing_sub_path_is_made_with_the_volume_mode_and_mounted(tmp_path: Path):
    pod, volume = _volume(tmp_path)
    target = subpath.staging_path(pod, "data", "c", 0)

    subpath.bind(volume, "a/b", target)
    (target / "written").write_text("through the mount")

    assert target == pod / "volume-subpaths" / "data" / "c" / "0"
    assert (volume / "a" / "b" / "written").read_text() == "through the mount"
    assert oct((volume / "a" / "b").stat().st_mode & 0o7777) == "0o777"
    assert subpath.remove_mounts(pod) == []
    assert not (pod / "volume-subpaths").exists()
    assert (volume / "a" / "b" / "written").read_text() == "through the mount"


def test_a_sub_path_that_is_a_link_out_of_the_volume_is_refused(tmp_path: Path):
    pod, volume = _volume(tmp_path)
    (volume / "sub").symlink_to("/")
    target = subpath.staging_path(pod, "data", "c", 0)

    with pytest.raises(subpath.LinkFound):
        subpath.bind(volume, "sub", target)

    assert not target.exists() or list(target.iterdir()) == []


def test_a_link_inside_the_volume_is_followed_as_the_kubelet_does(tmp_path: Path):
    pod, volume = _volume(tmp_path)
    (volume / "real").mkdir()
    (volume / "real" / "file").write_text("inside")
    (volume / "alias").symlink_to("real")
    target = subpath.staging_path(pod, "data", "c", 0)

    subpath.bind(volume, "alias", target)

    assert (target / "file").read_text() == "inside"
    assert subpath.remove_mounts(pod) == []


def test_a_swap_for_a_link_to_the_root_never_mounts_the_host(tmp_path: Path, host_marker: Path):
    """A thread swaps the subPath with a link to / in a tight loop while the subPath is
    mounted again and again: every mount made holds the volume's directory."""
    pod, volume = _volume(tmp_path)
    (volume / "sub").mkdir()
    (volume / "sub" / "mine").write_text("volume")
    (volume / "link").symlink_to("/")
    target = subpath.staging_path(pod, "data", "c", 0)
    stop = threading.Event()
    swaps = [0]

    def swap() -> None:
        first, second = os.fsencode(volume / "sub"), os.fsencode(volume / "link")
        while not stop.is_set():
            _LIBC.renameat2(_AT_FDCWD, first, _AT_FDCWD, second, _RENAME_EXCHANGE)
            swaps[0] += 1

    swapper = threading.Thread(target=swap)
    swapper.start()
    mounted = refused = 0
    seen_host: list[str] = []
    deadline = time.monotonic() + 20
    try:
        while mounted + refused < 2000 and time.monotonic() < deadline:
            try:
                subpath.bind(volume, "sub", target)
            except subpath.LinkFound:
                refused += 1
                continue
            mounted += 1
            names = os.listdir(target)
            if names != ["mine"]:
                seen_host.append(repr(names[:5]))
    finally:
        stop.set()
        swapper.join()
        left = subpath.remove_mounts(pod)

    assert seen_host == []
    assert mounted > 0 and refused > 0 and swaps[0] > mounted + refused
    assert left == []
    assert host_marker.read_text() == "host\n"
