"""Container images as typed declarations: what each image the examples use carries.

An :class:`Image` says what a reference such as ``trainjobs/chainermn:7.8.1`` contains that a
job relies on: the files trainjobs puts into it (in-image path -> file in this repository),
the pinned Python packages, the Debian packages and the environment. The declarations are
the single source of truth for two consumers:

- the local runtime (``trainjobs run``, :mod:`components.local`), where a container becomes a
  host process: in-image paths are mapped to the repository files declared here, and the
  Python packages must be installed in the interpreter that runs the pods (the project's
  ``.venv``, pinned in ``requirements.txt``);
- building the images for a cluster: an image with a :class:`ImageBuild` recipe renders its
  Dockerfile (:mod:`components.dockerfiles`, checked into ``images/<dir>/Dockerfile``), and
  :class:`components.cuda_image.CudaImage` builds and pushes it.

Every declaration is checked against the compatibility rules below when it is made (Chainer
with NumPy, setuptools and CuPy; CuPy wheels with the base image's CUDA and cuDNN), and
:func:`check_images_on_pool` checks the image's CUDA against the GPUs of the pool a job runs
on. :func:`pin_images` replaces a job's image references with digest-pinned ones (the
``trainjobs:images`` stack setting), so pods run exactly the image that was built.

Images trainjobs does not build (``external=True``, e.g. the kubectl image the master's init
container copies kubectl from) are declared with the local stand-ins of the files jobs use.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from packaging.utils import canonicalize_name
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from components.errors import Problem, UserError
from components.gpu import INSTANCE_TYPES, ConfigError, SchedulingProfile, pod_gpus, pod_template
from components.graph import DEFAULT_KUBECTL_IMAGE, Graph, Node

REPO_ROOT = Path(__file__).resolve().parent.parent
"""Image files are declared relative to the repository root."""

IMAGES_DIR = REPO_ROOT / "images"
"""Build context of every image trainjobs builds: Dockerfiles and the files images carry."""

_PINNED = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!-]+$")
_DIGEST_REFERENCE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
# Ubuntu releases the CUDA base images come in, and the Python versions each one's archive
# has (jammy's default is 3.10; 3.11 is in universe).
UBUNTU_RELEASES: dict[str, tuple[str, tuple[str, ...]]] = {
    "22.04": ("jammy", ("3.10", "3.11")),
    "24.04": ("noble", ("3.12",)),
}
# Debian releases the CPU images are built on, with their codename and Python. Bookworm is the
# release the local runtime is tested on (Python 3.11, Open MPI 4.1 from the archive); trixie's
# Open MPI 5 replaced the ORTE launcher the generated assets configure.
DEBIAN_RELEASES: dict[str, tuple[str, tuple[str, ...]]] = {"12": ("bookworm", ("3.11",))}


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
        for name, pin in _all_pins(self):
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


# -- compatibility rules ------------------------------------------------------------------------

# The CuPy wheels on PyPI trainjobs knows, and the oldest CUDA release each runs on. A wheel
# only loads the CUDA libraries of its own major version.
CUPY_WHEELS: dict[str, tuple[int, int]] = {"cupy-cuda11x": (11, 2), "cupy-cuda12x": (12, 0)}

# The oldest CUDA release that can build for each GPU model of the pools' instance types
# (components/gpu.py INSTANCE_TYPES), with its architecture and compute capability: a CUDA
# release older than its GPU has no code for it, and kernels fail to load at run time.
MIN_CUDA: dict[str, tuple[tuple[int, int], str]] = {
    "V100": ((9, 0), "Volta, compute capability 7.0"),
    "T4": ((10, 0), "Turing, compute capability 7.5"),
    "T4g": ((10, 0), "Turing, compute capability 7.5"),
    "A100": ((11, 0), "Ampere, compute capability 8.0"),
    "A10G": ((11, 1), "Ampere, compute capability 8.6"),
    "L4": ((11, 8), "Ada Lovelace, compute capability 8.9"),
    "L40S": ((11, 8), "Ada Lovelace, compute capability 8.9"),
    "H100": ((11, 8), "Hopper, compute capability 9.0"),
    "H200": ((11, 8), "Hopper, compute capability 9.0"),
    "B200": ((12, 8), "Blackwell, compute capability 10.0"),
    "B300": ((12, 9), "Blackwell Ultra, compute capability 10.3"),
    "RTX PRO 4500": ((12, 8), "Blackwell, compute capability 12.0"),
    "RTX PRO Server 6000": ((12, 8), "Blackwell, compute capability 12.0"),
}


def release(version: str) -> tuple[int, ...]:
    """The numeric release of a version: '13.6.0' -> (13, 6, 0), '2.0.0rc1' -> (2, 0, 0)."""
    match = re.match(r"\d+(?:\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def _is_cupy(name: str) -> bool:
    return name == "cupy" or name.startswith("cupy-")


def compatibility_problems(image: Image) -> list[Problem]:
    """Every combination in the declaration that is known to break, or not known to work.

    Each problem names the field, the offending value and the fix.
    """
    pins = image.pins()
    base = []
    if image.cuda is not None and image.debian is not None:
        base.append(Problem("debian", "set cuda (a GPU image) or debian (a CPU image), not both"))
    elif image.cuda is not None and image.base != image.cuda.image:
        base.append(
            Problem(
                "base",
                f"{image.base} is not the CUDA base image {image.cuda.image}; leave base unset "
                "(cuda sets it)",
            )
        )
    elif image.debian is not None and image.base != image.debian.image:
        base.append(
            Problem(
                "base",
                f"{image.base} is not the Debian image {image.debian.image}; leave base unset "
                "(debian sets it)",
            )
        )
    return [
        *base,
        *_duplicate_pins(image),
        *_chainer_problems(pins),
        *_cupy_problems(image, pins),
        *_build_problems(image, pins),
    ]


def _duplicate_pins(image: Image) -> list[Problem]:
    problems, seen = [], {}
    for name, (version, field) in _all_pins(image):
        if name in seen and seen[name] != (version, field):
            first_version, first_field = seen[name]
            problems.append(
                Problem(
                    field,
                    f"{name}=={version} is pinned again ({name}=={first_version} in "
                    f"{first_field}); pin each package once",
                )
            )
        seen.setdefault(name, (version, field))
    return problems


def _all_pins(image: Image) -> list[tuple[str, tuple[str, str]]]:
    fields = {"python_packages": image.python_packages, "gpu_packages": image.gpu_packages}
    if image.build is not None:
        fields["build.python_bootstrap"] = image.build.python_bootstrap
        fields["build.python_dependencies"] = image.build.python_dependencies
    return [
        (canonicalize_name(name), (version, field))
        for field, requirements in fields.items()
        for name, _, version in (requirement.partition("==") for requirement in requirements)
    ]


def _chainer_problems(pins: dict[str, tuple[str, str]]) -> list[Problem]:
    """Chainer 7.8.1 (the last release) predates NumPy 1.24, setuptools 74 and CuPy 14."""
    if "chainer" not in pins:
        return []
    chainer = f"chainer=={pins['chainer'][0]}"
    problems = []
    if "numpy" in pins and release(pins["numpy"][0]) >= (1, 24):
        version, field = pins["numpy"]
        problems.append(
            Problem(
                field,
                f"numpy=={version} breaks {chainer}: NumPy 1.24 removed aliases Chainer uses "
                "and NumPy 2 breaks its import; pin numpy<1.24 (numpy==1.23.5)",
            )
        )
    if "setuptools" in pins and release(pins["setuptools"][0]) >= (74,):
        version, field = pins["setuptools"]
        problems.append(
            Problem(
                field,
                f"setuptools=={version} breaks {chainer}: `import chainer` imports "
                "numpy.distutils, which needs distutils.msvccompiler (gone in setuptools 74; "
                "81 also removed the pkg_resources Chainer's build needs); pin setuptools<74 "
                "(setuptools==73.0.1)",
            )
        )
    for name, (version, field) in pins.items():
        if _is_cupy(name) and release(version) >= (14,):
            problems.append(
                Problem(
                    field,
                    f"{name}=={version} cannot be used with {chainer}: CuPy 14 needs NumPy 2, "
                    f"and Chainer needs numpy<1.24; pin CuPy 13.x ({name}==13.6.0)",
                )
            )
    return problems


def _cupy_problems(image: Image, pins: dict[str, tuple[str, str]]) -> list[Problem]:
    """A CuPy wheel must match the base image's CUDA major, and CuPy 13 its cuDNN 8."""
    problems = []
    for name, (version, field) in pins.items():
        if not _is_cupy(name):
            continue
        requirement = f"{name}=={version}"
        wheel = CUPY_WHEELS.get(name)
        if wheel is None:
            known = ", ".join(f"{n} (CUDA {m}.{o}+)" for n, (m, o) in CUPY_WHEELS.items())
            problems.append(
                Problem(
                    field,
                    f"{requirement} is not a known combination: use the CuPy wheel for the "
                    f"base image's CUDA major: {known}",
                )
            )
            continue
        if image.cuda is None:
            problems.append(
                Problem(
                    "cuda",
                    f"{requirement} needs a CUDA base image; set cuda, e.g. "
                    "CudaBase(version='12.2.2', cudnn=8)",
                )
            )
            continue
        cuda = image.cuda.release
        if cuda[0] != wheel[0] or cuda[:2] < wheel:
            instead = next(
                (
                    f"use {other}"
                    for other, (major, minor) in CUPY_WHEELS.items()
                    if cuda[0] == major and cuda[:2] >= (major, minor)
                ),
                "no known CuPy wheel runs on it",
            )
            problems.append(
                Problem(
                    field,
                    f"{requirement} is built for CUDA {wheel[0]}.x ({wheel[0]}.{wheel[1]}+) "
                    f"but the base image {image.base} has CUDA {image.cuda.version}: not a "
                    f"known combination; {instead}",
                )
            )
        cudnn = image.cuda.cudnn
        if release(version)[:1] == (13,) and cudnn not in (None, 8):
            problems.append(
                Problem(
                    "cuda.cudnn",
                    f"cuDNN {cudnn} with {requirement} is not a known combination: CuPy 13 "
                    "supports cuDNN 8 (CuPy 14 dropped cuDNN); use a cudnn8 base image such as "
                    "nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04",
                )
            )
    return problems


