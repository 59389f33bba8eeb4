"""CUDA images as code: declarations, compatibility rules, rendered Dockerfiles, the CudaImage
component (under the Pulumi SDK's mock runtime: no Docker, no AWS) and pinning jobs by digest."""

from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pulumi
import pytest
import yaml
from pulumi.runtime import mocks, rpc, settings

from tests.conftest import REPO, schema_problems
from trainjobs.cli import main
from trainjobs.cloud.instances import INSTANCE_TYPES
from trainjobs.cloud.scheduling import SchedulingProfile, apply_scheduling
from trainjobs.core.documents import load_file
from trainjobs.core.errors import ConfigError, UserError
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE
from trainjobs.deploy.component import TrainingJob
from trainjobs.images import dockerfiles
from trainjobs.images.catalogue import IMAGES, declared_image
from trainjobs.images.compatibility import compatibility_problems
from trainjobs.images.cuda_image import CudaImage, image_tag
from trainjobs.images.declarations import Image, ImageError
from trainjobs.images.gpu_support import MIN_CUDA, check_images_on_pool, cuda_problems
from trainjobs.images.image_parts import CudaBase, DebianBase
from trainjobs.images.pinning import image_pins_from_config, pin_images
from trainjobs.images.references import is_digest_pinned
from trainjobs.kinds.registry import JobDefinition, load_job, parse_job
from trainjobs.review.preview import run_preview

CHAINER = "trainjobs/chainer:7.8.1-cuda12.2"
CHAINERMN = "trainjobs/chainermn:7.8.1-cuda12.2"
REGISTRY = "123456789012.dkr.ecr.us-east-1.amazonaws.com"
DIGEST = "sha256:" + "ab" * 32
PREBUILT_DIGEST = "sha256:" + "cd" * 32
KUBECTL_DIGEST = "sha256:" + "ef" * 32
CHAINERMN_AT_DIGEST = f"{REGISTRY}/trainjobs/chainermn@{DIGEST}"
KUBECTL_AT_DIGEST = f"registry.k8s.io/kubectl@{KUBECTL_DIGEST}"
PUSHED_TAG = re.compile(r"^7\.8\.1-cuda12\.2-[0-9a-f]{12}$")


def dockerfile(name: str) -> list[str]:
    return (REPO / "images" / name / "Dockerfile").read_text().splitlines()


def declared_with(like: str = CHAINERMN, **changes: Any) -> Image:
    """A declaration like ``like``'s with some fields changed (``a__b`` keys go deeper)."""
    data = IMAGES[like].model_dump()
    data.pop("base")
    for key, value in changes.items():
        target = data
        *parents, last = key.split("__")
        for parent in parents:
            target = target[parent]
        target[last] = value
    return Image.model_validate(data)


def refusal(like: str = CHAINERMN, **changes: Any) -> str:
    with pytest.raises(ImageError) as raised:
        declared_with(like, **changes)
    return str(raised.value)


# -- rendered Dockerfiles ------------------------------------------------------------------------


def test_checked_in_dockerfiles_match_the_declarations():
    on_disk = {
        str(path.relative_to(REPO / "images")): path.read_text()
        for path in (REPO / "images").glob("*/Dockerfile")
    }
    assert on_disk == dockerfiles.rendered(), "images/*/Dockerfile is stale: run `make images`"


def test_dockerfiles_command_writes_the_rendered_files(tmp_path, capsys):
    assert main(["dockerfiles", "--out", str(tmp_path)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path}/chainer-cpu/Dockerfile",
        f"{tmp_path}/chainermn-cpu/Dockerfile",
        f"{tmp_path}/chainer/Dockerfile",
        f"{tmp_path}/chainermn/Dockerfile",
        f"{tmp_path}/pytorch-cpu/Dockerfile",
        f"{tmp_path}/tensorflow-cpu/Dockerfile",
        f"{tmp_path}/xgboost-paddle-jax-cpu/Dockerfile",
    ]
    assert (tmp_path / "chainermn" / "Dockerfile").read_text() == dockerfiles.render(
        IMAGES[CHAINERMN]
    )


def test_dockerfiles_check_fails_on_a_stale_dockerfile(tmp_path, capsys):
    main(["dockerfiles", "--out", str(tmp_path)])
    capsys.readouterr()
    (tmp_path / "chainer" / "Dockerfile").write_text("FROM scratch\n")

    assert main(["dockerfiles", "--out", str(tmp_path), "--check"]) == 1
    assert capsys.readouterr().err == (
        f"{tmp_path}/chainer/Dockerfile is stale: run `make images`\n"
    )


def test_dockerfiles_check_passes_on_the_checked_in_files(capsys):
    assert main(["dockerfiles", "--out", str(REPO / "images"), "--check"]) == 0


def test_the_chainermn_build_fails_unless_open_mpi_is_cuda_aware():
    lines = dockerfile("chainermn")
    check = "RUN ompi_info --parsable --all | grep -q mpi_built_with_cuda_support:value:true"
    assert check in lines
    assert lines.index(check) > lines.index('    && make -j"$(nproc)" install \\')


def test_open_mpi_is_built_with_cuda_from_its_release_tarball_checked_by_sha256():
    lines = dockerfile("chainermn")
    start = lines.index(
        "    && curl -fsSL -o /tmp/openmpi-4.1.8.tar.bz2 "
        "https://download.open-mpi.org/release/open-mpi/v4.1/openmpi-4.1.8.tar.bz2 \\"
    )
    assert lines[start - 2 : start] == [
        "RUN --mount=type=secret,id=ca-bundle \\",
        "    if [ -f /run/secrets/ca-bundle ]; then export CURL_CA_BUNDLE=/run/secrets/ca-bundle; "
        "fi \\",
    ]
    assert lines[start + 1 : start + 5] == [
        '    && echo "466f68e3132a1dc02710cc2011fafced8336d98359fa2dae4dddcfd5719f12a9  '
        '/tmp/openmpi-4.1.8.tar.bz2" | sha256sum -c - \\',
        "    && tar -xjf /tmp/openmpi-4.1.8.tar.bz2 -C /tmp \\",
        "    && cd /tmp/openmpi-4.1.8 \\",
        "    && ./configure --prefix=/usr/local --disable-mpi-fortran "
        "--enable-orterun-prefix-by-default --with-cuda=/usr/local/cuda \\",
    ]


