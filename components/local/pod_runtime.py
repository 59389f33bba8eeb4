"""The interface a local run drives its pods through: processes or an engine's containers.

:class:`trainjobs.local.runtime.Run` holds the Kubernetes semantics every local run keeps
(Jobs, StatefulSets, retries, deadline, outcome, the scale-to-0, clean-up, summary); a
:class:`PodRuntime` says what a pod and the pods' network are. The two runtimes are siblings
behind it, as the Kubeflow Trainer SDK's backends are (``kubeflow/trainer/backends/``):
:class:`trainjobs.local.process_runtime.ProcessRuntime` (host processes in network
namespaces) and :class:`trainjobs.local.container.runtime.ContainerRuntime` (engine pods).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from trainjobs.local.cluster import ClusterPlan, PodPlan
from trainjobs.local.network import Network, PodHost, PodName
from trainjobs.local.pod_run import LocalPod
from trainjobs.local.pods import LogSink
from trainjobs.local.run_context import RunContext


class PodRuntime(Protocol):
    """What runs a local run's pods. Called in this order: :meth:`network_mode` and
    :meth:`check_ssh_transport` before anything exists; :meth:`make_network`, then
    :meth:`make_pod` for each pod (user errors surface here, before anything starts);
    :meth:`report_cleanup`, :meth:`provision` as the run starts; :meth:`close` once every pod
    is stopped, or :meth:`abandon` if the run is refused before it starts."""

    def network_mode(self, plan: ClusterPlan) -> str:
        """The pods' network as the summary names it; a UserError where the job cannot run."""
        ...

    def check_ssh_transport(self, mode: str) -> None:
        """Refuse the ssh transport, before anything starts, where it cannot work."""

    def make_network(self, run: RunContext, mode: str, pods: list[PodName]) -> Network: ...

    def make_pod(self, run: RunContext, plan: PodPlan, host: PodHost) -> LocalPod: ...

    def report_cleanup(self, sink: LogSink) -> None:
        """Say what was removed of killed runs before this one started, where the runtime
        looked further than the ledger (an engine's objects)."""

    def provision(self, pods: Sequence[LocalPod]) -> None:
        """Make ahead, together, what creating each of ``pods`` needs, where a runtime can."""

    def abandon(self) -> None:
        """The run was refused before anything started: give back what was reserved."""

    def close(self) -> list[str]:
        """Once every pod is stopped: remove what the runtime made besides them; what could
        not be removed."""
        ...
