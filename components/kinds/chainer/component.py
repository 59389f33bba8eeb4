"""The public ChainerJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.chainer import kind
from trainjobs.kinds.chainer.spec import ChainerJobSpec

__all__ = ["ChainerJob", "ChainerJobSpec"]


class ChainerJob(KubeflowJob[ChainerJobSpec]):
    """A ChainerJob (``kubeflow.org/v1alpha1``): a master Job and worker StatefulSets that
    ChainerMN runs over MPI. Typed ``trainjobs:index:ChainerJob``; arguments as
    :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = ChainerJobSpec
