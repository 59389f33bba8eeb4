"""Building images on this machine with its container engine, tagged as jobs name them.

``trainjobs images build`` and container runs (for declared images they miss) build through
here. A built image carries its recipe's hash (:data:`~trainjobs.engines.engine.RECIPE_LABEL`,
:func:`~trainjobs.images.dockerfiles.recipe_hash`): an image whose label matches is current
and is not built again; one whose recipe changed is. The engine caches layers, and the CPU
images share their first ones (Python, the virtualenv, the build tools), so later builds reuse
them. Progress: one line per build step on the way, the engine's whole output in a log file
under ``out/engine/build-logs/``, and its last lines when a build fails.
"""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import RECIPE_LABEL, BuildRequest, Engine, EngineError
from trainjobs.engines.settings import ENGINE_DIR
from trainjobs.images.build_context import IMAGES_DIR
from trainjobs.images.build_settings import BuildInputs, BuildSettings
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.declarations import Image
from trainjobs.images.dockerfiles import dockerfile_path, recipe_hash

LOG_DIR = ENGINE_DIR / "build-logs"
# A step starting: podman's "[2/2] STEP 3/12: RUN ...", BuildKit's "#7 [2/9] RUN ...".
_STEP = re.compile(r"(\[\d+/\d+\] )?STEP \d+/\d+: |#\d+ \[")
SETTINGS_FILE = ENGINE_DIR / "build-settings.json"
"""The project's saved build settings (`trainjobs images configure`), used by every build."""

Say = Callable[[str], None]


def saved_settings() -> BuildSettings:
    """The project's saved build settings, or the public sources when none were saved."""
    if not SETTINGS_FILE.is_file():
        return BuildSettings()
    return BuildSettings.from_json(SETTINGS_FILE.read_text(encoding="utf-8"), str(SETTINGS_FILE))


def cpu_images() -> list[Image]:
    """The buildable images without a CUDA base: the ones the examples run."""
    return [image for image in IMAGES.values() if image.build is not None and image.cuda is None]


def buildable(reference: str) -> Image:
    image = IMAGES.get(reference)
    if image is None or image.build is None:
        known = ", ".join(sorted(r for r, i in IMAGES.items() if i.build is not None))
        raise UserError(f"image {reference!r} is not built by trainjobs (it builds: {known})")
    return image


def current(engine: Engine, reference: str, recipe: str) -> bool:
    """The image exists locally and was built from this recipe."""
    return engine.image_exists(reference) and engine.image_label(reference, RECIPE_LABEL) == recipe


@dataclass(frozen=True)
class Recipe:
    """Something to build: its Dockerfile, context and tag."""

    tag: str
    dockerfile: Path
    context: Path
    hash: str


def declared_recipe(image: Image) -> Recipe:
    return Recipe(
        tag=image.reference,
        dockerfile=IMAGES_DIR / dockerfile_path(image),
        context=IMAGES_DIR,
        hash=recipe_hash(image),
    )


def ensure(
    engine: Engine,
    image: Image,
    settings: BuildSettings,
    say: Say,
    rebuild: bool = False,
) -> bool:
    """Build ``image`` unless a current one exists; whether it was built."""
    recipe = declared_recipe(image)
    if not rebuild and current(engine, recipe.tag, recipe.hash):
        say(f"{recipe.tag}: up to date (recipe {recipe.hash[:12]})")
        return False
    with tempfile.TemporaryDirectory(prefix="trainjobs-build-") as workdir:
        inputs = settings.for_build(image, Path(workdir))
        build(engine, recipe, inputs, say)
    return True


def build(engine: Engine, recipe: Recipe, inputs: BuildInputs, say: Say) -> None:
    """One build, with progress, labelled with its recipe; EngineError names the log."""
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log_path = LOG_DIR / (recipe.tag.replace("/", "_").replace(":", "_") + ".log")
    started = time.monotonic()
    dockerfile = recipe.dockerfile.relative_to(recipe.context.parent)
    say(f"{recipe.tag}: building with {engine.name} ({dockerfile})")
    tail: list[str] = []
    with log_path.open("w", encoding="utf-8") as log:

        def progress(line: str) -> None:
            tail.append(line)
            del tail[:-20]
            log.write(line + "\n")
            if _STEP.match(line):
                say(f"{recipe.tag}: {line[:100]}")

        request = BuildRequest(
            dockerfile=recipe.dockerfile,
            context=recipe.context,
            tag=recipe.tag,
            build_args=inputs.build_args,
            secrets=inputs.secrets,
            volumes=inputs.volumes,
            labels={RECIPE_LABEL: recipe.hash},
        )
        try:
            engine.build(request, progress)
        except EngineError as error:
            for line in tail:
                say(f"{recipe.tag}: | {line}")
            raise EngineError(f"building {recipe.tag} failed: {error} (log: {log_path})") from error
        finally:
            # Whatever the build left, what the engine object knew of images is stale.
            engine.forget_images()
    say(f"{recipe.tag}: built in {time.monotonic() - started:.0f}s (log: {log_path})")