def test_both_images_start_from_the_pinned_cuda_12_2_base_with_cudnn_8():
    for name in ("chainer", "chainermn"):
        lines = dockerfile(name)
        assert "ARG BASE_IMAGE=nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04" in lines
        assert "FROM ${BASE_IMAGE}" in lines


def test_chainermn_copies_kubectl_from_the_pinned_kubectl_image():
    lines = dockerfile("chainermn")
    assert lines[6:10] == [
        "ARG BASE_IMAGE=nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04",
        "ARG KUBECTL_IMAGE=registry.k8s.io/kubectl:v1.34.2",
        "",
        "FROM ${KUBECTL_IMAGE} AS kubectl",
    ]
    assert "COPY --from=kubectl /bin/kubectl /usr/local/bin/kubectl" in lines
    assert DEFAULT_KUBECTL_IMAGE == "registry.k8s.io/kubectl:v1.34.2"


def test_the_single_pod_chainer_image_has_no_mpi_and_no_kubectl():
    text = "\n".join(dockerfile("chainer"))
    assert "openmpi" not in text and "mpi4py" not in text and "kubectl" not in text


def test_python_packages_are_installed_exactly_as_pinned_and_checked():
    lines = dockerfile("chainermn")
    install = "    && python3 -m pip install --no-cache-dir --no-deps --no-build-isolation \\"
    start = lines.index(install)
    assert lines[start - 1] == (
        "    if [ -f /run/secrets/pip-config ]; then export PIP_CONFIG_FILE=/run/secrets/pip-config; "
        "fi \\"
    )
    assert lines[start + 1 : start + 16] == [
        "        chainer==7.8.1 \\",
        "        cloudpickle==3.1.2 \\",
        "        cupy-cuda12x==13.6.0 \\",
        "        fastrlock==0.8.4 \\",
        "        filelock==4.2.11 \\",
        "        joblib==1.6.0 \\",
        "        numpy==1.23.5 \\",
        "        protobuf==6.33.6 \\",
        "        scikit-learn==1.3.2 \\",
        "        scipy==1.11.4 \\",
        "        six==1.17.0 \\",
        "        threadpoolctl==3.8.0 \\",
        "        typing_extensions==4.16.0 \\",
        "    && python3 -m pip check",
        "",
    ]
    # mpi4py compiles against the Open MPI built after the shared layers: installed last.
    mpi4py = lines.index(install, start + 1)
    assert lines[mpi4py + 1 : mpi4py + 3] == [
        "        mpi4py==3.1.6 \\",
        "    && python3 -m pip check",
    ]
    assert mpi4py > lines.index(
        "RUN ompi_info --parsable --all | grep -q mpi_built_with_cuda_support:value:true"
    )


def test_build_tools_are_pinned_below_what_breaks_chainer_and_installed_first():
    lines = dockerfile("chainermn")
    start = lines.index("    && python3 -m pip install --no-cache-dir --no-deps \\")
    assert lines[start + 1 : start + 5] == [
        "        packaging==26.3 \\",
        "        pip==25.3 \\",
        "        setuptools==73.0.1 \\",
        "        wheel==0.48.0",
    ]
    assert start < lines.index(
        "    && python3 -m pip install --no-cache-dir --no-deps --no-build-isolation \\"
    )


def test_python_3_11_runs_from_a_virtualenv_first_on_path():
    lines = dockerfile("chainermn")
    assert "RUN python3.11 -m venv /opt/venv" in lines
    assert "ENV PATH=/opt/venv/bin:$PATH" in lines


def test_ubuntu_packages_come_from_a_dated_archive_snapshot():
    lines = dockerfile("chainermn")
    start = lines.index("    && rm -f /etc/apt/sources.list.d/*.list \\")
    assert lines[start + 1 : start + 4] == [
        "    && printf 'deb http://snapshot.ubuntu.com/ubuntu/20261101T000000Z %s main universe\\n' \\",
        "        jammy jammy-updates jammy-security > /etc/apt/sources.list \\",
        "    && apt-get update \\",
    ]


# -- the CPU images the examples run on a cluster ------------------------------------------------

CPU_DOCKERFILES = ("chainer-cpu", "chainermn-cpu", "pytorch-cpu", "tensorflow-cpu")


def test_cpu_images_start_from_debian_12_at_a_point_release():
    bases = {
        name: [
            line
            for line in dockerfile(name)
            if line.startswith(("FROM ", "ARG BASE_")) and not line.endswith(" AS kubectl")
        ]
        for name in CPU_DOCKERFILES
    }
    assert bases == {
        name: ["ARG BASE_IMAGE=debian:12.12-slim", "FROM ${BASE_IMAGE}"] for name in CPU_DOCKERFILES
    }
    assert IMAGES["trainjobs/chainermn:7.8.1"].debian == DebianBase(version="12.12")


def test_debian_packages_come_from_a_dated_snapshot_of_bookworm():
    lines = dockerfile("chainermn-cpu")
    start = lines.index("    && rm -f /etc/apt/sources.list.d/* \\")
    assert lines[start + 1 : start + 6] == [
        "    && printf 'deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/"
        "20261101T000000Z %s main\\n' \\",
        "        bookworm bookworm-updates > /etc/apt/sources.list \\",
        "    && echo 'deb [check-valid-until=no] http://snapshot.debian.org/archive/debian-security/"
        "20261101T000000Z bookworm-security main' \\",
        "        >> /etc/apt/sources.list \\",
        "    && apt-get update \\",
    ]


def test_cpu_chainermn_uses_bookworms_open_mpi_compiles_mpi4py_and_carries_kubectl():
    lines = dockerfile("chainermn-cpu")
    install = "    && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \\"
    python = lines.index(install)
    assert lines[python + 1 : python + 5] == [
        "        python3.11 \\",
        "        python3.11-dev \\",
        "        python3.11-venv \\",
        "    && rm -rf /var/lib/apt/lists/*",
    ]
    # The image's own packages after the layers it shares with trainjobs/chainer:7.8.1.
    system = lines.index(install, python + 1)
    assert lines[system + 1 : system + 7] == [
        "        build-essential \\",
        "        libopenmpi-dev \\",
        "        openmpi-bin \\",
        "        openssh-client \\",
        "        openssh-server \\",
        "    && rm -rf /var/lib/apt/lists/*",
    ]
    assert system > lines.index("        chainer==7.8.1 \\")
    assert "        mpi4py==3.1.6 \\" in lines
    assert not [line for line in lines if "openmpi-4" in line or "--with-cuda" in line]
    assert "COPY --from=kubectl /bin/kubectl /usr/local/bin/kubectl" in lines


