"""The engine configuration this project keeps for itself, under ``out/engine/``.

Debian's podman 4.3 needs two defaults changed on machines like the CI's: the OCI runtime
(``crun`` fails on cgroups in hybrid mode; ``runc`` works) with the ``cgroupfs`` manager
(there is no systemd to delegate cgroups to), and the default ulimits (``nofile`` and
``nproc`` of 1048576 exceed the hard limits a container may be given there). Those go into
the project's own ``containers.conf``, which every podman call trainjobs makes reads through
``CONTAINERS_CONF``: the host's ``/etc/containers`` is never written. ``make engine`` writes it;
without it podman runs with its own defaults.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainjobs.images.build_context import REPO_ROOT

ENGINE_DIR = REPO_ROOT / "out" / "engine"
"""The project's engine configuration: containers.conf and the saved build settings."""
CONTAINERS_CONF = ENGINE_DIR / "containers.conf"
CERTS_DIR = ENGINE_DIR / "certs.d"
"""Registries' CA certificates, one directory per registry: ``certs.d/<host[:port]>/ca.crt``,
the layout of containers/image's ``/etc/containers/certs.d`` (containers-certs.d(5)), given to
each pull and push as ``--cert-dir``, so a private registry's CA is trusted by this project's
engine calls only, never through the machine's /etc."""
NOFILE = "20000:20000"
NPROC = "32768:32768"

CONTAINERS_CONF_TEXT = f"""\
# Written by `make engine` (trainjobs images configure): podman settings for this project only.
# CONTAINERS_CONF points podman here when trainjobs calls it; /etc/containers is untouched.
[containers]
# Below the machine's hard limits (podman's default 1048576 exceeds them on CI machines).
default_ulimits = ["nofile={NOFILE}", "nproc={NPROC}"]

[engine]
# crun fails on cgroups in hybrid (v1) mode; runc with cgroupfs works without systemd.
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
"""


def write_containers_conf(path: Path = CONTAINERS_CONF) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(CONTAINERS_CONF_TEXT, encoding="utf-8")
    return path


def engine_environment(containers_conf: Path = CONTAINERS_CONF) -> dict[str, str]:
    """The environment engine commands run with: this process's, plus the project's
    containers.conf when it exists (an explicit CONTAINERS_CONF of the caller wins)."""
    env = dict(os.environ)
    if "CONTAINERS_CONF" not in env and containers_conf.is_file():
        env["CONTAINERS_CONF"] = str(containers_conf)
    return env


def registry_cert_dir(registry: str, certs_dir: Path = CERTS_DIR) -> Path | None:
    """The directory of ``registry``'s CA certificates (``host[:port]``), if the project has
    one."""
    directory = certs_dir / registry
    return directory if directory.is_dir() else None
