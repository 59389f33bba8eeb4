"""The images a machine builds for itself, in order: what its build settings name first.

Where the build settings name a locally bootstrapped Debian base
(:mod:`trainjobs.images.bootstrap`) or the kubectl stand-in
(:mod:`trainjobs.images.kubectl_stand_in`), those are made first (once); then the declared
images, each unless a current one exists (:func:`trainjobs.images.builder.ensure`).
"""

from __future__ import annotations

from trainjobs.engines.engine import Engine
from trainjobs.images import bootstrap, kubectl_stand_in
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.builder import Say, ensure
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.declarations import Image
from trainjobs.images.image_parts import DebianBase


def prepare(engine: Engine, settings: BuildSettings, say: Say) -> None:
    """Make the local images the settings start builds from, if they name any."""
    for image in _debian_releases():
        if settings.debian_base_image == bootstrap.bootstrap_reference(image):
            bootstrap.bootstrap(engine, image, settings, say)
    if settings.kubectl_image == kubectl_stand_in.REFERENCE:
        kubectl_stand_in.ensure(engine, settings, say)


def build_images(
    engine: Engine, images: list[Image], settings: BuildSettings, say: Say, rebuild: bool = False
) -> list[str]:
    """Build each image unless current; the references built."""
    prepare(engine, settings, say)
    return [image.reference for image in images if ensure(engine, image, settings, say, rebuild)]


def _debian_releases() -> list[DebianBase]:
    return sorted({image.debian for image in IMAGES.values() if image.debian is not None}, key=str)
