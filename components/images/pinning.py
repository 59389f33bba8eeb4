"""Pinning a job's container images to digests (`trainjobs:images`, `trainjobs:requireDigests`)."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainjobs.cloud.scheduling import pod_template
from trainjobs.core.documents import UnreadableFile, read_text
from trainjobs.core.errors import ConfigError, Problem, UserError
from trainjobs.core.graph import Graph, Node
from trainjobs.core.pod_template import pod_containers
from trainjobs.images.references import is_digest_pinned

IMAGES_CONFIG_KEY = "trainjobs:images"


def _digest_problems(pins: Mapping[str, Any]) -> list[Problem]:
    return [
        Problem(
            str(reference),
            f"must be pinned by digest, as '<repository>@sha256:<64 hex digits>' (got "
            f"{pinned!r}); a tag can move, a digest names exactly the image that was built",
        )
        for reference, pinned in pins.items()
        if not isinstance(pinned, str) or not is_digest_pinned(pinned)
    ]


def image_pins_from_config(
    value: str | Mapping[str, Any] | None, source: str = IMAGES_CONFIG_KEY
) -> dict[str, str]:
    """Image pins from stack config: an object (image reference as jobs name it ->
    ``repo@sha256:...``), or its JSON, as `pulumi stack output images --json` prints it."""
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as error:
            problem = Problem("", f"not valid JSON: {error}")
            raise ConfigError(source, "image pins", [problem]) from None
    if not isinstance(value, Mapping):
        raise ConfigError(
            source,
            "image pins",
            [Problem("", f"must be an object: image reference -> repo@sha256:... (got {value!r})")],
        )
    problems = _digest_problems(value)
    if problems:
        raise ConfigError(source, "image pins", problems)
    return dict(value)


def pins_from_file(path: Path) -> dict[str, str]:
    """Image pins from a JSON file (``trainjobs images build --push`` records one)."""
    try:
        text = read_text(path)
    except UnreadableFile as error:
        raise UserError(f"--image-pins {error.source}: {error.problem}") from None
    return image_pins_from_config(text, source=str(path))


def pin_images(
    graph: Graph,
    pins: Mapping[str, str],
    *,
    require_digests: bool = False,
    pins_from: str = IMAGES_CONFIG_KEY,
) -> Graph:
    """A copy of ``graph`` whose containers run the digest-pinned images ``pins`` names.

    Every container counts: init containers (the kubectl delivery) and ephemeral ones too.
    An image is replaced only where a job names exactly a key of ``pins``. A pin that is not a
    digest is refused, and with ``require_digests`` so is any image left unpinned: nodes pull
    a digest exactly, while a tag may point at a different image on each node. ``pins_from``:
    where the user adds a pin (the stack's config, or a local run's pins file).
    """
    problems = _digest_problems(pins)
    if problems:
        raise UserError(
            "\n".join([f"image pins: {len(problems)} problem(s)", *(f"  {p}" for p in problems)])
        )
    pinned = Graph(job=graph.job, kind=graph.kind, namespace=graph.namespace)
    unpinned = []
    for node in graph.nodes:
        manifest = copy.deepcopy(node.manifest)
        template = pod_template(manifest)
        for group, index, container in pod_containers(template["spec"]) if template else ():
            container["image"] = pins.get(container["image"], container["image"])
            if not is_digest_pinned(container["image"]):
                unpinned.append(
                    f"{node.key}: spec.template.spec.{group}[{index}].image: "
                    f"{container['image']} is not pinned by digest; add it to {pins_from}"
                )
        pinned.nodes.append(Node(manifest, node.depends_on))
    if require_digests and unpinned:
        raise UserError(
            "\n".join(
                [
                    f"{graph.kind} {graph.job}: {len(unpinned)} image(s) not pinned by digest",
                    *(f"  {line}" for line in unpinned),
                ]
            )
        )
    return pinned
