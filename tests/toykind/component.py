"""The public EchoJob component."""

from tests.toykind import kind
from tests.toykind.spec import EchoJobSpec
from trainjobs.deploy.jobs import KubeflowJob


class EchoJob(KubeflowJob[EchoJobSpec]):
    """An EchoJob: one Indexed Job of identical pods."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = EchoJobSpec
