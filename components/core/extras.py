"""Optional dependencies: the packages of a feature that `make run` does not install.

Each extra matches a ``requirements-<extra>.txt``, a ``make setup-<extra>`` target and a
``pip install 'trainjobs[<extra>]'`` extra. A feature that needs a missing one stops with a
single line saying how to install it, never an ImportError traceback: the make target when
trainjobs runs from its source checkout (the Makefile beside the package), the pip extra when
it was installed from a wheel, where there is no Makefile to run.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType

from trainjobs.core.errors import UserError

EXTRAS = {
    "pulumi_aws": ("pulumi-aws", "aws"),
    "boto3": ("boto3", "aws"),
    "botocore": ("boto3", "aws"),
    "pulumi_docker_build": ("pulumi-docker-build", "images"),
}
"""Top-level module -> (its distribution, the extra that installs it)."""


class MissingExtra(UserError):
    """A feature needs an extra that is not installed."""


def import_extra(module: str, feature: str) -> ModuleType:
    """Import ``module`` (one of :data:`EXTRAS`, or a submodule of one) for ``feature``."""
    top = module.partition(".")[0]
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if error.name is None or error.name.partition(".")[0] != top:
            raise  # the extra is there but broken: not a missing install
        distribution, extra = EXTRAS[top]
        raise MissingExtra(
            f"{feature} needs {distribution}, which is not installed: {install_hint(extra)}"
        ) from None


def source_checkout() -> Path | None:
    """The checkout trainjobs runs from (its Makefile and pins beside the package, which is
    ``components/`` there), or None when it was installed from a wheel or an sdist."""
    root = Path(__file__).resolve().parents[2]
    if (root / "Makefile").is_file() and (root / "requirements.txt").is_file():
        return root
    return None


def install_hint(extra: str) -> str:
    """How to install ``extra`` where trainjobs runs from."""
    if source_checkout() is not None:
        return f"run `make setup-{extra}`"
    return f"run `pip install 'trainjobs[{extra}]'`"
