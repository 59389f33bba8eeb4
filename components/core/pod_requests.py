"""What one pod requests, as the scheduler counts it: Kubernetes' ``PodRequests``.

kubernetes ``staging/src/k8s.io/component-helpers/resource/helpers.go`` (``PodRequests``,
``AggregateContainerRequests``; k8s.io/component-helpers v0.36, the one Trainer v2.3.0 builds
with): the containers' requests plus those of the restartable init containers (sidecars),
or, where larger, what an init container needs while it runs (its own requests plus the
sidecars started before it); then the pod-level requests (``spec.resources``) in place of the
containers' for CPU, memory and huge pages; then the RuntimeClass ``overhead``. Only requests
count: a limit is not read as a request here (the API server's defaulting does that, later).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from trainjobs.core import quantity

Requests = dict[str, Decimal]


def pod_requests(pod_spec: dict[str, Any]) -> Requests:
    """The pod's requests per resource."""
    total: Requests = {}
    for container in pod_spec.get("containers") or []:
        _add(total, _requests(container))
    sidecars: Requests = {}
    init_peak: Requests = {}
    for container in pod_spec.get("initContainers") or []:
        asked = _requests(container)
        if container.get("restartPolicy") == "Always":
            _add(total, asked)
            _add(sidecars, asked)
            running = dict(sidecars)
        else:
            running = dict(asked)
            _add(running, sidecars)
        _max(init_peak, running)
    _max(total, init_peak)
    pod_level = ((pod_spec.get("resources") or {}).get("requests")) or {}
    for name, amount in pod_level.items():
        if name in ("cpu", "memory") or name.startswith("hugepages-"):
            total[name] = quantity.parse(amount)
    _add(total, {name: quantity.parse(v) for name, v in (pod_spec.get("overhead") or {}).items()})
    return total


def _requests(container: dict[str, Any]) -> Requests:
    asked = (container.get("resources") or {}).get("requests") or {}
    return {name: quantity.parse(amount) for name, amount in asked.items()}


def _add(into: Requests, more: Requests) -> None:
    for name, amount in more.items():
        into[name] = into.get(name, Decimal(0)) + amount


def _max(into: Requests, other: Requests) -> None:
    for name, amount in other.items():
        if name not in into or amount > into[name]:
            into[name] = amount
