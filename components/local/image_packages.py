"""An image's pinned Python packages, looked up where its containers run locally.

A local run maps each declared image to a Python environment on this machine
(:mod:`trainjobs.images.catalogue`); before any pod starts, every package the image pins must
be installed there at its pinned version, or the run is refused with the make target that
installs it.
"""

from __future__ import annotations

import importlib.metadata
from typing import Any

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from trainjobs.core.errors import UserError
from trainjobs.core.extras import source_checkout
from trainjobs.images import catalogue
from trainjobs.images.declarations import Image
from trainjobs.local.cluster import ClusterPlan, PodPlan
from trainjobs.local.image_paths import check_image_paths


def check_images(plan: ClusterPlan, aliases: dict[str, str]) -> None:
    """Every image must be declared, provide the paths its commands name
    (:mod:`trainjobs.local.image_paths`), and have its Python packages installed where pods
    run.

    Only the pinned names are looked up, each once (reading every installed distribution's
    metadata cost more than building the graph)."""
    versions: dict[tuple[str | None, str], str | None] = {}
    for pod in plan.pods:
        for group, index, container in _all_containers(pod):
            image = catalogue.resolve(container["image"], aliases)
            for requirement in image.python_packages:
                name, pinned = requirement.split("==")  # declarations pin 'name==version'
                key = (image.local_environment, canonicalize_name(name))
                if key not in versions:
                    versions[key] = _installed_version(image, key[1])
                version = versions[key]
                if version is None or not pin_matches(pinned, version):
                    have = f"has {version}" if version else "does not have it"
                    raise UserError(
                        f"image {image.reference} needs {requirement} in the Python that runs "
                        f"its containers locally ({image.local_bin}), which {have}: "
                        f"{_setup_hint(image)}"
                    )
            # After its packages: a missing package explains a missing script too.
            check_image_paths(pod, group, index, container, image)


def _setup_hint(image: Image) -> str:
    """The checkout's make target, or (installed from a wheel) the packages to install."""
    if source_checkout() is not None:
        return f"run `{image.local_setup}`"
    return (
        f"install its pins ({' '.join(image.python_packages)}) into that Python, or run the job "
        "with `--runtime container`"
    )


def pin_matches(pinned: str, installed: str) -> bool:
    """Whether version ``installed`` satisfies ``==pinned`` by PEP 440: release segments
    compare zero-padded, and a pin without a local label also accepts a local build
    (``==2.13.0`` accepts ``2.13.0+cpu``). packaging's Requirement and SpecifierSet say the
    same, but importing them cost `trainjobs run` about 0.02 s; an image's pins are always
    ``name==version`` (:mod:`trainjobs.images.declarations`)."""
    try:
        want, have = Version(pinned), Version(installed)
    except InvalidVersion:
        return False
    return have == want if want.local else Version(have.public) == want


def _installed_version(image: Image, name: str) -> str | None:
    """The version of distribution ``name`` in the environment that runs ``image`` locally."""
    if image.local_environment is None:
        found = importlib.metadata.distributions(name=name)
    else:
        sites = [str(p) for p in image.local_bin.parent.glob("lib/python*/site-packages")]
        found = importlib.metadata.distributions(name=name, path=sites)
    return next((d.version for d in found), None)


def _all_containers(pod: PodPlan) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (group, index, container)
        for group in ("initContainers", "containers")
        for index, container in enumerate(pod.spec.get(group) or [])
    ]
