"""The infra stack's GPU pool profiles and image digests, read through a StackReference.

A job stack names the infra stack instead of copying its outputs' JSON into its config.
The infra program (``infra/__main__.py``) exports ``schedulingProfiles`` (pool name ->
:class:`~trainjobs.cloud.scheduling.SchedulingProfile` in its wire form) and ``images``
(declared reference -> ``repo@sha256:...``). A program awaits them in the entrypoint it gives
``pulumi.run`` (run after its module code), before it registers the jobs, so a job's graph
stays plain data and pre-flight checks see the same profile as with ``trainjobs:gpuPool``.
The SDK reads a stack reference's outputs when it registers it (``pulumi/stack_reference.py``:
``get_output_details``, public and awaitable).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pulumi

from trainjobs.cloud.scheduling import SchedulingProfile
from trainjobs.core.errors import UserError
from trainjobs.images.pinning import image_pins_from_config

PROFILES_OUTPUT = "schedulingProfiles"
IMAGES_OUTPUT = "images"
STACK_REFERENCES_FILE = "stack-references.json"
"""Offline stand-in for the stacks a project references (offline previews, `trainjobs
preflight` without the Pulumi CLI): stack name -> its outputs, as `pulumi stack output
--stack NAME --json` prints them."""


class InfraStack:
    """An infrastructure stack, e.g. ``InfraStack("org/trainjobs-infra/gpu-a100")``.

    ``stack``: the fully qualified stack name (``<org>/<project>/<stack>``). ``opts``
    (default None): options of the ``pulumi.StackReference`` resource, named as the stack.
    Its values are awaited, in the program's ``pulumi.run`` entrypoint::

        infra = InfraStack("org/trainjobs-infra/gpu-a100")

        async def main() -> None:
            pool = await infra.gpu_pool()
            images = await infra.images()
            ...  # the jobs, on that pool

        pulumi.run(main)
    """

    def __init__(self, stack: str, opts: pulumi.ResourceOptions | None = None) -> None:
        self.stack = stack
        """The referenced stack's name."""
        self.reference = pulumi.StackReference(stack, opts=opts)
        """The ``pulumi.StackReference`` resource."""

    async def output(self, name: str) -> Any:
        """A stack output's plain value (a secret's too); None when the stack lacks it."""
        details = await self.reference.get_output_details(name)
        return details.value if details.secret_value is None else details.secret_value

    async def gpu_pool(self, pool: str | None = None) -> SchedulingProfile:
        """The scheduling profile of the stack's pool ``pool`` (default None: the stack's only
        pool). Raises :class:`UserError` naming the stack and the pools it has."""
        return pool_profile(self.stack, await self.output(PROFILES_OUTPUT), pool)

    async def images(self) -> dict[str, str]:
        """The stack's image pins (declared reference -> ``repo@sha256:...``); empty when it
        builds no images."""
        return image_pins_from_config(
            await self.output(IMAGES_OUTPUT), source=f"{self.stack} {IMAGES_OUTPUT}"
        )


def pool_profile(stack: str, profiles: Any, pool: str | None = None) -> SchedulingProfile:
    """Pool ``pool`` (default None: the only one) of an infra stack's ``schedulingProfiles``
    output ``profiles``."""
    if not isinstance(profiles, dict) or not profiles:
        raise UserError(
            f"stack {stack} exports no GPU pool ({PROFILES_OUTPUT} is {profiles!r}); deploy "
            "the infra stack with trainjobs-infra:pools first"
        )
    if pool is None:
        if len(profiles) > 1:
            raise UserError(
                f"stack {stack} has GPU pools {', '.join(sorted(profiles))}: name one with "
                "trainjobs:gpuPoolName"
            )
        pool = next(iter(profiles))
    if pool not in profiles:
        raise UserError(
            f"trainjobs:gpuPoolName: stack {stack} has no GPU pool {pool!r} (it has "
            f"{', '.join(sorted(profiles))})"
        )
    profile = SchedulingProfile.from_config(
        profiles[pool], source=f"{stack} {PROFILES_OUTPUT}.{pool}"
    )
    assert profile is not None  # an exported profile is an object
    return profile


def stack_references(project_dir: Path) -> dict[str, Any]:
    """The referenced stacks' outputs of :data:`STACK_REFERENCES_FILE`; none without it."""
    path = project_dir / STACK_REFERENCES_FILE
    if not path.is_file():
        return {}
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise UserError(f"{path.name}: not valid JSON: {error}") from None
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise UserError(f"{path.name}: must map each stack name to its outputs (an object)")
    return value


def stack_outputs(project_dir: Path, stack: str) -> dict[str, Any]:
    """A referenced stack's outputs outside a Pulumi program: from
    :data:`STACK_REFERENCES_FILE` when it names the stack, else from the Pulumi CLI."""
    saved = stack_references(project_dir)
    if stack in saved:
        return dict(saved[stack])
    command = ["pulumi", "stack", "output", "--stack", stack, "--json", "--show-secrets"]
    try:
        done = subprocess.run(command, cwd=project_dir, capture_output=True, text=True)
    except FileNotFoundError:
        done = None
    if done is None or done.returncode != 0:
        detail = "the pulumi CLI is not installed" if done is None else done.stderr.strip()
        raise UserError(
            f"cannot read the outputs of stack {stack} ({detail}); log in to its backend, or "
            f"save them under its name in {STACK_REFERENCES_FILE}"
        )
    outputs = json.loads(done.stdout)
    return outputs if isinstance(outputs, dict) else {}