def _build_problems(image: Image, pins: dict[str, tuple[str, str]]) -> list[Problem]:
    """What the Dockerfile recipe needs: a CUDA or Debian base, a Python its archive has, the
    build tools pinned, files inside the build context, and Open MPI 4 for mpi4py (built
    CUDA-aware on a CUDA base)."""
    build = image.build
    if build is None:
        return []
    problems = []
    if image.cuda is not None:
        system, pythons = f"Ubuntu {image.cuda.ubuntu}", UBUNTU_RELEASES[image.cuda.ubuntu][1]
    elif image.debian is not None:
        system, pythons = f"Debian {image.debian.version}", image.debian.pythons
    else:
        problems.append(
            Problem(
                "cuda",
                "images trainjobs builds start from an NVIDIA CUDA base image (GPU) or a Debian "
                "image (CPU); set cuda, e.g. CudaBase(version='12.2.2', cudnn=8), or debian, "
                "e.g. DebianBase(version='12.12')",
            )
        )
        system, pythons = None, ()
    if system is not None and build.python not in pythons:
        problems.append(
            Problem(
                "build.python",
                f"Python {build.python} is not in {system}'s archive (it has "
                f"{', '.join(pythons)}); choose one of those or another release",
            )
        )
    bootstrap = {canonicalize_name(r.partition("==")[0]) for r in build.python_bootstrap}
    missing = [tool for tool in ("pip", "setuptools", "wheel") if tool not in bootstrap]
    if missing:
        problems.append(
            Problem(
                "build.python_bootstrap",
                f"pin {', '.join(missing)} here: packages build from sdists with them",
            )
        )
    for index, item in enumerate(image.files):
        if PurePosixPath(item.source).parts[0] != IMAGES_DIR.name:
            problems.append(
                Problem(
                    f"files[{index}].source",
                    f"{item.source} is outside images/, the build context; move it there",
                )
            )
    for name, url in build.package_indexes.items():
        if canonicalize_name(name) not in pins:
            problems.append(
                Problem(f"build.package_indexes.{name}", f"{name} is not pinned in this image")
            )
        if not url.startswith("https://"):
            problems.append(
                Problem(f"build.package_indexes.{name}", f"{url} is not an https:// URL")
            )
    open_mpi = build.open_mpi
    archive_mpi = image.cuda is None and "libopenmpi-dev" in image.apt_packages
    if "mpi4py" in pins and open_mpi is None and not archive_mpi:
        problems.append(
            Problem(
                "build.open_mpi",
                f"mpi4py=={pins['mpi4py'][0]} needs MPI: declare open_mpi (OpenMpi(version="
                "'4.1.8', ...), built with CUDA support)"
                if image.cuda is not None
                else f"mpi4py=={pins['mpi4py'][0]} needs MPI: add openmpi-bin and "
                "libopenmpi-dev to apt_packages, or declare open_mpi",
            )
        )
    if open_mpi is not None and release(open_mpi.version)[0] != 4:
        problems.append(
            Problem(
                "build.open_mpi.version",
                f"Open MPI {open_mpi.version} is not a known combination: the generated assets "
                "configure Open MPI 4's ORTE launcher (OMPI_MCA_orte_* settings), which Open "
                "MPI 5 replaced with PRRTE; use 4.1.x (4.1.8)",
            )
        )
    if open_mpi is not None and image.cuda is not None and not open_mpi.cuda:
        problems.append(
            Problem(
                "build.open_mpi.cuda",
                "a CUDA image needs CUDA-aware MPI (GPU buffers passed to MPI directly); set "
                "cuda=True",
            )
        )
    kubectl = build.kubectl_image
    if kubectl is not None and not (
        _DIGEST_REFERENCE.fullmatch(kubectl) or _has_version_tag(kubectl)
    ):
        problems.append(
            Problem(
                "build.kubectl_image",
                f"{kubectl} is not pinned; name a version tag (e.g. {DEFAULT_KUBECTL_IMAGE}) or "
                "a digest",
            )
        )
    return problems


