"""Dockerfiles rendered from the image declarations.

Every image with an :class:`~trainjobs.images.declarations.ImageBuild` recipe gets
``images/<directory>/Dockerfile``, checked in and kept current by a test
(``trainjobs dockerfiles`` or ``make images`` regenerates them). The build context is
``images/``: the files an image carries live there (``images/scripts/train_mnist.py``).

A rendered Dockerfile downloads nothing unpinned:

- the base images are named by full version tags (``nvidia/cuda:12.2.2-cudnn8-...``,
  ``debian:12.12-slim``, ``registry.k8s.io/kubectl:v1.34.2``), and kubectl is copied from its
  image, so pods never download it;
- Ubuntu and Debian packages come from snapshot.ubuntu.com or snapshot.debian.org at a fixed
  time, not the moving archive, and NVIDIA's apt repository is dropped (CUDA, cuDNN and NCCL
  come with the base image);
- source tarballs are checked against their SHA-256 before they are unpacked;
- Python packages are installed exactly as pinned with ``--no-deps``, so pip never resolves
  a dependency on its own; ``pip check`` then fails the build if the pins are not a complete,
  consistent closure. PyPI never replaces a released file, so a version pin names its files.
  A package with an index of its own (torch's CPU build) is installed from it by itself.

The Dockerfiles use the builtin frontend (no ``# syntax=`` line, which would pull a frontend
image by a moving tag) and ``/bin/sh`` without pipefail: the CUDA-aware MPI check pipes
``ompi_info`` into ``grep -q``, which exits at the first match, and pipefail would turn the
writer's SIGPIPE into a failure.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from packaging.utils import canonicalize_name

from trainjobs.images.build_context import IMAGES_DIR
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.declarations import Image
from trainjobs.images.distributions import UBUNTU_RELEASES

GENERATED_HEADER = (
    "# Generated from components/images/catalogue.py by `make images`; do not edit.\n"
)
VENV = "/opt/venv"
OPEN_MPI_PREFIX = "/usr/local"
CUDA_AWARE_CHECK = "ompi_info --parsable --all | grep -q mpi_built_with_cuda_support:value:true"
KUBECTL_STAGE = "kubectl"
# What downloading, unpacking and compiling Open MPI (and then mpi4py against it) needs.
OPEN_MPI_BUILD_PACKAGES = ("build-essential", "bzip2", "ca-certificates", "curl")
# mpi4py 3.1 is published as source only: it compiles against the image's Open MPI.
MPI4PY_BUILD_PACKAGES = ("build-essential",)
# Python packages that compile against the image's system packages: installed after them.
_COMPILED = {"mpi4py"}
BASE_IMAGE_ARG = "BASE_IMAGE"
KUBECTL_IMAGE_ARG = "KUBECTL_IMAGE"
SECRETS_DIR = "/run/secrets"
APT_CONFIG_SECRET = "apt-config"
"""An apt.conf for the build (APT_CONFIG): a mirror's sources list, a CA bundle."""
APT_SOURCES_SECRET = "apt-sources"
"""The sources list apt-config names."""
PIP_CONFIG_SECRET = "pip-config"
"""A pip.conf for the build (PIP_CONFIG_FILE): index, extra indexes, find-links, CA bundle."""
CA_BUNDLE_SECRET = "ca-bundle"
"""CA certificates for TLS to mirrors and indexes (apt, pip and curl are pointed at it)."""
SETTINGS_COMMENT = (
    "# Build settings (`trainjobs images build` sets them; the defaults are the public sources):\n"
    "# the images it starts from, and secrets that exist only while a step runs, never in the\n"
    "# image or its history: apt-config, apt-sources, pip-config (mirrors) and ca-bundle.\n"
)


def buildable() -> list[Image]:
    """The images trainjobs builds, in declaration order."""
    return [image for image in IMAGES.values() if image.build is not None]


def dockerfile_path(image: Image) -> str:
    """The Dockerfile's path relative to ``images/`` (the build context)."""
    assert image.build is not None
    return f"{image.build.directory}/Dockerfile"


