"""Pod templates inside job specs: the checks trainjobs relies on, the main container, env."""

from __future__ import annotations

import copy
from typing import Any

from components.core.errors import Problem
from components.core.graph import Manifest


def with_env(container: Manifest, env: list[Manifest]) -> None:
    """Append env vars the user has not set: an explicit user value is an intended override."""
    existing = container.setdefault("env", [])
    taken = {item.get("name") for item in existing}
    existing.extend(dict(item) for item in env if item["name"] not in taken)


def replace_env(container: Manifest, env: list[Manifest]) -> None:
    """Set env vars the way Kubeflow's operator does: its values win. The operator appends
    them after the user's (the last definition of a name wins in the kubelet); here the
    user's entry of the same name is dropped instead, so that no name appears twice (server-
    side apply, which pulumi-kubernetes uses, keys env entries by name)."""
    if not env:
        return
    ours = {item["name"] for item in env}
    kept = [item for item in container.get("env") or [] if item.get("name") not in ours]
    container["env"] = [*kept, *(dict(item) for item in env)]


GPU_RESOURCE = "nvidia.com/gpu"


# Volume names and env vars trainjobs adds; a user template must not reuse the volume names.
RESERVED_VOLUME_PREFIX = "trainjobs-"


PodTemplate = dict[str, Any]


def check_pod_template(
    template: PodTemplate,
    path: str,
    problems: list[Problem],
    default_container: str,
) -> tuple[PodTemplate, str]:
    """Check the parts of a PodTemplate trainjobs relies on and name a lone unnamed container.

    Returns a deep copy (the caller's spec is never mutated) and the main container's name:
    the one named ``default_container`` if any, else the first.
    """
    template = copy.deepcopy(template)
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        problems.append(Problem(f"{path}.spec", "a pod spec with 'containers' is required"))
        return template, default_container
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(
            Problem(f"{path}.spec.containers", "at least one container with an image is required")
        )
        return template, default_container
    if len(containers) == 1 and isinstance(containers[0], dict) and not containers[0].get("name"):
        containers[0]["name"] = default_container
    for index, container in enumerate(containers):
        where = f"{path}.spec.containers[{index}]"
        if not isinstance(container, dict):
            problems.append(Problem(where, "must be a mapping with 'name' and 'image'"))
            continue
        if not container.get("name"):
            problems.append(
                Problem(f"{where}.name", "required when a pod has more than one container")
            )
        if not container.get("image"):
            problems.append(Problem(f"{where}.image", "required: the container image to run"))
    for index, volume in enumerate(pod_spec.get("volumes") or []):
        name = volume.get("name", "") if isinstance(volume, dict) else ""
        if name.startswith(RESERVED_VOLUME_PREFIX):
            problems.append(
                Problem(
                    f"{path}.spec.volumes[{index}].name",
                    f"{name!r} uses the prefix {RESERVED_VOLUME_PREFIX!r} reserved for "
                    "trainjobs' own volumes; rename it",
                )
            )
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    main = default_container if default_container in names else names[0] if names else ""
    return template, main or default_container


def main_container(template: PodTemplate, name: str) -> dict[str, Any]:
    """The container trainjobs wires into (see :func:`check_pod_template`)."""
    return next(c for c in template["spec"]["containers"] if c.get("name") == name)


def pod_containers(pod: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (group, index, container)
        for group in ("initContainers", "containers", "ephemeralContainers")
        for index, container in enumerate(pod.get(group) or [])
    ]
