"""Finding a container engine: the registry of adapters, podman first, then docker.

The dispatcher knows the interface (:class:`~trainjobs.engines.engine.Engine`) and each
adapter; no adapter imports it, so the engines form no import cycle.
"""

from __future__ import annotations

import shutil

from trainjobs.core.errors import UserError
from trainjobs.engines import ENGINES
from trainjobs.engines.docker import Docker
from trainjobs.engines.engine import INSTALL_HINT, Engine, EngineUnavailable
from trainjobs.engines.podman import Podman


def _adapters() -> dict[str, type[Engine]]:
    """Each engine's adapter class, in :data:`ENGINES` order."""
    return {"podman": Podman, "docker": Docker}


def adapter(name: str, executable: str) -> Engine:
    """The adapter of engine ``name`` for its client at ``executable``."""
    return _adapters()[name](executable)


def available_engines(wanted: str | None = None) -> list[Engine]:
    """The engines that answer here (``wanted`` only, if given), podman first."""
    if wanted is not None and wanted not in ENGINES:
        raise UserError(f"--engine {wanted!r}: choose one of {', '.join(ENGINES)}")
    found = []
    for name, engine in _adapters().items():
        executable = shutil.which(name)
        if wanted in (None, name) and executable is not None and engine.usable(executable):
            found.append(engine(executable))
    return found


def find_engine(wanted: str | None = None) -> Engine:
    """The engine to use: ``wanted``, else podman, else docker, whichever answers."""
    found = available_engines(wanted)
    if found:
        return found[0]
    if wanted:
        raise EngineUnavailable(
            f"--engine {wanted}: {wanted} is not installed or does not answer here; " + INSTALL_HINT
        )
    raise EngineUnavailable(f"no container engine (podman or docker) answers here; {INSTALL_HINT}")
