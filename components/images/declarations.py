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

import sys
from pathlib import Path
from typing import Any

from pydantic import Field, field_validator, model_validator

from trainjobs.core.errors import Problem, UserError
from trainjobs.images.build_context import REPO_ROOT
from trainjobs.images.compatibility import all_pins, compatibility_problems
from trainjobs.images.image_parts import (
    CudaBase,
    DebianBase,
    Declaration,
    ImageBuild,
    ImageFile,
    check_pins,
)


class Image(Declaration):
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

    _pinned = field_validator("python_packages", "gpu_packages")(check_pins)

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
