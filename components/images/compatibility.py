"""The rules an image declaration must keep: versions that work together, pins, sources."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import Any, Protocol

from packaging.utils import canonicalize_name

from trainjobs.core.errors import Problem
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE
from trainjobs.images.build_context import IMAGES_DIR
from trainjobs.images.distributions import UBUNTU_RELEASES
from trainjobs.images.image_parts import CudaBase, DebianBase, ImageBuild, ImageFile, release
from trainjobs.images.references import DIGEST_REFERENCE, has_version_tag


class DeclaredImage(Protocol):
    """What the rules read of an image declaration
    (:class:`trainjobs.images.declarations.Image`, which checks itself with them)."""

    @property
    def base(self) -> str | None: ...
    @property
    def cuda(self) -> CudaBase | None: ...
    @property
    def debian(self) -> DebianBase | None: ...
    @property
    def build(self) -> ImageBuild | None: ...
    @property
    def files(self) -> Sequence[ImageFile]: ...
    @property
    def apt_packages(self) -> Sequence[str]: ...
    @property
    def python_packages(self) -> tuple[str, ...]: ...
    @property
    def gpu_packages(self) -> tuple[str, ...]: ...
    def pins(self) -> dict[str, tuple[str, str]]: ...


# The CuPy wheels on PyPI trainjobs knows, and the oldest CUDA release each runs on. A wheel
# only loads the CUDA libraries of its own major version.
CUPY_WHEELS: dict[str, tuple[int, int]] = {"cupy-cuda11x": (11, 2), "cupy-cuda12x": (12, 0)}


def _is_cupy(name: str) -> bool:
    return name == "cupy" or name.startswith("cupy-")


def compatibility_problems(image: DeclaredImage) -> list[Problem]:
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


def _duplicate_pins(image: DeclaredImage) -> list[Problem]:
    problems: list[Problem] = []
    seen: dict[str, Any] = {}
    for name, (version, field) in all_pins(image):
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


def all_pins(image: DeclaredImage) -> list[tuple[str, tuple[str, str]]]:
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


def _cupy_problems(image: DeclaredImage, pins: dict[str, tuple[str, str]]) -> list[Problem]:
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


def _build_problems(image: DeclaredImage, pins: dict[str, tuple[str, str]]) -> list[Problem]:
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
        DIGEST_REFERENCE.fullmatch(kubectl) or has_version_tag(kubectl)
    ):
        problems.append(
            Problem(
                "build.kubectl_image",
                f"{kubectl} is not pinned; name a version tag (e.g. {DEFAULT_KUBECTL_IMAGE}) or "
                "a digest",
            )
        )
    return problems