def test_the_mpi_images_carry_sshd_without_the_packages_host_keys():
    for directory in ("chainermn-cpu", "chainermn"):
        lines = dockerfile(directory)
        start = lines.index("RUN rm -f /etc/ssh/ssh_host_* \\")
        assert lines[start + 1] == "    && mkdir -p /run/sshd", directory
        assert "        openssh-server \\" in lines, directory
        assert "        openssh-client \\" in lines, directory


def test_torch_comes_from_pytorchs_cpu_index_before_the_rest_from_pypi():
    lines = dockerfile("pytorch-cpu")
    torch = "    && python3 -m pip install --no-cache-dir --no-deps torch==2.13.0+cpu"
    rest = lines.index(
        "    && python3 -m pip install --no-cache-dir --no-deps --no-build-isolation \\"
    )
    start = lines.index(torch)
    assert start < rest
    # A build's pip configuration, when given, replaces the index (it must find torch).
    assert lines[start - 4 : start] == [
        "RUN --mount=type=secret,id=pip-config \\",
        "    --mount=type=secret,id=ca-bundle \\",
        "    if [ -f /run/secrets/pip-config ]; then export PIP_CONFIG_FILE=/run/secrets/pip-config; \\",
        "    else export PIP_INDEX_URL=https://download.pytorch.org/whl/cpu; fi \\",
    ]
    assert [line for line in lines if "torch" in line] == [
        "# trainjobs/pytorch:2.13.0-cpu: PyTorch 2.13.0 on CPU with the digits training script "
        "(torch.distributed over gloo; the PyTorchJob example).",
        "# torch==2.13.0+cpu from its own index, not PyPI.",
        "    else export PIP_INDEX_URL=https://download.pytorch.org/whl/cpu; fi \\",
        torch,
        "COPY scripts/train_pytorch.py /train_pytorch.py",
        'ENTRYPOINT ["python3", "/train_pytorch.py"]',
    ]
    # torch 2.13 declares setuptools>=77.0.3; pip check enforces it in this image.
    assert "        setuptools==80.9.0 \\" in lines


def test_the_tensorflow_image_runs_its_training_script_as_its_entrypoint():
    lines = dockerfile("tensorflow-cpu")
    assert lines[-3:] == [
        "ENV TF_CPP_MIN_LOG_LEVEL=2",
        "",
        'ENTRYPOINT ["python3", "/train_tensorflow.py"]',
    ]
    assert "COPY scripts/train_tensorflow.py /train_tensorflow.py" in lines
    assert "        tensorflow-cpu==2.20.0 \\" in lines
    assert "    && python3 -m pip check" in lines


def test_an_image_with_a_cmd_renders_it_after_its_entrypoint():
    image = declared_with(
        like="trainjobs/pytorch:2.13.0-cpu", entrypoint=("python3",), cmd=("/train_pytorch.py",)
    )
    assert dockerfiles.render(image).splitlines()[-2:] == [
        'ENTRYPOINT ["python3"]',
        'CMD ["/train_pytorch.py"]',
    ]


def test_an_image_on_both_a_cuda_and_a_debian_base_is_refused():
    assert refusal(debian={"version": "12.12"}) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  debian: set cuda (a GPU image) or debian (a CPU image), not both"
    )


def test_a_debian_release_without_a_known_archive_is_refused():
    with pytest.raises(ValueError, match=r"must be a point release of 12\.x \(got '13\.2'\)"):
        DebianBase(version="13.2")


def test_a_python_the_debian_archive_lacks_is_refused():
    assert refusal(like="trainjobs/chainermn:7.8.1", build__python="3.12") == (
        "image trainjobs/chainermn:7.8.1: incompatible declaration (1 problem(s))\n"
        "  build.python: Python 3.12 is not in Debian 12.12's archive (it has 3.11); choose one "
        "of those or another release"
    )


def test_mpi4py_on_a_cpu_image_without_open_mpi_is_refused():
    assert refusal(like="trainjobs/chainermn:7.8.1", apt_packages=()) == (
        "image trainjobs/chainermn:7.8.1: incompatible declaration (1 problem(s))\n"
        "  build.open_mpi: mpi4py==3.1.6 needs MPI: add openmpi-bin and libopenmpi-dev to "
        "apt_packages, or declare open_mpi"
    )


def test_a_package_index_for_an_unpinned_package_or_over_http_is_refused():
    indexes = {"torch": "https://download.pytorch.org/whl/cpu", "jax": "http://example.com/simple"}
    assert refusal(like="trainjobs/pytorch:2.13.0-cpu", build__package_indexes=indexes) == (
        "image trainjobs/pytorch:2.13.0-cpu: incompatible declaration (2 problem(s))\n"
        "  build.package_indexes.jax: jax is not pinned in this image\n"
        "  build.package_indexes.jax: http://example.com/simple is not an https:// URL"
    )


def test_images_carry_the_training_script_and_unbuffered_python():
    for name in ("chainer-cpu", "chainermn-cpu", "chainer", "chainermn"):
        lines = dockerfile(name)
        assert "COPY scripts/train_mnist.py /train_mnist.py" in lines
        assert "ENV PYTHONUNBUFFERED=1" in lines


APT_SNAPSHOT_SOURCE = (
    r"deb (http://snapshot\.ubuntu\.com/ubuntu/|\[check-valid-until=no\] "
    r"http://snapshot\.debian\.org/archive/debian(-security)?/)\d{8}T\d{6}Z "
)


def test_no_dockerfile_downloads_anything_unpinned():
    problems = []
    for name, text in dockerfiles.rendered().items():
        instructions = text.replace("\\\n", " ").splitlines()
        # Base images are build args: their defaults are what a build without settings pulls.
        defaults = dict(
            line.split()[1].split("=", 1) for line in instructions if line.startswith("ARG ")
        )
        for line in instructions:
            words = line.split()
            if not words or words[0].startswith("#"):
                continue
            if words[0] == "FROM":
                argument = re.fullmatch(r"\$\{(\w+)\}", words[1])
                image = defaults[argument.group(1)] if argument else words[1]
                last = image.rpartition("/")[2]
                if ":" not in last or last.endswith(":latest"):
                    problems.append(f"{name}: unpinned base image {image}")
            for command in line.split("&&"):
                parts = command.split()
                if "pip" in parts and "install" in parts:
                    loose = [p for p in parts[parts.index("install") + 1 :] if "==" not in p]
                    if [p for p in loose if not p.startswith("--")]:
                        problems.append(f"{name}: unpinned pip install {loose}")
                if "PIP_INDEX_URL=" in command and "PIP_INDEX_URL=https://" not in command:
                    problems.append(f"{name}: package index not over https: {command}")
                if parts[:1] == ["curl"] and not re.search(
                    rf"{re.escape(parts[3])}\" \| sha256sum -c -", line
                ):
                    problems.append(f"{name}: download without checksum {parts[4]}")
                if "deb " in command and not re.search(APT_SNAPSHOT_SOURCE, command):
                    problems.append(f"{name}: apt source outside the snapshot: {command}")
        if "# syntax" in text or "ADD " in text:
            problems.append(f"{name}: downloads through the frontend or ADD")
    assert problems == []


