"""Container images as typed declarations: what an image carries that jobs rely on.

An :class:`Image` says what a reference such as ``trainjobs/chainermn:7.8.1`` contains that a
job relies on: the files trainjobs puts into it (in-image path -> file in this repository),
the pinned Python packages, the Debian packages and the environment. The declarations are
the single source of truth for two consumers:

- the local runtime (``trainjobs run``, :mod:`trainjobs.local`), where a container becomes a
  host process: in-image paths are mapped to the repository files declared here, and the
  Python packages must be installed in the interpreter that runs the pods (the project's
  ``.venv``, pinned in ``requirements.txt``);
- building the images for a cluster: an image with a :class:`ImageBuild` recipe renders its
  Dockerfile (:mod:`trainjobs.images.dockerfiles`, checked into ``images/<dir>/Dockerfile``),
  and :class:`trainjobs.images.cuda_image.CudaImage` builds and pushes it.

Every declaration is checked against the rules of :mod:`trainjobs.images.compatibility` when
it is made (Chainer with NumPy, setuptools and CuPy; CuPy wheels with the base image's CUDA
and cuDNN). The declared images themselves are in :mod:`trainjobs.images.catalogue`.

Images trainjobs does not build (``external=True``, e.g. the kubectl image the master's init
container copies kubectl from) are declared with the local stand-ins of the files jobs use.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from trainjobs.core.errors import Problem, UserError
from trainjobs.images.build_context import REPO_ROOT
from trainjobs.images.compatibility import all_pins, compatibility_problems, release
from trainjobs.images.distributions import DEBIAN_RELEASES, UBUNTU_RELEASES

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


def _check_pins(value: tuple[str, ...]) -> tuple[str, ...]:
    loose = [requirement for requirement in value if not _PINNED.fullmatch(requirement)]
    if loose:
        raise ValueError(f"pin every package exactly as 'name==version' (got {loose})")
    return value


class CudaBase(_Declaration):
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


class DebianBase(_Declaration):
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


class OpenMpi(_Declaration):
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


class ImageBuild(_Declaration):
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

    _pins = field_validator("python_bootstrap", "python_dependencies")(_check_pins)


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
    local_environment: str | None = Field(
        default=None,
        description="The virtualenv (relative to the repository) whose Python runs this "
        "image's containers in local runs; None: the one running trainjobs (.venv).",
    )
    local_setup: str = Field(
        default="make setup",
        description="The command that installs this image's Python packages for local runs "
        "(the core, or the extra its example needs).",
    )
    entrypoint: tuple[str, ...] = Field(
        default=(),
        description="The image's ENTRYPOINT: what a container without a command runs.",
    )
    cmd: tuple[str, ...] = Field(
        default=(),
        description="The image's CMD: the arguments of a container without a command or args.",
    )
    cuda: CudaBase | None = Field(
        default=None, description="The NVIDIA CUDA base image it is built from (sets base)."
    )
    debian: DebianBase | None = Field(
        default=None, description="The Debian image a CPU image is built from (sets base)."
    )
    gpu_packages: tuple[str, ...] = Field(
        default=(),
        description="Pinned Python packages only GPU pods use (CuPy and its dependencies); "
        "local runs have no GPU and do without them.",
    )
    build: ImageBuild | None = Field(
        default=None, description="How trainjobs builds it (renders images/<dir>/Dockerfile)."
    )

    _pinned = field_validator("python_packages", "gpu_packages")(_check_pins)

    @model_validator(mode="before")
    @classmethod
    def _base_from_cuda_or_debian(cls, data: Any) -> Any:
        if not isinstance(data, dict) or data.get("base") is not None:
            return data
        if data.get("cuda") is not None:
            cuda = CudaBase.model_validate(data["cuda"])
            data = {**data, "cuda": cuda, "base": cuda.image}
        elif data.get("debian") is not None:
            debian = DebianBase.model_validate(data["debian"])
            data = {**data, "debian": debian, "base": debian.image}
        return data

    @model_validator(mode="after")
    def _compatible(self) -> Image:
        """A declaration that breaks a compatibility rule is refused where it is made."""
        problems = compatibility_problems(self)
        if problems:
            raise ImageError(self.reference, problems)
        return self

    @property
    def local_bin(self) -> Path:
        """Where local runs find this image's python3 and its other programs."""
        if self.local_environment is None:
            return Path(sys.executable).parent
        return REPO_ROOT / self.local_environment / "bin"

    def file(self, path: str) -> ImageFile | None:
        return next((item for item in self.files if item.path == path), None)

    @property
    def repository(self) -> str:
        """The reference without its tag ('trainjobs/chainermn')."""
        head, _, last = self.reference.split("@", 1)[0].rpartition("/")
        name = last.split(":", 1)[0]
        return f"{head}/{name}" if head else name

    @property
    def tag(self) -> str:
        last = self.reference.split("@", 1)[0].rpartition("/")[2]
        return last.split(":", 1)[1] if ":" in last else "latest"

    def pins(self) -> dict[str, tuple[str, str]]:
        """Every pinned Python package: normalised name -> (version, the field that pins it)."""
        pins: dict[str, tuple[str, str]] = {}
        for name, pin in all_pins(self):
            pins.setdefault(name, pin)
        return pins


class ImageError(UserError):
    """An image declaration that breaks a compatibility rule; one line per problem."""

    def __init__(self, reference: str, problems: list[Problem]) -> None:
        self.reference = reference
        self.problems = problems
        lines = [f"image {reference}: incompatible declaration ({len(problems)} problem(s))"]
        lines += [f"  {problem}" for problem in problems]
        super().__init__("\n".join(lines))
