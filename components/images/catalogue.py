"""The images trainjobs declares: what each carries, and lookup by the reference jobs name."""

from __future__ import annotations

from trainjobs.core.errors import UserError
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE
from trainjobs.images.declarations import Image
from trainjobs.images.image_parts import CudaBase, DebianBase, ImageBuild, ImageFile, OpenMpi

_MPI4PY = "mpi4py==3.1.6"  # ChainerMN's MPI binding
# The CUDA images carry what the CPU ones do, plus CuPy 13 (the last CuPy for NumPy 1 and
# cuDNN) on CUDA 12.2 with cuDNN 8; ChainerMN's adds NCCL (in the base image) and CUDA-aware
# Open MPI. Shared pins equal requirements.txt's, so a local run runs the same Python code.
_CUDA_12 = CudaBase(version="12.2.2", cudnn=8)
_DEBIAN_12 = DebianBase(version="12.12")

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

# requirements-tensorflow.txt's closure (a test keeps them equal).
_TENSORFLOW_PACKAGES = (
    "tensorflow-cpu==2.20.0",
    "numpy==2.4.6",
    "scipy==1.17.1",
    "scikit-learn==1.9.1",
)
_TENSORFLOW_DEPENDENCIES = (
    "absl-py==2.5.1",
    "astunparse==1.6.3",
    "certifi==2026.10.18",
    "charset-normalizer==3.5.2",
    "cloudpickle==3.1.2",
    "flatbuffers==25.12.19",
    "gast==0.7.0",
    "google-pasta==0.2.0",
    "grpcio==1.85.1",
    "h5py==3.16.0",
    "idna==3.20",
    "joblib==1.6.0",
    "keras==3.15.1",
    "libclang==18.1.1",
    "Markdown==3.11.3",
    "markdown-it-py==4.3.0",
    "MarkupSafe==3.0.4",
    "mdurl==0.1.2",
    "ml_dtypes==0.6.0",
    "namex==0.1.0",
    "narwhals==2.29.0",
    "opt_einsum==3.4.0",
    "optree==0.20.0",
    "pillow==13.0.0",
    "protobuf==7.36.2",
    "Pygments==2.21.0",
    "requests==2.34.2",
    "rich==15.0.0",
    "six==1.17.0",
    "tensorboard==2.20.0",
    "tensorboard-data-server==0.7.2",
    "termcolor==3.3.0",
    "threadpoolctl==3.8.0",
    "typing_extensions==4.16.0",
    "urllib3==2.8.0",
    "Werkzeug==3.1.9",
    "wrapt==2.5.2",
)
_CUPY = ("cupy-cuda12x==13.6.0", "fastrlock==0.8.4")

# Images without Chainer take a current setuptools (torch 2.13 declares setuptools>=77.0.3).
_CURRENT_BOOTSTRAP = ("pip==25.3", "setuptools==80.9.0", "wheel==0.48.0", "packaging==26.3")

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

# requirements-{xgboost,paddle,jax}.txt's dependencies, and the core's that they use.
_XGBOOST_PADDLE_JAX_DEPENDENCIES = (
    "anyio==4.16.0",
    "certifi==2026.10.19.post1",
    "cloudpickle==3.1.2",
    "h11==0.16.0",
    "httpcore==1.0.9",
    "httpx==0.28.1",
    "idna==3.20",
    "joblib==1.6.0",
    "ml_dtypes==0.5.4",
    "networkx==3.6.1",
    "opt_einsum==3.3.0",
    "pillow==13.0.0",
    "protobuf==6.33.6",
    "safetensors==0.8.0",
    "threadpoolctl==3.8.0",
    "typing_extensions==4.16.0",
)