def test_everything_the_dockerfiles_copy_is_in_the_build_context():
    copied = [
        line.split()[1]
        for text in dockerfiles.rendered().values()
        for line in text.splitlines()
        if line.startswith("COPY ") and "--from=" not in line
    ]
    assert copied == [
        "scripts/train_mnist.py",  # chainer-cpu
        "scripts/train_mnist.py",  # chainermn-cpu
        "scripts/train_mnist.py",  # chainer (CUDA)
        "scripts/train_mnist.py",  # chainermn (CUDA)
        "scripts/train_pytorch.py",
        "scripts/train_tensorflow.py",
        "scripts/train_xgboost.py",  # xgboost-paddle-jax-cpu
        "scripts/train_paddle.py",
        "scripts/train_jax.py",
    ]
    assert all((REPO / "images" / source).is_file() for source in copied)


def test_the_pushed_tag_names_the_recipe_and_changes_with_it():
    image = IMAGES[CHAINERMN]
    changed = declared_with(build__apt_snapshot="20261102T000000Z")

    assert PUSHED_TAG.fullmatch(image_tag(image))
    assert image_tag(image) == f"7.8.1-cuda12.2-{dockerfiles.recipe_hash(image)[:12]}"
    assert image_tag(changed) != image_tag(image)


# -- compatibility rules -------------------------------------------------------------------------


def test_every_declared_image_passes_the_compatibility_rules():
    assert {reference: compatibility_problems(i) for reference, i in IMAGES.items()} == {
        reference: [] for reference in IMAGES
    }


def test_the_cuda_images_are_declared_with_their_base_and_pins():
    image = IMAGES[CHAINERMN]
    assert image.base == "nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04"
    assert image.cuda == CudaBase(version="12.2.2", cudnn=8, flavor="devel", ubuntu="22.04")
    assert image.gpu_packages == ("cupy-cuda12x==13.6.0", "fastrlock==0.8.4")
    assert image.build is not None and image.build.open_mpi is not None
    assert (image.build.open_mpi.version, image.build.open_mpi.cuda) == ("4.1.8", True)
    assert (image.repository, image.tag) == ("trainjobs/chainermn", "7.8.1-cuda12.2")


# torch 2.13 declares setuptools>=77.0.3, which its image (no Chainer) pins, and so does the
# xgboost-paddle-jax image (no Chainer either); the local environment keeps Chainer's
# setuptools<74 and installs torch without its declared dependencies.
PINS_THAT_DIFFER_ON_PURPOSE = {
    "trainjobs/pytorch:2.13.0-cpu: setuptools==80.9.0",
    "trainjobs/xgboost-paddle-jax:2026.11-cpu: setuptools==80.9.0",
}
# Pinned by the image's pip bootstrap, but not by a requirements file (venvs bring their own).
BOOTSTRAP_ONLY = {"pip", "setuptools", "wheel"}


# .venv is the core pins plus the extras' (`make setup-pytorch`, `setup-xgboost`, `setup-paddle`,
# `setup-jax`), each its own file.
LOCAL_REQUIREMENTS = {
    None: (
        "requirements.txt",
        "requirements-pytorch.txt",
        "requirements-xgboost.txt",
        "requirements-paddle.txt",
        "requirements-jax.txt",
    ),
    ".venv-tensorflow": ("requirements-tensorflow.txt",),
}


def requirements_of(image: Image) -> dict[str, str]:
    """The pins of the requirements files that build the image's local environment."""
    text = "\n".join(
        (REPO / name).read_text() for name in LOCAL_REQUIREMENTS[image.local_environment]
    )
    pins = [
        line.split()[0].partition("==")
        for line in text.splitlines()
        if "==" in line and not line.startswith("#")
    ]
    return {re.sub(r"[-_.]+", "-", name).lower(): version for name, _, version in pins}


def test_image_pins_equal_their_local_environments_where_both_pin_a_package():
    differing = {
        f"{reference}: {name}=={version}"
        for reference, image in IMAGES.items()
        for name, (version, _) in image.pins().items()
        if requirements_of(image).get(name, version) != version
    }
    assert differing == PINS_THAT_DIFFER_ON_PURPOSE


def test_the_tensorflow_environment_pins_exactly_the_images_closure():
    image = IMAGES["trainjobs/tensorflow:2.20.0-cpu"]
    closure = {name: version for name, (version, _) in image.pins().items()}
    assert requirements_of(image) == {
        name: version for name, version in closure.items() if name not in BOOTSTRAP_ONLY
    }


def test_cupy_14_with_chainer_is_refused():
    assert refusal(gpu_packages=("cupy-cuda12x==14.0.0", "fastrlock==0.8.4")) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  gpu_packages: cupy-cuda12x==14.0.0 cannot be used with chainer==7.8.1: CuPy 14 needs "
        "NumPy 2, and Chainer needs numpy<1.24; pin CuPy 13.x (cupy-cuda12x==13.6.0)"
    )


def test_numpy_1_24_with_chainer_is_refused():
    packages = ("numpy==1.24.4", "scipy==1.11.4", "scikit-learn==1.3.2", "chainer==7.8.1")
    assert refusal(python_packages=(*packages, "mpi4py==3.1.6")) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  python_packages: numpy==1.24.4 breaks chainer==7.8.1: NumPy 1.24 removed aliases "
        "Chainer uses and NumPy 2 breaks its import; pin numpy<1.24 (numpy==1.23.5)"
    )


