"""A Debian base image made on this machine: debootstrap of the release, imported by the engine.

Where no registry can be reached there is no ``debian:12.12-slim`` to pull, so the CPU images
start from this instead (the ``BASE_IMAGE`` build setting): Debian's own ``debootstrap
--variant=minbase`` of the release the images declare, from the build settings' Debian mirror,
with what the slim image leaves out removed (downloaded packages, package lists) and the
public archive as its apt source, as in the official image. It is made once: an image that
exists is kept.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import Engine, EngineError
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.builder import Say
from trainjobs.images.image_parts import DebianBase

DEFAULT_MIRROR = "http://deb.debian.org/debian"
PUBLIC_SOURCES = """\
Types: deb
URIs: http://deb.debian.org/debian
Suites: {codename} {codename}-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: {codename}-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"""


def bootstrap_reference(release: DebianBase) -> str:
    """``localhost/trainjobs/debian:bookworm-debootstrap``: local, never a registry's name."""
    return f"localhost/trainjobs/debian:{release.codename}-debootstrap"


def bootstrap(engine: Engine, release: DebianBase, settings: BuildSettings, say: Say) -> str:
    """The reference of the bootstrapped base image, made first if it does not exist."""
    reference = bootstrap_reference(release)
    if engine.image_exists(reference):
        say(f"{reference}: exists")
        return reference
    if shutil.which("debootstrap") is None:
        raise UserError(
            "debootstrap is not installed: as root, `make engine` installs it (Debian package "
            "debootstrap)"
        )
    mirror = settings.debian_mirror or DEFAULT_MIRROR
    with tempfile.TemporaryDirectory(prefix="trainjobs-bootstrap-", dir="/var/tmp") as work:
        root = Path(work) / "rootfs"
        say(f"{reference}: debootstrap --variant=minbase {release.codename} from {mirror}")
        result = subprocess.run(
            ["debootstrap", "--variant=minbase", release.codename, str(root), mirror],
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 0:
            tail = (result.stdout + result.stderr).strip().splitlines()[-5:]
            raise EngineError(f"debootstrap failed (exit {result.returncode}): {' | '.join(tail)}")
        _slim(root, release)
        tarball = Path(work) / "rootfs.tar"
        subprocess.run(
            ["tar", "--numeric-owner", "-C", str(root), "-cf", str(tarball), "."], check=True
        )
        engine.import_rootfs(tarball, reference, ['CMD ["bash"]'])
    say(f"{reference}: imported")
    return reference


def _slim(root: Path, release: DebianBase) -> None:
    """What the official slim image does not carry, and its apt sources instead of the
    mirror debootstrap used (which may be this machine's, not the public one)."""
    for directory in (root / "var/cache/apt/archives", root / "var/lib/apt/lists"):
        for entry in directory.glob("*"):
            if entry.is_file():
                entry.unlink()
    (root / "etc/apt/sources.list").unlink(missing_ok=True)
    sources = root / "etc/apt/sources.list.d/debian.sources"
    sources.write_text(PUBLIC_SOURCES.format(codename=release.codename), encoding="utf-8")
