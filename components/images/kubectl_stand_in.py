"""The kubectl image of local container runs: trainjobs' kubectl stand-in and its python3.

A job's master copies kubectl from ``registry.k8s.io/kubectl`` (an init container) and its
cluster waiter runs there; a container run has no API server for the real kubectl to talk
to, so that image runs as this one, whose ``/bin/kubectl`` hands each call to the run's API
stand-in (:mod:`trainjobs.local.container.kubectl`). It is built locally from the Debian base
and carries nothing else but ``python3-minimal``. Where no kubectl image can be pulled it is
also the ``KUBECTL_IMAGE`` of local builds (``trainjobs images configure --no-registry``).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path

from trainjobs.engines.engine import Engine
from trainjobs.images.build_context import REPO_ROOT
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.builder import Recipe, Say, build, current
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.dockerfiles import BASE_IMAGE_ARG, apt_install_step

REFERENCE = "localhost/trainjobs/kubectl:stand-in"
CLIENT = REPO_ROOT / "components" / "local" / "container" / "kubectl.py"
_DEBIAN = IMAGES["trainjobs/chainermn:7.8.1"].debian
assert _DEBIAN is not None

DOCKERFILE = (
    f"# {REFERENCE}: the kubectl of local container runs (components/images/kubectl_stand_in.py).\n"
    f"ARG {BASE_IMAGE_ARG}={_DEBIAN.image}\n"
    f"FROM ${{{BASE_IMAGE_ARG}}}\n"
    + apt_install_step({"python3-minimal"})
    + "COPY kubectl /bin/kubectl\n"
)


def recipe_hash() -> str:
    return hashlib.sha256(DOCKERFILE.encode() + b"\0" + CLIENT.read_bytes()).hexdigest()


def ensure(engine: Engine, settings: BuildSettings, say: Say) -> str:
    """The stand-in's reference, built first unless a current one exists."""
    digest = recipe_hash()
    if current(engine, REFERENCE, digest):
        return REFERENCE
    with tempfile.TemporaryDirectory(prefix="trainjobs-kubectl-") as work:
        context = Path(work) / "context"
        context.mkdir()
        shutil.copy(CLIENT, context / "kubectl")
        (context / "kubectl").chmod(0o755)
        (context / "Dockerfile").write_text(DOCKERFILE, encoding="utf-8")
        inputs = settings.inputs(Path(work), _DEBIAN, kubectl=False)
        build(engine, Recipe(REFERENCE, context / "Dockerfile", context, digest), inputs, say)
    return REFERENCE
