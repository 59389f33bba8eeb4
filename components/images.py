"""Container images as typed declarations: what each image the examples use carries.

An :class:`Image` says what a reference such as ``trainjobs/chainermn:7.8.1`` contains that a
job relies on: the files trainjobs puts into it (in-image path -> file in this repository),
the pinned Python packages, the Debian packages and the environment. The declarations are
the single source of truth for two consumers:

- the local runtime (``trainjobs run``, :mod:`components.local`), where a container becomes a
  host process: in-image paths are mapped to the repository files declared here, and the
  Python packages must be installed in the interpreter that runs the pods (the project's
  ``.venv``, pinned in ``requirements.txt``);
- building the images for a cluster (a later issue renders Dockerfiles from the same model).

Images trainjobs does not build (``external=True``, e.g. the kubectl image the master's init
container copies kubectl from) are declared with the local stand-ins of the files jobs use.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

from pydantic import BaseModel, ConfigDict, Field, field_validator

from components.errors import UserError
from components.graph import DEFAULT_KUBECTL_IMAGE

REPO_ROOT = Path(__file__).resolve().parent.parent
"""Image files are declared relative to the repository root."""

_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")


class _Declaration(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageFile(_Declaration):
    """One file an image carries."""

    path: str = Field(description="Absolute path inside the image, e.g. '/train_mnist.py'.")
    source: str = Field(
        description="The file in this repository, relative to its root, that is copied there."
    )

    @field_validator("path")
    @classmethod
    def _absolute(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not path.is_absolute() or str(path) != value or value == "/":
            raise ValueError(f"must be a normalised absolute file path (got {value!r})")
        return value

    @field_validator("source")
    @classmethod
    def _inside_repository(cls, value: str) -> str:
        path = PurePosixPath(value)
        if path.is_absolute() or ".." in path.parts:
            raise ValueError(f"must be relative to the repository root (got {value!r})")
        return value

    @property
    def local_path(self) -> Path:
        return REPO_ROOT / self.source


class Image(_Declaration):
    """An image reference and what it carries."""

    reference: str = Field(description="The image reference jobs name, e.g. 'repo/name:tag'.")
    summary: str
    external: bool = Field(
        default=False,
        description="Pulled as is, never built by trainjobs; its files are local stand-ins.",
    )
    base: str | None = Field(default=None, description="The image it is built from.")
    apt_packages: tuple[str, ...] = Field(
        default=(), description="Debian packages it installs (for local runs: this machine's)."
    )
    python_packages: tuple[str, ...] = Field(
        default=(), description="Pinned Python requirements ('name==version')."
    )
    files: tuple[ImageFile, ...] = ()
    env: dict[str, str] = Field(default_factory=dict, description="The image's ENV.")

    @field_validator("python_packages")
    @classmethod
    def _pinned(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        loose = [requirement for requirement in value if not _PINNED.fullmatch(requirement)]
        if loose:
            raise ValueError(f"pin every package exactly as 'name==version' (got {loose})")
        return value

    def file(self, path: str) -> ImageFile | None:
        return next((item for item in self.files if item.path == path), None)


_TRAINING_SCRIPT = ImageFile(path="/train_mnist.py", source="images/scripts/train_mnist.py")
_CHAINER_PACKAGES = ("numpy==1.23.5", "scipy==1.11.4", "scikit-learn==1.3.2", "chainer==7.8.1")
# Rank output must reach mpiexec (and the pod log) line by line, not in 8 KiB blocks.
_PYTHON_ENV = {"PYTHONUNBUFFERED": "1"}

IMAGES: dict[str, Image] = {
    image.reference: image
    for image in (
        Image(
            reference="trainjobs/chainer:7.8.1",
            summary="Chainer 7.8.1 on CPU with the MNIST-style training script (single pod).",
            base="python:3.11-slim-bookworm",
            python_packages=_CHAINER_PACKAGES,
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
        ),
        Image(
            reference="trainjobs/chainermn:7.8.1",
            summary="Chainer 7.8.1 with ChainerMN over Debian's Open MPI 4.1 (distributed).",
            base="python:3.11-slim-bookworm",
            apt_packages=("openmpi-bin", "libopenmpi-dev"),
            python_packages=(*_CHAINER_PACKAGES, "mpi4py==3.1.6"),
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
        ),
        Image(
            reference=DEFAULT_KUBECTL_IMAGE,
            summary="kubectl for the master's init containers; locally the trainjobs stand-in "
            "that implements the calls the generated assets make.",
            external=True,
            files=(ImageFile(path="/bin/kubectl", source="components/local/kubectl.py"),),
        ),
    )
}


def resolve(reference: str, aliases: dict[str, str] | None = None) -> Image:
    """The declaration for ``reference`` (after ``aliases``: reference -> declared reference).

    An undeclared image is a user error whose message says both ways out, because a local
    run cannot know what an arbitrary image carries.
    """
    declared = (aliases or {}).get(reference, reference)
    image = IMAGES.get(declared)
    if image is not None:
        return image
    known = ", ".join(sorted(IMAGES))
    if declared != reference:
        raise UserError(f"--map-image {reference}={declared}: {declared!r} is not declared")
    raise UserError(
        f"image {reference!r} is not declared for local runs, so its files cannot be mapped. "
        f"Declare it in components/images.py (an Image in IMAGES: its files as in-image path "
        f"-> repository file, and its pinned Python packages), or run it as a declared image "
        f"with --map-image {reference}=DECLARED (declared: {known})"
    )
