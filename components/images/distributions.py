"""The base-image distributions images are built on: releases, codenames and their Pythons."""

from __future__ import annotations

# Ubuntu releases the CUDA base images come in, and the Python versions each one's archive
# has (jammy's default is 3.10; 3.11 is in universe).
UBUNTU_RELEASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "22.04": ("jammy", ("3.10", "3.11")),
    "24.04": ("noble", ("3.12",)),
}


# Debian releases the CPU images are built on, with their codename and Python. Bookworm is the
# release the local runtime is tested on (Python 3.11, Open MPI 4.1 from the archive); trixie's
# Open MPI 5 replaced the ORTE launcher the generated assets configure.
DEBIAN_RELEASES: dict[str, tuple[str, tuple[str, ...]]] = {"12": ("bookworm", ("3.11",))}
