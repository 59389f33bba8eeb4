"""What killed container runs left on the engine: their pods and networks, removed.

A container run records each engine pod and network in its ledger before creating it
(:mod:`components.local.ledger`); the cleaners here remove what a dead run's ledger lists,
as ``trainjobs clean`` and every run's start do for all of a killed run's resources.

Every object also carries :data:`~components.engines.engine.OWNER_LABEL`: the ledgers live on
a tmpfs that a reboot empties, while the engine keeps stopped pods and networks, so
:func:`remove_stale` also removes any object whose owner process is gone (another boot's
owner is). Runs still going (this machine's other runs) are left alone either way.
"""

from __future__ import annotations

from typing import Any

from components.engines.engine import OWNER_LABEL, RUN_LABEL, Engine, adapter
from components.engines.owners import owner_alive
from components.local.ledger import resource_kind


def remove_stale(engine: Engine) -> list[str]:
    """Remove the pods (with their containers), containers and networks of dead owners."""
    stale = [
        item
        for item in engine.labelled(OWNER_LABEL)
        if not owner_alive(item.labels.get(OWNER_LABEL, ""))
    ]
    pods = [item.name for item in stale if item.kind == "pod"]
    engine.remove_pods(pods)
    engine.remove_containers([item.name for item in stale if item.kind == "container"])
    engine.remove_networks([item.name for item in stale if item.kind == "network"])
    return [f"{item.kind} {item.name}" for item in stale]


def _existing(entry: dict[str, Any], kind: str) -> tuple[Engine, bool]:
    engine = adapter(str(entry["engine"]), str(entry["executable"]))
    found = engine.labelled(f"{RUN_LABEL}={entry['run']}")
    return engine, any(item.kind == kind and item.name == entry["name"] for item in found)


@resource_kind("engine-pod")
def _remove_pod(entry: dict[str, Any]) -> list[str]:
    """A dead run's pod and every container in it."""
    engine, exists = _existing(entry, "pod")
    if not exists:
        return []
    engine.remove_pods([str(entry["name"])])
    return [f"{engine.name} pod {entry['name']}"]


@resource_kind("engine-network")
def _remove_network(entry: dict[str, Any]) -> list[str]:
    """A dead run's network (its pods went first: they were recorded after it)."""
    engine, exists = _existing(entry, "network")
    if not exists:
        return []
    engine.remove_networks([str(entry["name"])])
    return [f"{engine.name} network {entry['name']}"]