def test_setuptools_74_with_chainer_is_refused():
    bootstrap = ("pip==25.3", "setuptools==74.0.0", "wheel==0.48.0", "packaging==26.3")
    assert refusal(build__python_bootstrap=bootstrap) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  build.python_bootstrap: setuptools==74.0.0 breaks chainer==7.8.1: `import chainer` "
        "imports numpy.distutils, which needs distutils.msvccompiler (gone in setuptools 74; 81 "
        "also removed the pkg_resources Chainer's build needs); pin setuptools<74 "
        "(setuptools==73.0.1)"
    )


def test_a_cupy_wheel_for_another_cuda_major_than_the_base_is_an_unknown_combination():
    assert refusal(gpu_packages=("cupy-cuda11x==13.6.0", "fastrlock==0.8.4")) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  gpu_packages: cupy-cuda11x==13.6.0 is built for CUDA 11.x (11.2+) but the base image "
        "nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04 has CUDA 12.2.2: not a known combination; "
        "use cupy-cuda12x"
    )


def test_a_cupy_package_that_is_not_a_known_wheel_is_refused():
    assert refusal(gpu_packages=("cupy==13.6.0", "fastrlock==0.8.4")) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  gpu_packages: cupy==13.6.0 is not a known combination: use the CuPy wheel for the "
        "base image's CUDA major: cupy-cuda11x (CUDA 11.2+), cupy-cuda12x (CUDA 12.0+)"
    )


def test_cudnn_9_with_cupy_13_is_an_unknown_combination():
    assert refusal(cuda__cudnn=9) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  cuda.cudnn: cuDNN 9 with cupy-cuda12x==13.6.0 is not a known combination: CuPy 13 "
        "supports cuDNN 8 (CuPy 14 dropped cuDNN); use a cudnn8 base image such as "
        "nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04"
    )


def test_open_mpi_5_is_refused_because_the_assets_drive_open_mpi_4s_launcher():
    assert refusal(build__open_mpi__version="5.0.8") == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  build.open_mpi.version: Open MPI 5.0.8 is not a known combination: the generated "
        "assets configure Open MPI 4's ORTE launcher (OMPI_MCA_orte_* settings), which Open MPI "
        "5 replaced with PRRTE; use 4.1.x (4.1.8)"
    )


def test_mpi_without_cuda_support_is_refused_on_a_cuda_image():
    assert refusal(build__open_mpi__cuda=False) == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  build.open_mpi.cuda: a CUDA image needs CUDA-aware MPI (GPU buffers passed to MPI "
        "directly); set cuda=True"
    )


def test_a_python_the_ubuntu_archive_lacks_is_refused():
    assert refusal(build__python="3.12") == (
        f"image {CHAINERMN}: incompatible declaration (1 problem(s))\n"
        "  build.python: Python 3.12 is not in Ubuntu 22.04's archive (it has 3.10, 3.11); "
        "choose one of those or another release"
    )


def test_cupy_on_an_image_without_a_cuda_base_is_refused():
    with pytest.raises(ImageError) as raised:
        Image(
            reference="example/cpu:1",
            summary="CuPy without CUDA",
            base="python:3.11-slim-bookworm",
            gpu_packages=("cupy-cuda12x==13.6.0",),
        )
    assert str(raised.value) == (
        "image example/cpu:1: incompatible declaration (1 problem(s))\n"
        "  cuda: cupy-cuda12x==13.6.0 needs a CUDA base image; set cuda, e.g. "
        "CudaBase(version='12.2.2', cudnn=8)"
    )


def test_gpu_packages_must_be_pinned_exactly():
    with pytest.raises(ValueError, match="pin every package exactly"):
        declared_with(gpu_packages=("cupy-cuda12x>=13",))


# -- images on GPU pools -------------------------------------------------------------------------


def profile_for(*instance_types: str) -> SchedulingProfile:
    gpus = INSTANCE_TYPES[instance_types[0]].gpus
    profile = SchedulingProfile.from_config(
        {
            "pool": "gpus",
            "gpusPerNode": gpus,
            "nodeSelector": {"trainjobs.io/gpu-pool": "gpus"},
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists"}],
            "instanceTypes": list(instance_types),
        }
    )
    assert profile is not None
    return profile


def gpu_job(image: str = CHAINERMN) -> JobDefinition:
    """jobs/chainermn-gpu.yaml with its containers running ``image``."""
    document = load_file(REPO / "jobs" / "chainermn-gpu.yaml")
    for replica in ("master", "worker"):
        document["spec"][replica]["template"]["spec"]["containers"][0]["image"] = image
    return parse_job(document, "chainermn-gpu.yaml")


@pytest.fixture
def old_cuda_image(monkeypatch) -> str:
    image = declared_with(
        CHAINERMN,
        reference="example/chainermn:7.8.1-cuda11.7",
        cuda={"version": "11.7.1", "cudnn": 8},
        gpu_packages=("cupy-cuda11x==13.6.0", "fastrlock==0.8.4"),
        build=None,
    )
    monkeypatch.setitem(IMAGES, image.reference, image)
    return image.reference


def test_every_gpu_model_of_the_known_instance_types_has_a_minimum_cuda():
    assert {gpu.gpu for gpu in INSTANCE_TYPES.values()} - MIN_CUDA.keys() == set()


def test_the_cuda_12_2_image_runs_on_a100_h100_a10g_and_l4_pools():
    for instance_type in ("p4d.24xlarge", "p5.48xlarge", "g5.48xlarge", "g6.xlarge"):
        assert cuda_problems(gpu_job().graph, profile_for(instance_type)) == []


def test_an_image_with_cuda_too_old_for_h100_is_refused_on_the_pool(old_cuda_image):
    with pytest.raises(UserError) as raised:
        check_images_on_pool([gpu_job(old_cuda_image).graph], profile_for("p5.48xlarge"))
    message = (
        "example/chainermn:7.8.1-cuda11.7 has CUDA 11.7.1, but p5.48xlarge has H100 GPUs "
        "(Hopper, compute capability 9.0), which need CUDA 11.8 or later; build the image on a "
        "newer CUDA base (e.g. nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04) or use another GPU "
        "pool"
    )
    assert str(raised.value) == (
        "ChainerJob chainermn-gpu: images too old for GPU pool 'gpus' (2 problem(s))\n"
        f"  StatefulSet/chainermn-gpu-worker: spec.template.spec.containers[0].image: {message}\n"
        f"  Job/chainermn-gpu-master: spec.template.spec.containers[0].image: {message}"
    )