def _run(*commands: str, mounts: tuple[str, ...] = ()) -> str:
    """One RUN instruction: commands chained with &&, one per line, after its secret mounts."""
    head = "RUN " + "".join(f"--mount=type=secret,id={secret} \\\n    " for secret in mounts)
    return head + " \\\n    && ".join(commands) + "\n"


def _listed(prefix: str, items: list[str]) -> str:
    """A command with one argument per line, sorted (diffs show one package per change)."""
    return " \\\n        ".join([prefix, *sorted(items)])


def _use_secret(secret: str, variable: str, otherwise: str | None = None) -> str:
    """Point a tool at a build secret when the build gives it (see the module docstring)."""
    path = f"{SECRETS_DIR}/{secret}"
    fallback = f"; \\\n    else export {otherwise}" if otherwise else ""
    return f"if [ -f {path} ]; then export {variable}={path}{fallback}; fi"


_APT = (APT_CONFIG_SECRET, APT_SOURCES_SECRET, CA_BUNDLE_SECRET)
_PIP = (PIP_CONFIG_SECRET, CA_BUNDLE_SECRET)


def _apt_sources(image: Image) -> tuple[str, list[str]]:
    """The comment and commands that point apt at the dated snapshot of the base's archive."""
    assert image.build is not None
    snapshot = image.build.apt_snapshot
    mirror = "a build's apt-config secret may name a mirror instead.\n"
    if image.cuda is not None:
        codename, _ = UBUNTU_RELEASES[image.cuda.ubuntu]
        archive = f"http://snapshot.ubuntu.com/ubuntu/{snapshot}"
        return (
            f"# Ubuntu packages from the archive as it was at {snapshot}, so every\n"
            "# version is fixed; NVIDIA's apt repository goes (the base image brings CUDA);\n"
            f"# {mirror}",
            [
                "rm -f /etc/apt/sources.list.d/*.list",
                f"printf 'deb {archive} %s main universe\\n' \\\n        "
                f"{codename} {codename}-updates {codename}-security > /etc/apt/sources.list",
            ],
        )
    assert image.debian is not None
    codename = image.debian.codename
    # A snapshot's Release files are past their Valid-Until date by design.
    deb = "deb [check-valid-until=no] http://snapshot.debian.org/archive"
    return (
        f"# Debian packages from the archive as it was at {snapshot}, so every\n"
        "# version is fixed (the image's own sources, in deb822 form, go);\n"
        f"# {mirror}",
        [
            "rm -f /etc/apt/sources.list.d/*",
            f"printf '{deb}/debian/{snapshot} %s main\\n' \\\n"
            f"        {codename} {codename}-updates > /etc/apt/sources.list",
            f"echo '{deb}/debian-security/{snapshot} {codename}-security main' \\\n"
            "        >> /etc/apt/sources.list",
        ],
    )


def _apt_install(packages: set[str]) -> list[str]:
    return [
        "apt-get update",
        _listed(
            "DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends",
            list(packages),
        ),
        "rm -rf /var/lib/apt/lists/*",
    ]


def _python_apt_step(image: Image) -> str:
    """Python from the archive: the same first layer for every image on the same base."""
    assert image.build is not None
    python = f"python{image.build.python}"
    comment, sources = _apt_sources(image)
    return comment + _run(
        _use_secret(APT_CONFIG_SECRET, "APT_CONFIG"),
        *sources,
        *_apt_install({python, f"{python}-dev", f"{python}-venv"}),
        mounts=_APT,
    )


def _system_packages(image: Image) -> set[str]:
    """The image's own Debian or Ubuntu packages, and what building its sources needs."""
    packages = set(image.apt_packages)
    if image.build is not None and image.build.open_mpi is not None:
        packages |= set(OPEN_MPI_BUILD_PACKAGES)
    if "mpi4py" in image.pins():
        packages |= set(MPI4PY_BUILD_PACKAGES)
    return packages


def apt_install_step(packages: set[str]) -> str:
    """One RUN that installs ``packages`` from the image's sources (or the build's mirror)."""
    return _run(
        _use_secret(APT_CONFIG_SECRET, "APT_CONFIG"),
        *_apt_install(packages),
        mounts=_APT,
    )


