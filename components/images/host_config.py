"""This machine's own package sources as build settings: its Debian mirror, pip and CA bundle.

Machines behind a mirror or a TLS-intercepting proxy already say where packages come from;
``--host-config`` passes that on to image builds instead of asking for it again:

- the Debian mirror: the first ``deb`` source of this release in ``/etc/apt/sources.list`` and
  ``/etc/apt/sources.list.d/`` (one-line ``.list`` and deb822 ``.sources`` files), and the one
  that serves its ``-security`` suite;
- pip's configuration as pip itself reads it (``pip config list``: ``/etc/pip.conf``,
  ``~/.config/pip/pip.conf`` and the other files pip loads), then ``PIP_*`` variables, which
  override files as they do for pip;
- the CA bundle pip trusts (its ``cert``), else ``REQUESTS_CA_BUNDLE`` or ``SSL_CERT_FILE``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from trainjobs.images.build_settings import LIST_OPTIONS, PIP_OPTIONS, BuildSettings

APT_SOURCES = Path("/etc/apt/sources.list")
APT_SOURCE_PARTS = Path("/etc/apt/sources.list.d")
OS_RELEASE = Path("/etc/os-release")


def host_settings(base: BuildSettings | None = None) -> BuildSettings:
    """``base`` with this machine's Debian mirror, pip options and CA bundle filled in where
    ``base`` leaves them unset."""
    base = base or BuildSettings()
    main, security = debian_mirrors(_sources(), _codename())
    pip = pip_options()
    ca = base.ca_bundle or _ca_bundle(pip.pop("cert", ()))
    return BuildSettings(
        debian_base_image=base.debian_base_image,
        kubectl_image=base.kubectl_image,
        debian_mirror=base.debian_mirror or main,
        debian_security_mirror=base.debian_security_mirror or security,
        pip=base.pip or {key: values for key, values in pip.items() if key in PIP_OPTIONS},
        ca_bundle=ca,
    )


def _codename() -> str:
    if OS_RELEASE.is_file():
        for line in OS_RELEASE.read_text(encoding="utf-8").splitlines():
            key, _, value = line.partition("=")
            if key == "VERSION_CODENAME":
                return value.strip().strip('"')
    return ""


def _sources() -> list[tuple[str, list[str]]]:
    """Every enabled ``deb`` source of this machine: (URI, suites)."""
    found: list[tuple[str, list[str]]] = []
    files = [APT_SOURCES] if APT_SOURCES.is_file() else []
    if APT_SOURCE_PARTS.is_dir():
        files += sorted(APT_SOURCE_PARTS.iterdir())
    for path in files:
        if path.suffix == ".sources":
            found += deb822_sources(path.read_text(encoding="utf-8"))
        elif path.suffix == ".list" or path == APT_SOURCES:
            found += one_line_sources(path.read_text(encoding="utf-8"))
    return found


def one_line_sources(text: str) -> list[tuple[str, list[str]]]:
    """``deb [options] URI SUITE COMPONENT...`` lines."""
    found = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if not words or words[0] != "deb":
            continue
        words = words[1:]
        if words and words[0].startswith("["):
            while words and not words[0].endswith("]"):
                words = words[1:]
            words = words[1:]
        if len(words) >= 2:
            found.append((words[0], [words[1]]))
    return found


def deb822_sources(text: str) -> list[tuple[str, list[str]]]:
    """Stanzas of ``Types``, ``URIs``, ``Suites`` (and ``Enabled``), separated by blank lines."""
    found = []
    for stanza in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in stanza.splitlines():
            if line.startswith("#") or ":" not in line or line[:1].isspace():
                continue
            key, _, value = line.partition(":")
            fields[key.strip().lower()] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled") == "no":
            continue
        for uri in fields.get("uris", "").split():
            found.append((uri, fields.get("suites", "").split()))
    return found


def debian_mirrors(
    sources: list[tuple[str, list[str]]], codename: str
) -> tuple[str | None, str | None]:
    """The mirror serving ``codename`` and the one serving ``codename-security``."""
    main = security = None
    for uri, suites in sources:
        if main is None and {codename, f"{codename}-updates"} & set(suites):
            main = uri
        if security is None and f"{codename}-security" in suites:
            security = uri
    return main, security


def pip_options() -> dict[str, tuple[str, ...]]:
    """pip's effective options for ``install``: its configuration files, then ``PIP_*``."""
    listed = subprocess.run(
        [sys.executable, "-m", "pip", "config", "list"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    options: dict[str, tuple[str, ...]] = {}
    for line in listed.splitlines():
        key, _, value = line.partition("=")
        section, _, option = key.partition(".")
        if section in ("global", "install") and option:
            options[option] = _values(option, value.strip().strip("'\""))
    for variable, value in os.environ.items():
        if variable.startswith("PIP_") and value:
            option = variable[4:].lower().replace("_", "-")
            options[option] = _values(option, value)
    return options


def _values(option: str, value: str) -> tuple[str, ...]:
    return tuple(value.split()) if option in LIST_OPTIONS else (value,)


def _ca_bundle(pip_cert: tuple[str, ...]) -> Path | None:
    for candidate in (
        *pip_cert,
        os.environ.get("REQUESTS_CA_BUNDLE", ""),
        os.environ.get("SSL_CERT_FILE", ""),
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate)
    return None
