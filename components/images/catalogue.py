"""The images trainjobs declares: what each carries, and lookup by the reference jobs name."""

from __future__ import annotations

from components.core.errors import UserError
from components.core.graph import DEFAULT_KUBECTL_IMAGE
from components.images.declarations import (
    _CUDA_12,
    _DEBIAN_12,
    _MPI4PY,
    Image,
    ImageBuild,
    ImageFile,
    OpenMpi,
)

_TRAINING_SCRIPT = ImageFile(path="/train_mnist.py", source="images/scripts/train_mnist.py")


_CHAINER_PACKAGES = ("numpy==1.23.5", "scipy==1.11.4", "scikit-learn==1.3.2", "chainer==7.8.1")


# Rank output must reach mpiexec (and the pod log) line by line, not in 8 KiB blocks.
_PYTHON_ENV = {"PYTHONUNBUFFERED": "1"}


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
        "Declare it in components/images/catalogue.py (an Image in IMAGES: its files as "
        "in-image path -> repository file, and its pinned Python packages), or run it as a "
        f"declared image "
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
