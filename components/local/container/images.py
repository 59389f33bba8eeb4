"""Which local image each container of a container run runs, built first when trainjobs can.

- An image trainjobs builds (a declaration with a recipe, e.g. ``trainjobs/chainermn:7.8.1``)
  runs as built here, tagged as the job names it; missing or built from an older recipe, it
  is built first, with the project's saved build settings.
- The kubectl image (``registry.k8s.io/kubectl``) runs as the local kubectl stand-in image:
  there is no API server here for the real kubectl to talk to.
- Any other image (``myorg/train:3``, ``registry.example:5000/team/train@sha256:...``) is
  pulled as the kubelet would pull it, per ``imagePullPolicy`` with the pods'
  ``imagePullSecrets`` (:mod:`.pull`).

``--map-image REF=OTHER`` runs OTHER, a local image never pulled, wherever the job names REF.
Pods that cannot be scheduled here (GPU pods) never start, so their images are not needed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from trainjobs.core.errors import UserError
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE
from trainjobs.engines.engine import Engine
from trainjobs.images import kubectl_stand_in
from trainjobs.images.builder import Say, ensure, saved_settings
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.local_images import prepare
from trainjobs.images.references import reference_problem
from trainjobs.local.cluster import ClusterPlan
from trainjobs.local.container.pull import ensure_present, wanted_images


def local_images(
    plan: ClusterPlan,
    engine: Engine,
    aliases: dict[str, str],
    say: Say,
    pull_secrets: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, str]:
    """The job's image references -> the local images the engine runs for them
    (``pull_secrets``: the image pull Secrets beside the job, by name)."""
    check_references(plan, aliases)
    wanted = {
        container["image"]
        for pod in plan.pods
        if not pod.gpu_request()
        for container in [*(pod.spec.get("initContainers") or []), *pod.spec["containers"]]
    }
    settings = saved_settings()
    # Everything the checks below may ask about, asked at once (each image once per run).
    targets = {aliases.get(reference, reference) for reference in wanted}
    if DEFAULT_KUBECTL_IMAGE in targets:
        targets.add(kubectl_stand_in.REFERENCE)
    named = (settings.debian_base_image, settings.kubectl_image)
    engine.inspect_images(
        (targets | {name for name in named if name is not None}) - {DEFAULT_KUBECTL_IMAGE}
    )
    resolved: dict[str, str] = {}
    pulls = wanted_images(plan, wanted - set(aliases))
    prepared = False
    for reference in sorted(wanted):
        target = aliases.get(reference, reference)
        declared = IMAGES.get(target)
        if target == DEFAULT_KUBECTL_IMAGE or (declared is not None and declared.build):
            if not prepared:
                prepare(engine, settings, say)
                prepared = True
            if target == DEFAULT_KUBECTL_IMAGE:
                resolved[reference] = kubectl_stand_in.ensure(engine, settings, say)
                continue
            assert declared is not None
            ensure(engine, declared, settings, say)
            resolved[reference] = target
        elif reference in pulls:
            ensure_present(engine, pulls[reference], pull_secrets or {}, plan.namespace, say)
            resolved[reference] = target
        elif engine.image_exists(target):
            resolved[reference] = target
        else:
            alias = f" (--map-image {reference}={target})" if target != reference else ""
            raise UserError(
                f"image {target!r}{alias} is not in {engine.name}'s local storage and trainjobs "
                f"does not build it: build or pull it first (`{engine.name} pull {target}`), or "
                "run it as another local image with --map-image REF=LOCAL"
            )
    return resolved


def check_references(plan: ClusterPlan, aliases: dict[str, str]) -> None:
    """Only valid image references reach the engine (never ``--help``, an option): the
    kubelet would report InvalidImageName for the rest."""
    named = [
        (f"{pod.owner} pod template spec.{group}[{index}].image", container["image"])
        for pod in plan.pods
        for group in ("initContainers", "containers")
        for index, container in enumerate(pod.spec.get(group) or [])
    ]
    named += [(f"--map-image {ref}={target}", target) for ref, target in sorted(aliases.items())]
    for where, reference in named:
        problem = reference_problem(reference)
        if problem is not None:
            raise UserError(f"{where}: {reference!r}: {problem}")
