"""The public MPIJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.mpijob import kind
from trainjobs.kinds.mpijob.spec import MPIJobSpecV2Beta1 as MPIJobSpec

__all__ = ["MPIJob", "MPIJobSpec"]


class MPIJob(KubeflowJob[MPIJobSpec]):
    """An MPIJob (``kubeflow.org/v2beta1``, mpi-operator; ``v1`` and ``v1alpha2`` in a document
    or file): a launcher Job running mpirun and worker pods it reaches over ssh (kubectl exec
    before v2beta1). Typed ``trainjobs:index:MPIJob``; arguments as :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = MPIJobSpec
    API_VERSION = "kubeflow.org/v2beta1"
