"""What a local run's pods and Jobs read of their run, whichever runtime runs its pods.

:class:`trainjobs.local.runtime.Run` is the run; its collaborators (a Job's retries, a pod's
lifecycle, the runtimes' pods) type against this protocol instead, so that none of them
imports the run that holds them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from trainjobs.local.backoff import RestartBackoff
from trainjobs.local.cluster import ClusterPlan
from trainjobs.local.ledger import Ledger
from trainjobs.local.pods import LogSink


class RunContext(Protocol):
    """One execution of a job, as its pods and Jobs see it."""

    @property
    def plan(self) -> ClusterPlan: ...

    @property
    def run_dir(self) -> Path: ...

    @property
    def run_id(self) -> str: ...

    @property
    def ledger(self) -> Ledger:
        """Where what the run creates is recorded before it is created."""
        ...

    @property
    def sink(self) -> LogSink: ...

    @property
    def restart_backoff(self) -> RestartBackoff:
        """The kubelet's back-off, shared by every container of the run."""
        ...

    @property
    def secret_files(self) -> dict[str, dict[str, str]]:
        """The job's own Secrets (the ssh transport's key pair): name -> file -> content."""
        ...

    @property
    def netns_inodes(self) -> dict[str, int]:
        """Pod -> the inode of its network namespace, once the network is up."""
        ...

    @property
    def hurry(self) -> bool:
        """A second interrupt arrived: stop without waiting for grace periods."""
        ...

    def publish(self) -> None:
        """Write the pods' registry the kubectl stand-in reads."""

    def markers(self, pod: str, container: str) -> dict[str, str]:
        """The environment that marks a process as the run's (its pod's, its container's)."""
        ...

    def processes(self, pod: str, container: str | None = None) -> list[int]:
        """The run's live processes of one pod (of one of its containers)."""
        ...
