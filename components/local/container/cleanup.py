"""What killed container runs left on the engine: their pods and networks, removed.

A container run records each engine pod and network in its ledger before creating it
(:mod:`trainjobs.local.ledger`); the cleaners here remove what a dead run's ledger lists,
as ``trainjobs clean`` and every run's start do for all of a killed run's resources.

Every object also carries :data:`~trainjobs.engines.engine.OWNER_LABEL`: the ledgers live on
a tmpfs that a reboot empties, while the engine keeps stopped pods and networks, so
:func:`remove_stale` also removes any object whose owner process is gone (another boot's
owner is). Runs still going (this machine's other runs) are left alone either way.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from trainjobs.engines.engine import OWNER_LABEL, RUN_LABEL, Engine, EngineError
from trainjobs.engines.owners import owner_alive
from trainjobs.engines.registry import adapter
from trainjobs.local.container.volumes import remove_pod_volumes
from trainjobs.local.ledger import resource_kind


def remove_stale(engine: Engine) -> list[str]:
    """Remove the pods (with their containers), containers and networks of dead owners."""
    stale = [
        item
        for item in engine.labelled(OWNER_LABEL)
        if not owner_alive(item.labels.get(OWNER_LABEL, ""))
    ]
    engine.remove_pods([item.name for item in stale if item.kind == "pod"])
    engine.remove_containers([item.name for item in stale if item.kind == "container"])
    engine.remove_networks([item.name for item in stale if item.kind == "network"])
    return [f"{item.kind} {item.name}" for item in stale]


def _remove_recorded(
    entry: dict[str, Any], kind: str, remove: Callable[[Engine, Sequence[str]], None]
) -> list[str]:
    """The ledger entry's ``kind`` object, removed if the engine still has it; what was.
    Raises when the engine still has it after removal (it says so only in its exit code)."""
    engine = adapter(str(entry["engine"]), str(entry["executable"]))
    name = str(entry["name"])

    def present() -> bool:
        found = engine.labelled(f"{RUN_LABEL}={entry['run']}")
        return any(item.kind == kind and item.name == name for item in found)

    if not present():
        return []
    remove(engine, [name])
    if present():
        raise EngineError(f"{engine.name} {kind} {name} is still there after its removal")
    return [f"{engine.name} {kind} {name}"]


@resource_kind("engine-pod")
def _remove_pod(entry: dict[str, Any]) -> list[str]:
    """A dead run's pod and every container in it."""
    return _remove_recorded(entry, "pod", lambda engine, names: engine.remove_pods(names))


@resource_kind("engine-network")
def _remove_network(entry: dict[str, Any]) -> list[str]:
    """A dead run's network (its pods went first: they were recorded after it)."""
    return _remove_recorded(entry, "network", lambda engine, names: engine.remove_networks(names))


@resource_kind("container-pod-volumes")
def _remove_volumes(entry: dict[str, Any]) -> list[str]:
    """A dead run's subPath and emptyDir mounts and its emptyDirs' contents (its pod went
    first: it was recorded after them)."""
    directory = Path(entry["directory"])
    empty_dirs = [Path(path) for path in entry.get("emptyDirs") or []]
    present = [path for path in empty_dirs if path.exists()]
    left = remove_pod_volumes(directory, empty_dirs)
    if left:
        raise OSError(f"left {', '.join(left)}")
    return [f"emptyDir {path}" for path in present]