# The ssh transport (trainjobs:mpiTransport ssh): sshd in every worker, ssh in the master.
_SSH_PACKAGES = ("openssh-server", "openssh-client")

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
            apt_packages=("openmpi-bin", "libopenmpi-dev", *_SSH_PACKAGES),
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
            apt_packages=_SSH_PACKAGES,
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
            entrypoint=("python3", "/train_pytorch.py"),
            local_setup="make setup-pytorch",
            build=ImageBuild(
                directory="pytorch-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                # torch 2.13 declares setuptools>=77.0.3; this image carries no Chainer.
                python_bootstrap=_CURRENT_BOOTSTRAP,
                python_dependencies=_TORCH_DEPENDENCIES,
                # PyPI's torch wheel is the CUDA build (gigabytes of nvidia-* packages).
                package_indexes={"torch": "https://download.pytorch.org/whl/cpu"},
            ),
        ),
        Image(
            reference="trainjobs/tensorflow:2.20.0-cpu",
            summary="TensorFlow 2.20 on CPU with the digits training script (ParameterServer"
            "Strategy: the chief trains, workers and parameter servers serve; the TFJob example).",
            debian=_DEBIAN_12,
            python_packages=_TENSORFLOW_PACKAGES,
            files=(
                ImageFile(path="/train_tensorflow.py", source="images/scripts/train_tensorflow.py"),
            ),
            env={**_PYTHON_ENV, "TF_CPP_MIN_LOG_LEVEL": "2"},
            entrypoint=("python3", "/train_tensorflow.py"),
            # TensorFlow needs NumPy 2, which Chainer cannot share: its own virtualenv.
            local_environment=".venv-tensorflow",
            local_setup="make setup-tf",
            build=ImageBuild(
                directory="tensorflow-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_CURRENT_BOOTSTRAP,
                python_dependencies=_TENSORFLOW_DEPENDENCIES,
            ),
        ),
        # XGBoostJob, PaddleJob and JAXJob examples (CPU), one image for the three: pins equal
        # requirements.txt's and the three extras' (requirements-{xgboost,paddle,jax}.txt).
        Image(
            reference="trainjobs/xgboost-paddle-jax:2026.11-cpu",
            summary="XGBoost 3.2, PaddlePaddle 3.3 and JAX 0.4.30 on CPU with their digits "
            "training scripts (XGBoost's collective, Paddle's collective launch, "
            "jax.distributed over gloo; the XGBoostJob, PaddleJob and JAXJob examples).",
            debian=_DEBIAN_12,
            # PaddlePaddle's CPU library links GNU OpenMP, which Debian's slim image lacks.
            apt_packages=("libgomp1",),
            python_packages=(
                "xgboost-cpu==3.2.0",
                "paddlepaddle==3.3.1",
                "jax==0.4.30",
                "jaxlib==0.4.30",
                "numpy==1.23.5",
                "scipy==1.11.4",
                "scikit-learn==1.3.2",
            ),
            files=(
                ImageFile(path="/train_xgboost.py", source="images/scripts/train_xgboost.py"),
                ImageFile(path="/train_paddle.py", source="images/scripts/train_paddle.py"),
                ImageFile(path="/train_jax.py", source="images/scripts/train_jax.py"),
            ),
            env=_PYTHON_ENV,
            local_setup="make setup-xgboost setup-paddle setup-jax",
            build=ImageBuild(
                directory="xgboost-paddle-jax-cpu",
                apt_snapshot=_APT_SNAPSHOT,
                python_bootstrap=_CURRENT_BOOTSTRAP,
                python_dependencies=_XGBOOST_PADDLE_JAX_DEPENDENCIES,
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


USER_IMAGES: dict[str, Image] = {}
"""The images the user declared beside the job being run (:mod:`.user_images` fills it)."""


def resolve(reference: str, aliases: dict[str, str] | None = None) -> Image:
    """The declaration for ``reference`` (after ``aliases``: reference -> declared reference).

    An undeclared image is a user error whose message says every way out, because a process
    run cannot know what an arbitrary image carries.
    """
    declared = (aliases or {}).get(reference, reference)
    image = IMAGES.get(declared) or USER_IMAGES.get(declared)
    if image is not None:
        return image
    known = ", ".join(sorted([*IMAGES, *USER_IMAGES]))
    if declared != reference:
        raise UserError(f"--map-image {reference}={declared}: {declared!r} is not declared")
    raise UserError(
        f"image {reference!r} is not declared for process runs, which cannot look inside it: "
        "run the job with --runtime container (the image itself), declare the image in "
        "trainjobs-images.yaml beside the job (its in-image files and pinned Python packages), "
        f"or run it as a declared image with --map-image {reference}=DECLARED (declared: "
        f"{known})"
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
