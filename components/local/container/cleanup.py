"""What killed container runs left on the engine: found by their labels, removed.

Every object of a container run carries :data:`~components.engines.engine.OWNER_LABEL`; one
whose owner process is gone (:func:`~components.engines.owners.owner_alive`) belongs to a run
that was killed before its own clean-up, and nothing else will remove it. Runs still going
(this machine's other runs) are left alone.
"""

from __future__ import annotations

from components.engines.engine import OWNER_LABEL, Engine
from components.engines.owners import owner_alive


def remove_stale(engine: Engine) -> list[str]:
    """Remove the pods (with their containers), containers and networks of dead owners."""
    stale = [
        item
        for item in engine.labelled(OWNER_LABEL)
        if not owner_alive(item.labels.get(OWNER_LABEL, ""))
    ]
    pods = [item.name for item in stale if item.kind == "pod"]
    engine.remove_pods(pods, {})
    engine.remove_containers([item.name for item in stale if item.kind == "container"])
    engine.remove_networks([item.name for item in stale if item.kind == "network"])
    return [f"{item.kind} {item.name}" for item in stale]
