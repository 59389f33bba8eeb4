"""``runAsNonRoot`` checked against the image's user, as the kubelet checks it at each start.

The kubelet's ``verifyRunAsNonRoot`` (kubernetes ``pkg/kubelet/kuberuntime/
security_context_others.go``), given the image's user as the CRI reports it
(``getUserFromImageUser`` in the CRI image service: the part before ``:``, a uid if it parses
as a base-10 int64, else a name; ``getImageUser`` in ``kuberuntime_container.go`` takes an
image without a user as uid 0). A container that fails it is never created: the kubelet leaves
it Waiting with reason :data:`REASON` and this message.
"""

from __future__ import annotations

import re
from typing import Any

from trainjobs.core.errors import UserError

REASON = "CreateContainerConfigError"
_INT64 = re.compile(r"[+-]?[0-9]+")
_MAX_INT32 = 2**31 - 1


class ContainerConfigError(UserError):
    """A container the kubelet would not create: the run fails with :data:`REASON`."""

    reason = REASON


def non_root_problem(
    pod_spec: dict[str, Any], container: dict[str, Any], image_user: str, pod: str
) -> str | None:
    """The kubelet's error for ``container`` running ``image_user``, or None.

    ``pod`` is the kubelet's ``format.Pod`` (``name_namespace``; a local pod has no UID)."""
    pod_context = pod_spec.get("securityContext") or {}
    own = container.get("securityContext") or {}
    non_root = own.get("runAsNonRoot", pod_context.get("runAsNonRoot"))
    if not non_root:
        return None
    where = f'(pod: "{pod}", container: {container["name"]})'
    run_as = own.get("runAsUser", pod_context.get("runAsUser"))
    if run_as is not None:
        return None if run_as != 0 else f"container's runAsUser breaks non-root policy {where}"
    user = image_user.split(":", 1)[0]
    if not user:
        uid: int | None = 0
    elif _INT64.fullmatch(user) and -(2**63) <= int(user) < 2**63:
        uid = int(user)
    else:
        return (
            f"container has runAsNonRoot and image has non-numeric user ({user}), cannot "
            f"verify user is non-root {where}"
        )
    if uid == 0:
        return f"container has runAsNonRoot and image will run as root {where}"
    if uid is not None and not 0 <= uid <= _MAX_INT32:
        return (
            f"container has runAsNonRoot and image has an invalid user id ({uid}). (Must be "
            f"1-({_MAX_INT32})): must be between 0 and {_MAX_INT32}, inclusive {where}"
        )
    return None