def _system_apt_step(image: Image) -> str:
    comment = "# The image's own system packages, after the layers it shares with others.\n"
    return comment + apt_install_step(_system_packages(image))


def _sshd_step() -> str:
    """What sshd needs beyond its package: nothing of the package's own set-up is kept."""
    return (
        "# sshd for the ssh transport, run by the job on a high port with the job's key as its\n"
        "# host key: the host keys the package made go (every container would share them).\n"
        "# As root it needs its privilege-separation directory, which Debian's service makes\n"
        "# at boot and a container never does; as any other user it needs nothing more.\n"
        + _run("rm -f /etc/ssh/ssh_host_*", "mkdir -p /run/sshd")
    )


def _open_mpi_steps(image: Image) -> str:
    assert image.build is not None and image.build.open_mpi is not None
    mpi = image.build.open_mpi
    source = f"/tmp/openmpi-{mpi.version}"
    configure = [f"--prefix={OPEN_MPI_PREFIX}", "--disable-mpi-fortran"]
    # Remote ranks start through kubexec.sh with a bare PATH: orted must find its own prefix.
    configure.append("--enable-orterun-prefix-by-default")
    if mpi.cuda:
        configure.append("--with-cuda=/usr/local/cuda")
    steps = (
        f"# Open MPI {mpi.version} from its release tarball (SHA-256 checked)"
        + (
            ", built with CUDA support:\n# MPI calls take GPU buffers directly.\n"
            if mpi.cuda
            else ".\n"
        )
        + _run(
            _use_secret(CA_BUNDLE_SECRET, "CURL_CA_BUNDLE"),
            f"curl -fsSL -o {source}.tar.bz2 {mpi.url}",
            f'echo "{mpi.sha256}  {source}.tar.bz2" | sha256sum -c -',
            f"tar -xjf {source}.tar.bz2 -C /tmp",
            f"cd {source}",
            "./configure " + " ".join(configure),
            'make -j"$(nproc)" install',
            "ldconfig",
            "cd /",
            f"rm -rf {source} {source}.tar.bz2",
            mounts=(CA_BUNDLE_SECRET,),
        )
    )
    if mpi.cuda:
        steps += f"# Fail the build unless Open MPI is CUDA-aware.\nRUN {CUDA_AWARE_CHECK}\n"
    return steps


def _pip_install(requirements: list[str]) -> str:
    """Exactly these packages, no dependency resolution; pip check proves the closure."""
    install = "python3 -m pip install --no-cache-dir --no-deps --no-build-isolation"
    return _run(
        _use_secret(PIP_CONFIG_SECRET, "PIP_CONFIG_FILE"),
        _listed(install, requirements),
        "python3 -m pip check",
        mounts=_PIP,
    )


def _python_steps(image: Image) -> tuple[str, str]:
    """The virtualenv and the packages it shares with other images, then those that build
    against the image's own system packages (mpi4py against its MPI)."""
    assert image.build is not None
    build = image.build
    indexes = {canonicalize_name(n): url for n, url in build.package_indexes.items()}
    requirements = [*image.python_packages, *image.gpu_packages, *build.python_dependencies]
    index = {r: indexes.get(canonicalize_name(r.partition("==")[0])) for r in requirements}
    compiled = [r for r in requirements if canonicalize_name(r.partition("==")[0]) in _COMPILED]
    from_pypi = [r for r in requirements if index[r] is None and r not in compiled]
    steps = (
        f"# Python {build.python} in a virtual environment first on PATH: `python3` in job "
        "commands is this one.\n"
        f"RUN python{build.python} -m venv {VENV}\n"
        f"ENV PATH={VENV}/bin:$PATH\n"
        "# Build tools first: packages that ship only sources (chainer) build with these; a\n"
        "# build's pip-config secret may name a mirror (it then replaces every index below).\n"
        + _run(
            _use_secret(PIP_CONFIG_SECRET, "PIP_CONFIG_FILE"),
            _listed(
                "python3 -m pip install --no-cache-dir --no-deps", list(build.python_bootstrap)
            ),
            mounts=_PIP,
        )
    )
    for requirement, url in index.items():
        if url is not None:
            steps += f"# {requirement} from its own index, not PyPI.\n" + _run(
                _use_secret(PIP_CONFIG_SECRET, "PIP_CONFIG_FILE", f"PIP_INDEX_URL={url}"),
                f"python3 -m pip install --no-cache-dir --no-deps {requirement}",
                mounts=_PIP,
            )
    if from_pypi:
        steps += (
            "# Exactly these packages, no dependency resolution; pip check proves the closure.\n"
            + _pip_install(from_pypi)
        )
    elif not compiled:
        steps += "# pip check proves the environment consistent.\nRUN python3 -m pip check\n"
    later = ""
    if compiled:
        later = "# Packages compiled against the system packages above.\n" + _pip_install(compiled)
    return steps, later


