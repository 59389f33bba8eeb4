"""The public JAXJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.jaxjob import kind
from trainjobs.kinds.jaxjob.spec import JAXJobSpec

__all__ = ["JAXJob", "JAXJobSpec"]


class JAXJob(KubeflowJob[JAXJobSpec]):
    """A JAXJob (``kubeflow.org/v1``) as training-operator v1.9 runs it: one Job or
    StatefulSet per Worker, with jax.distributed's environment (COORDINATOR_ADDRESS,
    NUM_PROCESSES, PROCESS_ID). Typed ``trainjobs:index:JAXJob``; arguments as
    :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = JAXJobSpec
