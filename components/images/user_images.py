"""The images a user declares for process runs, in their own project, never in trainjobs.

A process run cannot look inside an image: it needs to know which in-image paths stand for
which local files, and which pinned Python packages the image's Python has. trainjobs declares
its own images (:mod:`trainjobs.images.catalogue`); a user declares theirs, in the same shape
(:class:`~trainjobs.images.declarations.Image`), in :data:`DECLARATIONS_FILE` beside their job
files::

    images:
      - reference: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
        summary: Kubeflow's PyTorch MNIST example
        files:
          - {path: /opt/pytorch-mnist/mnist.py, source: mnist.py}
        python_packages: ["torch==2.13.0"]

Each file's ``source`` is relative to the declarations file's directory. An image trainjobs
builds cannot be declared again (a job names it as trainjobs declares it).
"""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError

from trainjobs.core.documents import UnreadableFile, load_mapping
from trainjobs.core.errors import ConfigError, Problem
from trainjobs.core.models import problem_from_pydantic
from trainjobs.images.catalogue import IMAGES, USER_IMAGES
from trainjobs.images.declarations import Image

DECLARATIONS_FILE = "trainjobs-images.yaml"
"""Beside the job files: the images their process runs may use."""
_FIELDS: tuple[str, ...] = (
    "reference",
    "summary",
    "files",
    "python_packages",
    "apt_packages",
    "env",
    "entrypoint",
    "cmd",
)
"""What a user declares: what a process run uses (builds are trainjobs' own)."""


def declarations_beside(job_file: Path) -> Path:
    return job_file.parent / DECLARATIONS_FILE


def load_user_images(path: Path) -> list[Image]:
    """The images ``path`` declares (none when it does not exist); every problem at once."""
    if not path.is_file():
        return []
    try:
        document = load_mapping(path)
    except UnreadableFile as error:
        raise ConfigError(str(path), "image declarations", [Problem("", error.problem)]) from None
    entries = document.get("images")
    if not isinstance(entries, list) or set(document) != {"images"}:
        problem = Problem("images", f"must be the file's one key, a list (got {entries!r})")
        raise ConfigError(str(path), "image declarations", [problem])
    problems: list[Problem] = []
    images = [
        image
        for index, entry in enumerate(entries)
        if (image := _image(entry, f"images[{index}]", path.parent, problems)) is not None
    ]
    if problems:
        raise ConfigError(str(path), "image declarations", problems)
    return images


def _image(entry: Any, where: str, root: Path, problems: list[Problem]) -> Image | None:
    if not isinstance(entry, dict):
        problems.append(Problem(where, f"must be a mapping (got {entry!r})"))
        return None
    unknown = sorted(set(entry) - set(_FIELDS))
    if unknown:
        problems.append(
            Problem(f"{where}.{unknown[0]}", f"unknown field; known: {', '.join(_FIELDS)}")
        )
        return None
    try:
        image = Image.model_validate(entry, context={"root": root})
    except ValidationError as error:
        for detail in error.errors():
            problem = problem_from_pydantic(detail)
            problems.append(Problem(f"{where}.{problem.path}".rstrip("."), problem.message))
        return None
    if image.reference in IMAGES:
        problems.append(
            Problem(
                f"{where}.reference",
                f"{image.reference!r} is trainjobs' own image; name your image otherwise",
            )
        )
    for number, item in enumerate(image.files):
        if not item.local_path.is_file():
            problems.append(
                Problem(
                    f"{where}.files[{number}].source",
                    f"{str(PurePosixPath(item.source))!r} is not a file in {root}",
                )
            )
    return image


def declare_user_images(job_file: Path) -> None:
    """Make the images declared beside ``job_file`` known to this process's runs."""
    for image in load_user_images(declarations_beside(job_file)):
        USER_IMAGES[image.reference] = image
