"""The infra stack's GPU pool profiles and image digests, read through a StackReference.

A job stack names the infra stack instead of copying its outputs' JSON into its config.
The infra program (``infra/__main__.py``) exports ``schedulingProfiles`` (pool name ->
:class:`~trainjobs.cloud.scheduling.SchedulingProfile` in its wire form) and ``images``
(declared reference -> ``repo@sha256:...``). The values are read while the program runs,
before any job is registered, so a job's graph stays plain data and pre-flight checks see the
same profile as with ``trainjobs:gpuPool``. The SDK reads a stack reference's outputs when it
registers it (``pulumi/stack_reference.py``: ``get_output_details``).
"""

from __future__ import annotations

from typing import Any

import pulumi
from pulumi.runtime.sync_await import _sync_await

from trainjobs.cloud.scheduling import SchedulingProfile
from trainjobs.core.errors import UserError
from trainjobs.images.pinning import image_pins_from_config

PROFILES_OUTPUT = "schedulingProfiles"
IMAGES_OUTPUT = "images"


class InfraStack:
    """An infrastructure stack, e.g. ``InfraStack("org/trainjobs-infra/gpu-a100")``.

    ``stack``: the fully qualified stack name (``<org>/<project>/<stack>``). ``opts``
    (default None): options of the ``pulumi.StackReference`` resource, named as the stack.
    """

    def __init__(self, stack: str, opts: pulumi.ResourceOptions | None = None) -> None:
        self.stack = stack
        """The referenced stack's name."""
        self.reference = pulumi.StackReference(stack, opts=opts)
        """The ``pulumi.StackReference`` resource."""

    def output(self, name: str) -> Any:
        """A stack output's plain value (a secret's too); None when the stack lacks it."""
        details = _sync_await(self.reference.get_output_details(name))
        return details.value if details.secret_value is None else details.secret_value

    def gpu_pool(self, pool: str | None = None) -> SchedulingProfile:
        """The scheduling profile of the stack's pool ``pool`` (default None: the stack's only
        pool). Raises :class:`UserError` naming the stack and the pools it has."""
        profiles = self.output(PROFILES_OUTPUT)
        if not isinstance(profiles, dict) or not profiles:
            raise UserError(
                f"stack {self.stack} exports no GPU pool ({PROFILES_OUTPUT} is "
                f"{profiles!r}); deploy the infra stack with trainjobs-infra:pools first"
            )
        if pool is None:
            if len(profiles) > 1:
                raise UserError(
                    f"stack {self.stack} has GPU pools {', '.join(sorted(profiles))}: name one "
                    f"with trainjobs:gpuPoolName"
                )
            pool = next(iter(profiles))
        if pool not in profiles:
            raise UserError(
                f"trainjobs:gpuPoolName: stack {self.stack} has no GPU pool {pool!r} (it has "
                f"{', '.join(sorted(profiles))})"
            )
        profile = SchedulingProfile.from_config(
            profiles[pool], source=f"{self.stack} {PROFILES_OUTPUT}.{pool}"
        )
        assert profile is not None  # an exported profile is an object
        return profile

    def images(self) -> dict[str, str]:
        """The stack's image pins (declared reference -> ``repo@sha256:...``); empty when it
        builds no images."""
        return image_pins_from_config(
            self.output(IMAGES_OUTPUT), source=f"{self.stack} {IMAGES_OUTPUT}"
        )