def _has_version_tag(reference: str) -> bool:
    last = reference.rpartition("/")[2]
    return ":" in last and last.split(":", 1)[1] != "latest"


# -- declarations -------------------------------------------------------------------------------

_TRAINING_SCRIPT = ImageFile(path="/train_mnist.py", source="images/scripts/train_mnist.py")
_CHAINER_PACKAGES = ("numpy==1.23.5", "scipy==1.11.4", "scikit-learn==1.3.2", "chainer==7.8.1")
_MPI4PY = "mpi4py==3.1.6"  # ChainerMN's MPI binding
# Rank output must reach mpiexec (and the pod log) line by line, not in 8 KiB blocks.
_PYTHON_ENV = {"PYTHONUNBUFFERED": "1"}

# The CUDA images carry what the CPU ones do, plus CuPy 13 (the last CuPy for NumPy 1 and
# cuDNN) on CUDA 12.2 with cuDNN 8; ChainerMN's adds NCCL (in the base image) and CUDA-aware
# Open MPI. Shared pins equal requirements.txt's, so a local run runs the same Python code.
_CUDA_12 = CudaBase(version="12.2.2", cudnn=8)
_DEBIAN_12 = DebianBase(version="12.12")
_APT_SNAPSHOT = "20261101T000000Z"
_PYTHON_BOOTSTRAP = ("pip==25.3", "setuptools==73.0.1", "wheel==0.48.0", "packaging==26.3")
_CHAINER_DEPENDENCIES = (
    "cloudpickle==3.1.2",
    "filelock==4.2.11",
    "joblib==1.6.0",
    "protobuf==6.33.6",
    "six==1.17.0",
    "threadpoolctl==3.8.0",
    "typing_extensions==4.16.0",
)
_CUPY = ("cupy-cuda12x==13.6.0", "fastrlock==0.8.4")
_TORCH_BOOTSTRAP = ("pip==25.3", "setuptools==80.9.0", "wheel==0.48.0", "packaging==26.3")
_TORCH_DEPENDENCIES = (
    "cloudpickle==3.1.2",
    "filelock==4.2.11",
    "fsspec==2026.9.0",
    "jinja2==3.1.6",
    "joblib==1.6.0",
    "markupsafe==3.0.4",
    "mpmath==1.3.0",
    "networkx==3.6.1",
    "sympy==1.14.0",
    "threadpoolctl==3.8.0",
    "typing_extensions==4.16.0",
)
_OPEN_MPI = OpenMpi(
    version="4.1.8", sha256="466f68e3132a1dc02710cc2011fafced8336d98359fa2dae4dddcfd5719f12a9"
)

