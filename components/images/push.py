"""Pushing built images to a registry and recording the digests it stored.

``trainjobs images build --push REGISTRY`` pushes each image as ``REGISTRY/<reference>`` and
records ``<reference> -> REGISTRY/<repository>@sha256:...`` in a pins file, the shape of
the stack's ``trainjobs:images`` (:mod:`trainjobs.images.pinning`): ``trainjobs run
--image-pins`` and stacks then run exactly what was pushed, whatever a tag points at later.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import Engine, RegistryAccess
from trainjobs.engines.settings import registry_cert_dir
from trainjobs.images.builder import Say
from trainjobs.images.declarations import Image
from trainjobs.images.references import reference_problem, registry_host


def check_registry(registry: str) -> str:
    """``REGISTRY`` of ``--push``: a registry host (``host[:port]``), optionally with a path
    (``registry.example/team``), as the first component of a reference."""
    candidate = f"{registry}/image:tag"
    if (
        reference_problem(candidate) is not None
        or registry_host(candidate) != registry.split("/", 1)[0]
    ):
        raise UserError(
            f"--push {registry!r}: name a registry as HOST[:PORT][/PATH] (a host holds a dot or "
            "a port, or is localhost), e.g. registry.example:5000/team"
        )
    return registry.rstrip("/")


def push_images(engine: Engine, images: list[Image], registry: str, say: Say) -> dict[str, str]:
    """Push each image to ``registry``; reference -> the pushed ``repository@digest``."""
    access = RegistryAccess(cert_dir=registry_cert_dir(registry_host(f"{registry}/image")))
    pins: dict[str, str] = {}
    for image in images:
        destination = f"{registry}/{image.reference}"
        say(f"pushing {image.reference} to {destination}")
        digest = engine.push(image.reference, destination, access, lambda line: say(f"  {line}"))
        pins[image.reference] = f"{registry}/{image.repository}@{digest}"
        say(f"pushed {image.reference}: {pins[image.reference]}")
    return pins


def record_pins(pins: dict[str, str], path: Path) -> Path:
    """Add ``pins`` to the recorded ones (a newer push of a reference replaces its pin)."""
    recorded = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {}
    recorded.update(pins)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(recorded, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return path
