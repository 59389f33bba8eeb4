"""The public XGBoostJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from trainjobs.deploy.jobs import KubeflowJob
from trainjobs.kinds.xgboostjob import kind
from trainjobs.kinds.xgboostjob.spec import XGBoostJobSpec

__all__ = ["XGBoostJob", "XGBoostJobSpec"]


class XGBoostJob(KubeflowJob[XGBoostJobSpec]):
    """An XGBoostJob (``kubeflow.org/v1``) as training-operator v1.9 runs it: one Job or
    StatefulSet per replica, with XGBoost's collective environment (RANK, WORLD_SIZE,
    MASTER_ADDR...); the Master decides. Typed ``trainjobs:index:XGBoostJob``; arguments as
    :class:`KubeflowJob`'s."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = XGBoostJobSpec
