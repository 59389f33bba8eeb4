"""Pod templates inside job specs: their checks, the main container, env."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from trainjobs.core.errors import Problem
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_rules import check_template_rules
from trainjobs.core.pod_schema import check_template_types


def default_field(mapping: Manifest, key: str, default: Any) -> Any:
    """``mapping[key]``, set to ``default`` first if it is missing or null: the API server
    reads a null field as an unset one (a template may say ``env:`` with nothing after it)."""
    if mapping.get(key) is None:
        mapping[key] = default
    return mapping[key]


def with_env(container: Manifest, env: list[Manifest]) -> None:
    """Append env vars the user has not set: an explicit user value is an intended override."""
    existing = default_field(container, "env", [])
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
    warnings: list[Problem],
    default_container: str,
    provided: Provided | None = None,
) -> tuple[PodTemplate, str]:
    """Check a PodTemplate as the API server would and name a lone unnamed container.

    Types come from the official schema (:mod:`~trainjobs.core.pod_schema`), then the API
    server's rules (:mod:`~trainjobs.core.pod_rules`), then what trainjobs itself relies
    on; each problem once, at its field path. Returns a deep copy (the caller's spec is never
    mutated) and the main container's name: the one named ``default_container`` if any, else
    the first. ``provided``: the volumes a controller appends to the pod, checked with the
    template's own (its mounts may name them), left out of the copy returned.
    """
    template = copy.deepcopy(template)
    own: list[Problem] = []
    main = _check_containers(template, path, own, default_container)
    if main is None:
        problems.extend(own)
        return template, default_container
    checked = template
    if provided is not None and provided.volumes:
        checked = copy.deepcopy(template)
        pod = checked["spec"]
        pod["volumes"] = [*(pod.get("volumes") or []), *provided.volumes]
    types: list[Problem] = []
    rules: list[Problem] = []
    check_template_types(checked, path, types, warnings)
    check_template_rules(checked, path, rules)
    if checked is not template and provided is not None:
        rules = _named_provider(rules, checked, path, provided)
    problems.extend(_each_place_once(own, types, rules))
    return template, main


@dataclass(frozen=True)
class Provided:
    """Volumes a controller appends to a pod it makes from a template, and who it is."""

    by: str
    volumes: tuple[dict[str, Any], ...]


def _named_provider(
    rules: list[Problem], checked: PodTemplate, path: str, provided: Provided
) -> list[Problem]:
    """A clash with a provided volume is reported at the template's own volume of that name,
    which is the one to rename."""
    volumes = checked["spec"]["volumes"]
    first = len(volumes) - len(provided.volumes)
    own = {v.get("name"): i for i, v in reversed(list(enumerate(volumes[:first])))}
    found = []
    for problem in rules:
        index = next(
            (
                i
                for i in range(first, len(volumes))
                if problem.path == f"{path}.spec.volumes[{i}].name"
            ),
            None,
        )
        name = volumes[index].get("name") if index is not None else None
        if index is None or name not in own:
            found.append(problem)
            continue
        found.append(
            Problem(
                f"{path}.spec.volumes[{own[name]}].name",
                f"{problem.message}: {provided.by} adds a volume of that name to the pod; "
                "rename yours",
            )
        )
    return found


def check_final_template(
    template: PodTemplate, path: str, problems: list[Problem], warnings: list[Problem]
) -> None:
    """Check a pod template as it will be created, in place: its schema (unknown fields are
    removed, a warning each) and the API server's rules, each problem once."""
    types: list[Problem] = []
    rules: list[Problem] = []
    check_template_types(template, path, types, warnings)
    check_template_rules(template, path, rules)
    problems.extend(_each_place_once(types, rules))


def _check_containers(
    template: PodTemplate, path: str, problems: list[Problem], default_container: str
) -> str | None:
    """What trainjobs needs: a pod spec with named containers that have images. Names a lone
    unnamed container ``default_container`` (chainer-operator's default). Returns the main
    container's name, or None when there is no pod spec or no container to check further."""
    pod_spec = template.get("spec")
    if not isinstance(pod_spec, dict):
        problems.append(Problem(f"{path}.spec", "a pod spec with 'containers' is required"))
        return None
    containers = pod_spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.append(
            Problem(f"{path}.spec.containers", "at least one container with an image is required")
        )
        return None
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
        name = volume.get("name") if isinstance(volume, dict) else None
        if isinstance(name, str) and name.startswith(RESERVED_VOLUME_PREFIX):
            problems.append(
                Problem(
                    f"{path}.spec.volumes[{index}].name",
                    f"{name!r} uses the prefix {RESERVED_VOLUME_PREFIX!r} reserved for "
                    "trainjobs' own volumes; rename it",
                )
            )
    names = [c.get("name") for c in containers if isinstance(c, dict)]
    main = default_container if default_container in names else names[0] if names else ""
    return str(main or default_container)


def _each_place_once(*sources: list[Problem]) -> list[Problem]:
    """Problems from several checks, earlier sources first; a later source's problem at a
    field (or inside a field) that an earlier source already reported is the same mistake."""
    kept: list[Problem] = []
    for source in sources:
        reported = [problem.path for problem in kept]
        kept += [p for p in source if not any(_within(p.path, done) for done in reported)]
    return kept


def _within(path: str, other: str) -> bool:
    return path == other or path.startswith((f"{other}.", f"{other}["))


def main_container(template: PodTemplate, name: str) -> dict[str, Any]:
    """The container trainjobs wires into (see :func:`check_pod_template`)."""
    return next(c for c in template["spec"]["containers"] if c.get("name") == name)


def pod_containers(pod: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (group, index, container)
        for group in ("initContainers", "containers", "ephemeralContainers")
        for index, container in enumerate(pod.get(group) or [])
    ]
