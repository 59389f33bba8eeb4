"""When a local container that exited may start again: the kubelet's CrashLoopBackOff.

The kubelet restarts an exited container at once the first time; after that it waits
10 s, doubling on every further exit up to 5 min, measured from when the container
exited, and forgets the count when the container ran for longer than twice the cap
(10 min) since its last restart before it exited again. Kubernetes sources:

- ``pkg/kubelet/kuberuntime/kuberuntime_manager.go``, ``doBackOff``: a container still
  within its back-off since its ``FinishedAt`` is not started (CrashLoopBackOff); one
  that is out of it is started and ``Next`` is called, which sets the next back-off;
- ``pkg/kubelet/kubelet.go``: ``backOffPeriod`` (10 s) and ``MaxContainerBackOff``
  (300 s) passed to ``flowcontrol.NewBackOff``;
- ``staging/src/k8s.io/client-go/util/flowcontrol/backoff.go``: ``Next`` starts at the
  initial period and doubles to the cap; ``hasExpired`` resets an entry not updated for
  twice the cap.

A container without a restart policy of its own (restartPolicy Never: the Job controller
makes a new pod) gets the same pause here, so a podFailurePolicy ``Ignore`` rule cannot
make a local run start pods in a tight loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

INITIAL_SECONDS = 10.0
"""The kubelet's ``backOffPeriod``."""
MAX_SECONDS = 300.0
"""The kubelet's ``MaxContainerBackOff``."""


@dataclass
class _Entry:
    backoff: float
    last_update: float


class RestartBackoff:
    """The restart back-off of every container of a run, by a key such as (pod, container)."""

    def __init__(
        self,
        initial: float = INITIAL_SECONDS,
        maximum: float = MAX_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.initial = initial
        self.maximum = maximum
        self.clock = clock
        self._entries: dict[object, _Entry] = {}

    def exited(self, key: object, finished_at: float | None = None) -> float:
        """The container ``key`` exited (now, or at ``finished_at``): when it may start again
        (``finished_at`` itself for a first exit, or one after a long run)."""
        finished = self.clock() if finished_at is None else finished_at
        entry = self._entries.get(key)
        if entry is None or finished - entry.last_update > 2 * self.maximum:
            self._entries[key] = _Entry(self.initial, finished)
            return finished
        start_at = finished + entry.backoff
        entry.backoff = min(entry.backoff * 2, self.maximum)
        entry.last_update = start_at  # Next runs when the container is started again
        return start_at

    def forget(self, key: object) -> None:
        """A container that is gone for good (its pod deleted) starts afresh."""
        self._entries.pop(key, None)