def render(image: Image) -> str:
    """The Dockerfile of one buildable image."""
    build = image.build
    if build is None:
        raise ValueError(f"image {image.reference} has no build recipe")
    parts = [GENERATED_HEADER + f"# {image.reference}: {image.summary}\n"]
    arguments = [f"ARG {BASE_IMAGE_ARG}={image.base}\n"]
    if build.kubectl_image is not None:
        arguments.append(f"ARG {KUBECTL_IMAGE_ARG}={build.kubectl_image}\n")
    parts.append(SETTINGS_COMMENT + "".join(arguments))
    if build.kubectl_image is not None:
        parts.append(f"FROM ${{{KUBECTL_IMAGE_ARG}}} AS {KUBECTL_STAGE}\n")
    parts.append(f"FROM ${{{BASE_IMAGE_ARG}}}\n")
    parts.append(_python_apt_step(image))
    shared, compiled = _python_steps(image)
    parts.append(shared)
    if _system_packages(image):
        parts.append(_system_apt_step(image))
    if "openssh-server" in image.apt_packages:
        parts.append(_sshd_step())
    if build.open_mpi is not None:
        parts.append(_open_mpi_steps(image))
    if compiled:
        parts.append(compiled)
    if build.kubectl_image is not None:
        parts.append(
            "# kubectl for the rsh agent (kubexec.sh), from the pinned kubectl image.\n"
            f"COPY --from={KUBECTL_STAGE} /bin/kubectl /usr/local/bin/kubectl\n"
        )
    if image.files:
        context = IMAGES_DIR.name + "/"
        parts.append(
            "".join(
                f"COPY {item.source.removeprefix(context)} {item.path}\n" for item in image.files
            )
        )
    if image.env:
        parts.append("".join(f"ENV {name}={value}\n" for name, value in sorted(image.env.items())))
    # Exec form (JSON): no shell between the container runtime and the program.
    launch = [f"ENTRYPOINT {json.dumps(list(image.entrypoint))}\n"] if image.entrypoint else []
    launch += [f"CMD {json.dumps(list(image.cmd))}\n"] if image.cmd else []
    if launch:
        parts.append("".join(launch))
    return "\n".join(parts)


def rendered() -> dict[str, str]:
    """Dockerfile path (relative to ``images/``) -> text, for every buildable image."""
    return {dockerfile_path(image): render(image) for image in buildable()}


def recipe_hash(image: Image) -> str:
    """SHA-256 over the Dockerfile and every file the image copies: it changes exactly when
    what goes into the image changes, so it can name an immutable tag."""
    digest = hashlib.sha256(render(image).encode())
    for item in sorted(image.files, key=lambda item: item.path):
        digest.update(f"\0{item.path}\0{item.source}\0".encode())
        digest.update(item.local_path.read_bytes())
    return digest.hexdigest()


def write(out_dir: Path = IMAGES_DIR) -> list[Path]:
    """Write every rendered Dockerfile under ``out_dir``; returns the paths."""
    paths = []
    for name, text in rendered().items():
        path = out_dir / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths


def stale(out_dir: Path = IMAGES_DIR) -> list[str]:
    """The Dockerfiles under ``out_dir`` that are missing or differ from their rendering."""
    return [
        name
        for name, text in rendered().items()
        if not (out_dir / name).is_file() or (out_dir / name).read_text(encoding="utf-8") != text
    ]
