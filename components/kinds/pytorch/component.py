"""The public PyTorchJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.pytorch import kind
from trainjobs.kinds.pytorch.spec import PyTorchJobSpecV1 as PyTorchJobSpec

__all__ = ["PyTorchJob", "PyTorchJobSpec"]


class PyTorchJob(KubeflowJob[PyTorchJobSpec]):
    """A PyTorchJob (``kubeflow.org/v1``; earlier versions in a document or file): one Job or
    StatefulSet per replica, with torch.distributed's environment. Typed
    ``trainjobs:index:PyTorchJob``; arguments as :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = PyTorchJobSpec
