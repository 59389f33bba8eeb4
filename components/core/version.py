"""The package's version, single-sourced from its metadata (``pyproject.toml``'s ``version``)."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

PACKAGE = "trainjobs"


def package_version() -> str:
    """The installed distribution's version; ``0+unknown`` when trainjobs runs from a
    source tree that was never installed (PEP 440's local-version form, so it still
    compares as a version)."""
    try:
        return version(PACKAGE)
    except PackageNotFoundError:
        return "0+unknown"
