"""The public TFJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.tensorflow import kind
from trainjobs.kinds.tensorflow.spec import TFJobSpecV1 as TFJobSpec

__all__ = ["TFJob", "TFJobSpec"]


class TFJob(KubeflowJob[TFJobSpec]):
    """A TFJob (``kubeflow.org/v1``; earlier versions in a document or file): one Job or
    StatefulSet per replica, with TF_CONFIG. Typed ``trainjobs:index:TFJob``; arguments as
    :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = TFJobSpec