def test_the_same_old_image_is_fine_on_an_a100_pool(old_cuda_image):
    assert cuda_problems(gpu_job(old_cuda_image).graph, profile_for("p4d.24xlarge")) == []


def test_cuda_12_2_is_too_old_for_b200():
    problems = cuda_problems(gpu_job().graph, profile_for("p6-b200.48xlarge"))
    assert [str(p) for p in problems][:1] == [
        "StatefulSet/chainermn-gpu-worker: spec.template.spec.containers[0].image: "
        f"{CHAINERMN} has CUDA 12.2.2, but p6-b200.48xlarge has B200 GPUs (Blackwell, compute "
        "capability 10.0), which need CUDA 12.8 or later; build the image on a newer CUDA base "
        "(e.g. nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04) or use another GPU pool"
    ]


def test_a_declared_image_named_in_a_registry_is_recognised():
    assert declared_image(f"{REGISTRY}/{CHAINERMN}") is IMAGES[CHAINERMN]
    assert declared_image("localhost:5000/trainjobs/chainer:7.8.1-cuda12.2") is IMAGES[CHAINER]
    assert declared_image("someone/trainjobs:1") is None


def test_the_example_gpu_job_names_the_image_in_ecr_and_is_checked_against_its_pool():
    job = load_job(REPO / "jobs" / "chainermn-gpu.yaml")
    problems = cuda_problems(job.graph, profile_for("p6-b200.48xlarge"))
    assert [p.message.split(" has ")[0] for p in problems] == [f"{REGISTRY}/{CHAINERMN}"] * 2


# -- pinning jobs by digest ----------------------------------------------------------------------


PINS = {CHAINERMN: CHAINERMN_AT_DIGEST, DEFAULT_KUBECTL_IMAGE: KUBECTL_AT_DIGEST}


def container_images(graph) -> dict[str, list[str]]:
    return {
        node.key: [
            c["image"]
            for group in ("initContainers", "containers")
            for c in node.manifest["spec"]["template"]["spec"].get(group) or []
        ]
        for node in graph.nodes
        if node.kind in ("Job", "StatefulSet")
    }


def test_pinning_replaces_every_container_image_including_init_containers():
    assert container_images(pin_images(gpu_job().graph, PINS)) == {
        "StatefulSet/chainermn-gpu-worker": [CHAINERMN_AT_DIGEST],
        "Job/chainermn-gpu-master": [KUBECTL_AT_DIGEST, KUBECTL_AT_DIGEST, CHAINERMN_AT_DIGEST],
    }


def test_pinning_leaves_the_original_graph_untouched():
    graph = gpu_job().graph
    before = copy.deepcopy(graph.manifests())
    pin_images(graph, PINS)
    assert graph.manifests() == before


def test_a_pin_that_is_a_tag_is_refused():
    with pytest.raises(UserError) as raised:
        pin_images(gpu_job().graph, {CHAINERMN: f"{REGISTRY}/trainjobs/chainermn:latest"})
    assert str(raised.value) == (
        "image pins: 1 problem(s)\n"
        f"  {CHAINERMN}: must be pinned by digest, as '<repository>@sha256:<64 hex digits>' "
        f"(got '{REGISTRY}/trainjobs/chainermn:latest'); a tag can move, a digest names "
        "exactly the image that was built"
    )


def test_requiring_digests_refuses_images_left_on_a_tag():
    with pytest.raises(UserError) as raised:
        pin_images(gpu_job().graph, {CHAINERMN: CHAINERMN_AT_DIGEST}, require_digests=True)
    assert str(raised.value) == (
        "ChainerJob chainermn-gpu: 2 image(s) not pinned by digest\n"
        "  Job/chainermn-gpu-master: spec.template.spec.initContainers[0].image: "
        "registry.k8s.io/kubectl:v1.34.2 is not pinned by digest; add it to trainjobs:images\n"
        "  Job/chainermn-gpu-master: spec.template.spec.initContainers[1].image: "
        "registry.k8s.io/kubectl:v1.34.2 is not pinned by digest; add it to trainjobs:images"
    )


def test_fully_pinned_job_passes_the_digest_requirement():
    pinned = pin_images(gpu_job().graph, PINS, require_digests=True)
    assert all(is_digest_pinned(i) for images in container_images(pinned).values() for i in images)


def test_pins_come_from_stack_config_as_an_object_or_its_json():
    assert image_pins_from_config(PINS) == PINS
    assert image_pins_from_config(json.dumps(PINS)) == PINS
    assert image_pins_from_config(None) == {}


def test_a_tag_in_the_pins_config_is_refused_with_the_image_named():
    with pytest.raises(ConfigError) as raised:
        image_pins_from_config({CHAINERMN: "trainjobs/chainermn:7.8.1-cuda12.2"})
    assert str(raised.value) == (
        "trainjobs:images: invalid image pins (1 problem(s))\n"
        f"  {CHAINERMN}: must be pinned by digest, as '<repository>@sha256:<64 hex digits>' "
        "(got 'trainjobs/chainermn:7.8.1-cuda12.2'); a tag can move, a digest names exactly "
        "the image that was built"
    )


def test_pinned_gpu_job_manifests_pass_strict_schema_validation():
    scheduled = apply_scheduling(gpu_job().graph, profile_for("p4d.24xlarge"))
    manifests = pin_images(scheduled, PINS).manifests()
    assert [p for m in manifests for p in schema_problems(m)] == []


# -- the CudaImage component under Pulumi mocks --------------------------------------------------

REPOSITORY = "aws:ecr/repository:Repository"
DOCKER_IMAGE = "docker-build:index:Image"
COMPONENT = "trainjobs:index:CudaImage"


