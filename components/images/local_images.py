"""The images a machine builds for itself, in order: what its build settings name first.

Where the build settings name a locally bootstrapped Debian base
(:mod:`trainjobs.images.bootstrap`) or the kubectl stand-in
(:mod:`trainjobs.images.kubectl_stand_in`), those are made first (once); then the declared
images, each unless a current one exists (:func:`trainjobs.images.builder.ensure`).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

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
    engine: Engine,
    images: list[Image],
    settings: BuildSettings,
    say: Say,
    rebuild: bool = False,
    jobs: int = 1,
) -> list[str]:
    """Build each image unless current, up to ``jobs`` at once; the references built.

    The first image is built alone: the images share their first layers (Python, the
    virtualenv), which builds starting together would each make instead of reusing."""
    prepare(engine, settings, say)

    def made(image: Image) -> bool:
        return ensure(engine, image, settings, say, rebuild)

    first, rest = images[:1], images[1:]
    done = [made(image) for image in first]
    if jobs > 1 and len(rest) > 1:
        # Every build runs to its end; the first failure is raised after them all.
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            futures = [pool.submit(made, image) for image in rest]
        done += [future.result() for future in futures]
    else:
        done += [made(image) for image in rest]
    return [image.reference for image, built in zip(images, done, strict=True) if built]


def _debian_releases() -> list[DebianBase]:
    return sorted({image.debian for image in IMAGES.values() if image.debian is not None}, key=str)