IMAGES: dict[str, Image] = {
    image.reference: image
    for image in (
        Image(
            reference="trainjobs/chainer:7.8.1",
            summary="Chainer 7.8.1 on CPU with the MNIST-style training script (single pod).",
            debian=_DEBIAN_12,
            python_packages=_CHAINER_PACKAGES,
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="chainer-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_PYTHON_BOOTSTRAP,
                python_dependencies=_CHAINER_DEPENDENCIES,
            ),
        ),
        Image(
            reference="trainjobs/chainermn:7.8.1",
            summary="Chainer 7.8.1 with ChainerMN over Debian's Open MPI 4.1 (distributed, CPU: "
            "--communicator naive).",
            debian=_DEBIAN_12,
            apt_packages=("openmpi-bin", "libopenmpi-dev"),
            python_packages=(*_CHAINER_PACKAGES, _MPI4PY),
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="chainermn-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_PYTHON_BOOTSTRAP,
                python_dependencies=_CHAINER_DEPENDENCIES,
                kubectl_image=DEFAULT_KUBECTL_IMAGE,
            ),
        ),
        Image(
            reference="trainjobs/chainer:7.8.1-cuda12.2",
            summary="Chainer 7.8.1 on CUDA 12.2 with cuDNN 8 and CuPy 13 (single pod: "
            "train_mnist.py --gpu).",
            cuda=_CUDA_12,
            python_packages=_CHAINER_PACKAGES,
            gpu_packages=_CUPY,
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="chainer",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_PYTHON_BOOTSTRAP,
                python_dependencies=_CHAINER_DEPENDENCIES,
            ),
        ),
        Image(
            reference="trainjobs/chainermn:7.8.1-cuda12.2",
            summary="ChainerMN 7.8.1 on CUDA 12.2 with cuDNN 8, CuPy 13, NCCL and CUDA-aware "
            "Open MPI 4.1.8 (distributed: --communicator pure_nccl).",
            cuda=_CUDA_12,
            python_packages=(*_CHAINER_PACKAGES, _MPI4PY),
            gpu_packages=_CUPY,
            files=(_TRAINING_SCRIPT,),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="chainermn",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_PYTHON_BOOTSTRAP,
                python_dependencies=_CHAINER_DEPENDENCIES,
                open_mpi=_OPEN_MPI,
                kubectl_image=DEFAULT_KUBECTL_IMAGE,
            ),
        ),
        # TFJob and PyTorchJob examples (CPU): pins equal requirements.txt's, as above.
        Image(
            reference="trainjobs/pytorch:2.13.0-cpu",
            summary="PyTorch 2.13.0 on CPU with the digits training script (torch.distributed "
            "over gloo; the PyTorchJob example).",
            debian=_DEBIAN_12,
            python_packages=(
                "torch==2.13.0+cpu",
                "numpy==1.23.5",
                "scipy==1.11.4",
                "scikit-learn==1.3.2",
            ),
            files=(ImageFile(path="/train_pytorch.py", source="images/scripts/train_pytorch.py"),),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="pytorch-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                # torch 2.13 declares setuptools>=77.0.3; this image carries no Chainer.
                python_bootstrap=_TORCH_BOOTSTRAP,
                python_dependencies=_TORCH_DEPENDENCIES,
                # PyPI's torch wheel is the CUDA build (gigabytes of nvidia-* packages).
                package_indexes={"torch": "https://download.pytorch.org/whl/cpu"},
            ),
        ),
        Image(
            reference="trainjobs/tf-check:1",
            summary="A light stand-in for TensorFlow in the TFJob example: check_tf_config.py "
            "verifies each process's TF_CONFIG and reaches every task (standard library only).",
            debian=_DEBIAN_12,
            files=(
                ImageFile(path="/check_tf_config.py", source="images/scripts/check_tf_config.py"),
            ),
            env=_PYTHON_ENV,
            build=ImageBuild(
                directory="tf-check",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_PYTHON_BOOTSTRAP,
            ),
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


def declared_image(reference: str) -> Image | None:
    """The declaration of ``reference``, also when it names a declared image in a registry
    (``<registry>/trainjobs/chainermn:7.8.1-cuda12.2``): facts such as its CUDA version hold
    wherever the image is stored."""
    image = IMAGES.get(reference)
    if image is not None:
        return image
    host, _, rest = reference.partition("/")
    if rest and ("." in host or ":" in host or host == "localhost"):
        return IMAGES.get(rest)
    return None


def _containers(pod: dict[str, Any]) -> list[tuple[str, int, dict[str, Any]]]:
    return [
        (group, index, container)
        for group in ("initContainers", "containers", "ephemeralContainers")
        for index, container in enumerate(pod.get(group) or [])
    ]


def cuda_problems(graph: Graph, profile: SchedulingProfile) -> list[Problem]:
    """Containers of GPU pods whose declared image's CUDA is too old for a GPU of the pool.

    Kernels built by an older CUDA have no code for a newer GPU architecture: such a pod
    schedules, starts, and fails at its first GPU operation. Undeclared images are not known
    here and are left alone.
    """
    problems = []
    for node in graph.nodes:
        template = pod_template(node.manifest)
        if template is None or pod_gpus(template["spec"], profile.gpu_resource) == 0:
            continue
        for group, index, container in _containers(template["spec"]):
            image = declared_image(container.get("image", ""))
            if image is None or image.cuda is None:
                continue
            where = f"{node.key}: spec.template.spec.{group}[{index}].image"
            for instance_type in profile.instance_types:
                known = INSTANCE_TYPES.get(instance_type)
                if known is None:
                    continue  # pre-flight reports instance types that do not exist
                needed = MIN_CUDA.get(known.gpu)
                if needed is None:
                    problems.append(
                        Problem(
                            where,
                            f"{instance_type} has {known.gpu} GPUs, whose minimum CUDA version "
                            "is not known: an unknown combination; add the GPU to MIN_CUDA in "
                            "components/images.py",
                        )
                    )
                    continue
                (major, minor), architecture = needed
                if image.cuda.release[:2] < (major, minor):
                    problems.append(
                        Problem(
                            where,
                            f"{container['image']} has CUDA {image.cuda.version}, but "
                            f"{instance_type} has {known.gpu} GPUs ({architecture}), which need "
                            f"CUDA {major}.{minor} or later; build the image on a newer CUDA "
                            "base (e.g. nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04) or use "
                            "another GPU pool",
                        )
                    )
    return problems


def check_images_on_pool(graphs: Iterable[Graph], profile: SchedulingProfile) -> None:
    """Raise a :class:`UserError` naming every GPU container of the jobs whose image cannot
    run on the pool's GPUs (see :func:`cuda_problems`), job by job."""
    lines = []
    for graph in graphs:
        problems = cuda_problems(graph, profile)
        if problems:
            lines.append(
                f"{graph.kind} {graph.job}: images too old for GPU pool {profile.pool!r} "
                f"({len(problems)} problem(s))"
            )
            lines += [f"  {problem}" for problem in problems]
    if lines:
        raise UserError("\n".join(lines))


# -- pinning by digest --------------------------------------------------------------------------

IMAGES_CONFIG_KEY = "trainjobs:images"


def is_digest_pinned(reference: str) -> bool:
    """Whether ``reference`` names one image by content (``<repository>@sha256:<64 hex>``)."""
    return _DIGEST_REFERENCE.fullmatch(reference) is not None


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


def pin_images(graph: Graph, pins: Mapping[str, str], *, require_digests: bool = False) -> Graph:
    """A copy of ``graph`` whose containers run the digest-pinned images ``pins`` names.

    Every container counts: init containers (the kubectl delivery) and ephemeral ones too.
    An image is replaced only where a job names exactly a key of ``pins``. A pin that is not a
    digest is refused, and with ``require_digests`` so is any image left unpinned: nodes pull
    a digest exactly, while a tag may point at a different image on each node.
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
        for group, index, container in _containers(template["spec"]) if template else ():
            container["image"] = pins.get(container["image"], container["image"])
            if not is_digest_pinned(container["image"]):
                unpinned.append(
                    f"{node.key}: spec.template.spec.{group}[{index}].image: "
                    f"{container['image']} is not pinned by digest; add it to "
                    f"{IMAGES_CONFIG_KEY}"
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
