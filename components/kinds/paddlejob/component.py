"""The public PaddleJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.paddlejob import kind
from trainjobs.kinds.paddlejob.spec import PaddleJobSpec

__all__ = ["PaddleJob", "PaddleJobSpec"]


class PaddleJob(KubeflowJob[PaddleJobSpec]):
    """A PaddleJob (``kubeflow.org/v1``) as training-operator v1.9 runs it: one Job or
    StatefulSet per replica, with Paddle's launcher environment (PADDLE_MASTER,
    PADDLE_NNODES...). Typed ``trainjobs:index:PaddleJob``; arguments as
    :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = PaddleJobSpec
