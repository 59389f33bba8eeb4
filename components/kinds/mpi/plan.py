"""The MPI graph's plan: a ChainerJob or MPIJob validated, every default applied."""

from __future__ import annotations

from dataclasses import dataclass

from trainjobs.core.errors import Problem
from trainjobs.core.names import JobNames
from trainjobs.core.pod_template import PodTemplate, main_container
from trainjobs.kinds.mpi.flavour import MpiFlavour


@dataclass(frozen=True)
class WorkerGroup:
    """One normalised worker set: a StatefulSet of ``replicas`` pods with ``slots`` each."""

    statefulset: str
    replicas: int
    slots: int
    template: PodTemplate
    container: str
    in_jobset: bool = False
    """The pods are a JobSet's (Kueue): replicated Job ``worker``'s child Jobs
    ``<statefulset>-<i>``, Indexed, whose one pod's hostname is ``<job>-0``."""

    @property
    def own_command(self) -> bool:
        """The main container has a command (or args) of its own, which trainjobs keeps: with
        the ssh transport that command starts the worker's sshd, as with mpi-operator."""
        container = main_container(self.template, self.container)
        return "command" in container or "args" in container

    @property
    def pods(self) -> list[str]:
        """The pods' hostnames."""
        suffix = "-0" if self.in_jobset else ""
        return [f"{self.statefulset}-{index}{suffix}" for index in range(self.replicas)]


@dataclass(frozen=True)
class Master:
    """The normalised master replica."""

    slots: int
    template: PodTemplate
    container: str
    backoff_limit: int | None
    active_deadline_seconds: int | None


@dataclass(frozen=True)
class MpiPlan:
    """A validated job with every default applied: what the graph builder consumes."""

    names: JobNames
    namespace: str
    labels: dict[str, str]
    master: Master
    workers: list[WorkerGroup]
    warnings: list[Problem]
    flavour: MpiFlavour
    """What the kind decides (ChainerJob's, or an MPIJob operator's choices)."""

    @property
    def worker_pods(self) -> list[str]:
        return [pod for group in self.workers for pod in group.pods]

    @property
    def launcher_hostname(self) -> str:
        """The launcher pod's hostname: the master Job's name, which the graph sets as its
        hostname, or, queued in a JobSet, what the Indexed child Job ``<master>-0`` gives
        its one pod (``<master>-0-0``)."""
        return f"{self.names.master}-0-0" if self.flavour.queued else self.names.master
