"""The parts of an image declaration: its files, its CUDA or Debian base, its build recipe."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
    model_validator,
)

from trainjobs.images.build_context import REPO_ROOT
from trainjobs.images.distributions import DEBIAN_RELEASES, UBUNTU_RELEASES


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version: '13.6.0' -> (13, 6, 0), '2.0.0rc1' -> (2, 0, 0)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")


class Declaration(BaseModel):
    """What every part of a declaration is: frozen, and no field it does not know."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class ImageFile(Declaration):
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

    _root: Path = PrivateAttr(default=REPO_ROOT)
    """Where ``source`` is relative to: this repository, or a user's declarations file's
    directory (:mod:`trainjobs.images.user_images`, which sets it)."""

    @model_validator(mode="after")
    def _declared_where(self, info: ValidationInfo) -> ImageFile:
        if isinstance(info.context, dict) and isinstance(info.context.get("root"), Path):
            self._root = info.context["root"]
        return self

    @property
    def local_path(self) -> Path:
        return self._root / self.source


def check_pins(value: tuple[str, ...]) -> tuple[str, ...]:
    loose = [requirement for requirement in value if not _PINNED.fullmatch(requirement)]
    if loose:
        raise ValueError(f"pin every package exactly as 'name==version' (got {loose})")
    return value


class CudaBase(Declaration):
    """An NVIDIA CUDA base image (``nvidia/cuda`` on Docker Hub), named by its versions.

    The tag is the pin: NVIDIA publishes one per CUDA patch release, cuDNN major and Ubuntu
    release. The ``devel`` flavour carries the CUDA headers and nvcc that building Open MPI
    ``--with-cuda`` needs, and the headers CuPy's run-time kernel compiler includes.
    """

    version: str = Field(
        pattern=r"^\d+\.\d+\.\d+$", description="CUDA toolkit version, e.g. '12.2.2'."
    )
    cudnn: int | None = Field(
        default=None, ge=1, description="cuDNN major version in the image; None for none."
    )
    flavor: Literal["devel", "runtime"] = "devel"
    ubuntu: str = Field(default="22.04", description="Ubuntu release of the image.")

    @field_validator("ubuntu")
    @classmethod
    def _known_ubuntu(cls, value: str) -> str:
        if value not in UBUNTU_RELEASES:
            raise ValueError(f"must be one of {', '.join(UBUNTU_RELEASES)} (got {value!r})")
        return value

    @property
    def image(self) -> str:
        cudnn = f"-cudnn{self.cudnn}" if self.cudnn is not None else ""
        return f"nvidia/cuda:{self.version}{cudnn}-{self.flavor}-ubuntu{self.ubuntu}"

    @property
    def release(self) -> tuple[int, ...]:
        return release(self.version)


class DebianBase(Declaration):
    """A Debian image (``debian`` on Docker Hub) the CPU images are built from, named by its
    point release: ``debian:12.12-slim`` stays at that point release."""

    version: str = Field(pattern=r"^\d+\.\d+$", description="Debian point release, e.g. '12.12'.")

    @field_validator("version")
    @classmethod
    def _known_release(cls, value: str) -> str:
        if value.split(".")[0] not in DEBIAN_RELEASES:
            known = ", ".join(f"{major}.x" for major in DEBIAN_RELEASES)
            raise ValueError(f"must be a point release of {known} (got {value!r})")
        return value

    @property
    def image(self) -> str:
        return f"debian:{self.version}-slim"

    @property
    def codename(self) -> str:
        return DEBIAN_RELEASES[self.version.split(".")[0]][0]

    @property
    def pythons(self) -> tuple[str, ...]:
        """The Python versions in this release's archive."""
        return DEBIAN_RELEASES[self.version.split(".")[0]][1]


class OpenMpi(Declaration):
    """Open MPI built from its release tarball, verified by checksum."""

    version: str = Field(pattern=r"^\d+\.\d+\.\d+$", description="e.g. '4.1.8'.")
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$", description="SHA-256 of the release's .tar.bz2.")
    cuda: bool = Field(
        default=True,
        description="Build with CUDA support (--with-cuda), verified with ompi_info at build time.",
    )

    @property
    def url(self) -> str:
        major, minor, _ = self.version.split(".")
        return (
            f"https://download.open-mpi.org/release/open-mpi/v{major}.{minor}/"
            f"openmpi-{self.version}.tar.bz2"
        )


class ImageBuild(Declaration):
    """How trainjobs builds an image for clusters: the recipe its Dockerfile is rendered from.

    Nothing is downloaded unpinned: system packages come from a dated snapshot of the archive,
    Python packages are installed exactly as pinned with ``--no-deps`` (so the pins must be
    the whole dependency closure; ``pip check`` verifies that at build time), source tarballs
    are checked against their SHA-256, and kubectl is copied from a pinned image.
    """

    directory: str = Field(
        pattern=r"^[a-z0-9][a-z0-9._-]*$",
        description="Directory under images/ that holds the rendered Dockerfile.",
    )
    python: str = Field(default="3.11", description="Python version, from the base's archive.")
    apt_snapshot: str = Field(
        pattern=r"^\d{8}T\d{6}Z$",
        description="The snapshot.ubuntu.com or snapshot.debian.org timestamp every system "
        "package comes from.",
    )
    python_bootstrap: tuple[str, ...] = Field(
        description="Pinned pip, setuptools and wheel, installed first: chainer and mpi4py "
        "build from sdists with them (--no-build-isolation)."
    )
    python_dependencies: tuple[str, ...] = Field(
        default=(),
        description="The rest of the pinned dependency closure of the image's packages.",
    )
    package_indexes: dict[str, str] = Field(
        default_factory=dict,
        description="Packages installed from an index of their own instead of PyPI (name -> "
        "index URL), e.g. torch's CPU build from https://download.pytorch.org/whl/cpu.",
    )
    open_mpi: OpenMpi | None = Field(
        default=None,
        description="Open MPI built from source; None uses the archive's (apt_packages).",
    )
    kubectl_image: str | None = Field(
        default=None,
        description="Pinned image kubectl is copied from (multi-stage COPY) for the rsh agent.",
    )

    _pins = field_validator("python_bootstrap", "python_dependencies")(check_pins)