class _AwsMocks(pulumi.runtime.Mocks):
    """ECR and docker-build as the providers answer: a repository URL, a pushed digest."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        state = dict(args.inputs)
        if args.typ == REPOSITORY:
            state["repositoryUrl"] = f"{REGISTRY}/{args.inputs['name']}"
            state["registryId"] = "123456789012"
        elif args.typ == DOCKER_IMAGE:
            state["digest"] = DIGEST
        return f"{args.name}-id", state

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        self.calls.append((args.token, dict(args.args)))
        if args.token == "aws:ecr/getAuthorizationToken:getAuthorizationToken":
            return {"userName": "AWS", "password": "ecr-token"}, []
        if args.token == "aws:ecr/getImage:getImage":
            return {"imageDigest": PREBUILT_DIGEST}, []
        return {}, []


class _Recording(mocks.MockMonitor):
    def __init__(self) -> None:
        self.aws = _AwsMocks()
        super().__init__(self.aws)
        self.registered: list[SimpleNamespace] = []

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registered.append(
                SimpleNamespace(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    parent=request.parent,
                    inputs=rpc.deserialize_properties(request.object, keep_unknowns=True),
                )
            )
        return response

    def only(self, type_: str) -> SimpleNamespace:
        (found,) = [r for r in self.registered if r.type == type_]
        return found


@pytest.fixture
def monitor(monkeypatch) -> Iterator[_Recording]:
    monkeypatch.chdir(REPO)  # the Pulumi project directory: paths are relative to it
    recording = _Recording()
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(recording.aws, preview=False, monitor=recording)
    yield recording


def outputs_of(make: Any) -> dict[str, Any]:
    """Run ``make`` under the mocks; the resolved ref, digest and tag of what it returns."""
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def program() -> pulumi.Output[Any]:
        image = make()
        return pulumi.Output.all(image.ref, image.digest, image.tag).apply(
            lambda values: seen.update(ref=values[0], digest=values[1], tag=values[2])
        )

    program()
    return seen


def test_cuda_image_creates_a_scan_on_push_ecr_repository_with_immutable_tags(monitor):
    outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN]))
    assert monitor.only(REPOSITORY).inputs == {
        "name": "trainjobs/chainermn",
        "imageScanningConfiguration": {"scanOnPush": True},
        "imageTagMutability": "IMMUTABLE",
        "tags": {"trainjobs.io/image": CHAINERMN},
    }


def test_cuda_image_builds_the_checked_in_dockerfile_and_pushes_it(monitor):
    outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN]))
    inputs = monitor.only(DOCKER_IMAGE).inputs
    registries = inputs["registries"]  # secret as a whole: it holds the ECR password
    (registry,) = registries["value"]
    assert inputs["context"] == {"location": "images"}
    assert inputs["dockerfile"] == {"location": "images/chainermn/Dockerfile"}
    assert inputs["tags"] == [f"{REGISTRY}/trainjobs/chainermn:{image_tag(IMAGES[CHAINERMN])}"]
    assert inputs["push"] is True
    assert inputs["platforms"] == ["linux/amd64"]
    assert inputs["buildOnPreview"] is False
    assert (registry["address"], registry["username"]) == (REGISTRY, "AWS")
    assert rpc.is_rpc_secret(registries)
    assert registry["password"] == "ecr-token"
    assert inputs["labels"]["org.opencontainers.image.title"] == CHAINERMN


def test_cuda_image_exports_the_repository_at_the_pushed_digest(monitor):
    assert outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN])) == {
        "ref": CHAINERMN_AT_DIGEST,
        "digest": DIGEST,
        "tag": image_tag(IMAGES[CHAINERMN]),
    }


def test_cuda_image_is_one_component_owning_its_repository_and_image(monitor):
    outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN]))
    component = monitor.only(COMPONENT)
    assert [(r.type, r.name) for r in monitor.registered] == [
        (COMPONENT, "chainermn"),
        (REPOSITORY, "chainermn"),
        (DOCKER_IMAGE, "chainermn"),
    ]
    assert {r.parent for r in monitor.registered if r is not component} == {component.urn}


def test_a_prebuilt_ecr_tag_resolves_to_its_digest(monitor):
    prebuilt = f"{REGISTRY}/trainjobs/chainermn:7.8.1-cuda12.2-0123456789ab"
    outputs = outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN], prebuilt=prebuilt))
    assert outputs == {
        "ref": f"{REGISTRY}/trainjobs/chainermn@{PREBUILT_DIGEST}",
        "digest": PREBUILT_DIGEST,
        "tag": None,
    }
    assert monitor.aws.calls == [
        (
            "aws:ecr/getImage:getImage",
            {
                "imageTag": "7.8.1-cuda12.2-0123456789ab",
                "region": "us-east-1",
                "registryId": "123456789012",
                "repositoryName": "trainjobs/chainermn",
            },
        )
    ]
    assert [r.type for r in monitor.registered] == [COMPONENT]


def test_a_prebuilt_reference_pinned_by_digest_is_used_as_is(monitor):
    prebuilt = f"ghcr.io/example/chainermn@{PREBUILT_DIGEST}"
    outputs = outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN], prebuilt=prebuilt))
    assert outputs == {"ref": prebuilt, "digest": PREBUILT_DIGEST, "tag": None}
    assert monitor.aws.calls == []


def test_a_prebuilt_tag_outside_ecr_is_refused_before_anything_is_registered(monitor):
    with pytest.raises(UserError) as raised:
        CudaImage("chainermn", IMAGES[CHAINERMN], prebuilt="ghcr.io/example/chainermn:1")
    assert str(raised.value) == (
        f"prebuilt image 'ghcr.io/example/chainermn:1' for {CHAINERMN}: give it pinned by "
        "digest (<repository>@sha256:<digest>; `docker buildx imagetools inspect IMAGE` prints "
        "it), or as an ECR tag (<account>.dkr.ecr.<region>.amazonaws.com/<repository>:<tag>), "
        "which is resolved to its digest; other registries' tags cannot be resolved here"
    )
    assert monitor.registered == []


def test_a_stale_dockerfile_is_refused_before_anything_is_registered(monitor, monkeypatch):
    monkeypatch.setattr("trainjobs.images.cuda_image.render", lambda image: "FROM scratch\n")
    with pytest.raises(UserError) as raised:
        CudaImage("chainermn", IMAGES[CHAINERMN])
    assert str(raised.value) == (
        f"images/chainermn/Dockerfile does not match the declaration of {CHAINERMN}: run "
        "`make images` and commit the result"
    )
    assert monitor.registered == []


def test_a_job_using_the_built_image_runs_it_by_digest_in_every_container(monitor):
    ref = outputs_of(lambda: CudaImage("chainermn", IMAGES[CHAINERMN]))["ref"]
    pinned = pin_images(gpu_job().graph, {CHAINERMN: ref, DEFAULT_KUBECTL_IMAGE: KUBECTL_AT_DIGEST})
    job = dataclasses.replace(gpu_job(), graph=pinned)

    @pulumi.runtime.test
    def register() -> None:
        TrainingJob(job)

    register()
    workloads = {
        r.name: r.inputs["spec"]["template"]["spec"]
        for r in monitor.registered
        if r.type in ("kubernetes:batch/v1:Job", "kubernetes:apps/v1:StatefulSet")
    }
    assert {
        name: [c["image"] for c in [*pod.get("initContainers", []), *pod["containers"]]]
        for name, pod in workloads.items()
    } == {
        "chainermn-gpu-worker": [CHAINERMN_AT_DIGEST],
        "chainermn-gpu-master": [KUBECTL_AT_DIGEST, KUBECTL_AT_DIGEST, CHAINERMN_AT_DIGEST],
    }


IMAGES_PROGRAM = """
from trainjobs.images.cuda_image import images_from_config

images_from_config()
"""


def images_project(tmp_path: Path, images: Any) -> Path:
    (tmp_path / "__main__.py").write_text(IMAGES_PROGRAM)
    config = {"aws:region": "us-east-1", "trainjobs-infra:images": images}
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def test_an_images_stack_builds_each_configured_image_and_exports_the_refs(tmp_path):
    result = run_preview("test", images_project(tmp_path, [{"image": CHAINERMN}]))
    assert [(r.type, r.name) for r in result.resources] == [
        (COMPONENT, "trainjobs-chainermn"),
        (REPOSITORY, "trainjobs-chainermn"),
        (DOCKER_IMAGE, "trainjobs-chainermn"),
    ]
    assert result.outputs == {"images": {CHAINERMN: "[known after pulumi up]"}}


def test_a_stack_without_images_declares_and_exports_none(tmp_path):
    project = images_project(tmp_path, [])
    (project / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}))
    result = run_preview("test", project)
    assert (result.resources, result.outputs) == ([], {})


def test_an_images_stack_refuses_an_undeclared_image(tmp_path):
    with pytest.raises(UserError) as raised:
        run_preview("test", images_project(tmp_path, [{"image": "trainjobs/other:1"}]))
    assert str(raised.value) == (
        "trainjobs-infra:images[0].image: 'trainjobs/other:1' is not declared "
        f"(trainjobs/chainer:7.8.1, trainjobs/chainermn:7.8.1, {CHAINER}, {CHAINERMN}, "
        "trainjobs/pytorch:2.13.0-cpu, trainjobs/tensorflow:2.20.0-cpu, "
        "trainjobs/xgboost-paddle-jax:2026.11-cpu)"
    )


def pinning_project(tmp_path: Path, config: dict[str, Any]) -> Path:
    """The real program with the GPU example job naming the declared image, and ``config``."""
    (tmp_path / "jobs").mkdir()
    document = load_file(REPO / "jobs" / "chainermn-gpu.yaml")
    for replica in ("master", "worker"):
        document["spec"][replica]["template"]["spec"]["containers"][0]["image"] = CHAINERMN
    (tmp_path / "jobs" / "job.yaml").write_text(yaml.safe_dump(document))
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    config = {"trainjobs:job": "jobs/job.yaml", "trainjobs:watch": False, **config}
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def test_a_job_stack_with_image_pins_in_its_config_deploys_digests_only(tmp_path):
    project = pinning_project(
        tmp_path, {"trainjobs:images": PINS, "trainjobs:requireDigests": True}
    )

    objects = {r.name: r.inputs for r in run_preview("test", project).kubernetes_objects()}
    images = {
        name: [c["image"] for c in [*pod.get("initContainers", []), *pod["containers"]]]
        for name, manifest in objects.items()
        if manifest["kind"] in ("Job", "StatefulSet")
        for pod in [manifest["spec"]["template"]["spec"]]
    }
    assert images == {
        "chainermn-gpu-worker": [CHAINERMN_AT_DIGEST],
        "chainermn-gpu-master": [KUBECTL_AT_DIGEST, KUBECTL_AT_DIGEST, CHAINERMN_AT_DIGEST],
    }
    assert [p for m in objects.values() for p in schema_problems(m)] == []


def test_a_stack_requiring_digests_refuses_an_unpinned_image_and_writes_nothing(tmp_path, capsys):
    pins = {CHAINERMN: CHAINERMN_AT_DIGEST}
    project = pinning_project(
        tmp_path, {"trainjobs:images": pins, "trainjobs:requireDigests": True}
    )
    out = tmp_path / "out"

    assert main(["preview", "--stack", "test", "--project", str(project), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        "error: ChainerJob chainermn-gpu: 2 image(s) not pinned by digest\n"
        "  Job/chainermn-gpu-master: spec.template.spec.initContainers[0].image: "
        "registry.k8s.io/kubectl:v1.34.2 is not pinned by digest; add it to trainjobs:images\n"
        "  Job/chainermn-gpu-master: spec.template.spec.initContainers[1].image: "
        "registry.k8s.io/kubectl:v1.34.2 is not pinned by digest; add it to trainjobs:images\n"
    )
    assert not out.exists()


def test_without_require_digests_unpinned_images_stay_on_their_tags(tmp_path):
    project = pinning_project(tmp_path, {"trainjobs:images": {CHAINERMN: CHAINERMN_AT_DIGEST}})

    objects = {r.name: r.inputs for r in run_preview("test", project).kubernetes_objects()}
    master = objects["chainermn-gpu-master"]["spec"]["template"]["spec"]
    assert [c["image"] for c in [*master["initContainers"], *master["containers"]]] == [
        DEFAULT_KUBECTL_IMAGE,
        DEFAULT_KUBECTL_IMAGE,
        CHAINERMN_AT_DIGEST,
    ]


# -- the training script's GPU path --------------------------------------------------------------


def training_script() -> Any:
    spec = importlib.util.spec_from_file_location(
        "train_mnist", REPO / "images" / "scripts" / "train_mnist.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # chainer's own import-time checks
def test_each_rank_trains_on_the_gpu_of_its_node_local_rank():
    script = training_script()
    assert script.device_spec(True, SimpleNamespace(intra_rank=3)) == "@cupy:3"
    assert script.device_spec(True, None) == "@cupy:0"
    assert script.device_spec(False, SimpleNamespace(intra_rank=3)) == "@numpy"


def _cuda_available() -> bool:
    try:
        import cupy  # type: ignore[import-not-found]

        return bool(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return False


@pytest.mark.skipif(not _cuda_available(), reason="needs CuPy and a CUDA GPU")
def test_the_training_script_trains_on_a_gpu():
    result = subprocess.run(
        [sys.executable, str(REPO / "images" / "scripts" / "train_mnist.py"), "--gpu"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
        timeout=600,
    )
    assert result.stdout.splitlines()[-1].startswith("final validation accuracy: ")
