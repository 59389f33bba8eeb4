"""What a job kind is to the rest of trainjobs: a :class:`Kind`, and its JobDefinitions.

Every kind's documents become a :class:`JobDefinition`. Each kind's package exports a
``KIND`` (its ``kind`` module) and :mod:`.registry` lists those modules: the CLI, the
library's exports, the provider, the CRDs and the program read the kinds from there, so none
of them names a kind. A ``KIND`` holds callables and module paths only: its spec models,
graph builder and component are imported when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from trainjobs.core.errors import Problem
from trainjobs.core.graph import Graph, GraphOptions
from trainjobs.core.set_paths import SetPaths

if TYPE_CHECKING:
    from pydantic import BaseModel


@dataclass(frozen=True)
class Workload:
    """A workload the completion watcher stops when the job ends (and restores to
    ``replicas`` when a new run starts)."""

    kind: str
    name: str
    replicas: int


@dataclass(frozen=True)
class JobDefinition:
    """A validated job of any kind and its resource graph."""

    kind: str
    name: str
    namespace: str
    graph: Graph
    success_jobs: tuple[str, ...]
    """The batch/v1 Jobs whose Complete conditions are the job's success: all of them (or
    any one, with ``success_any``). A Failed condition of any Job of the job fails it."""
    workers: list[Workload]
    """Everything else that runs: stopped when the outcome is known (``clean_pod_policy``)."""
    worker_pods: list[str]
    success_any: bool = False
    clean_pod_policy: str = "Running"
    """Kubeflow's cleanPodPolicy: what happens to pods when the job ends. None: nothing;
    Running: pods still running are stopped; All: every pod is removed."""
    warnings: tuple[Problem, ...] = ()
    """Things the spec says that have no effect, or an effect the user may not expect."""
    gang_min_member: int | None = None
    """With a gang scheduler: how many pods must be placed together before any starts."""
    anchor: tuple[str, str] = ("", "")
    """(kind, name) of an object that lives as long as the job's stack and no TTL removes:
    the deciding replica's Service, or the MPI assets ConfigMap. The completion watcher reads
    the job's description from it and records finished runs on it."""
    suspend: bool = False
    """``runPolicy.suspend``: no pod runs until the spec says otherwise."""
    ttl_seconds_after_finished: int | None = None
    """``runPolicy.ttlSecondsAfterFinished``: how long the finished job's objects stay."""
    elastic_min_members: int | None = None
    """An elastic job: the workers its torchrun group needs (elasticPolicy.minReplicas)."""
    elastic_restart_never: bool = False
    """An elastic job whose workers' Kubeflow restartPolicy is Never: any failed worker
    fails the job, as the operator decides."""
    queued: bool = False
    """Kueue queues the job: it is one JobSet, whose controller makes its Jobs."""
    companions: tuple[str, ...] = ()
    """Graph keys of the objects given beside the job in its file (:mod:`.bundle`): the
    first nodes of its graph."""

    @property
    def completion_job(self) -> str:
        """The first Job that decides success (the only one, unless all workers decide)."""
        return self.success_jobs[0]


Parser = Callable[[dict[str, Any], str, str, GraphOptions], JobDefinition]
"""A kind's parser: (document, source, namespace, options) -> the validated job; raises
:class:`~trainjobs.core.errors.SpecError` naming every problem."""


@dataclass(frozen=True)
class Kind:
    """One job kind, as its package declares it."""

    name: str
    """The documents' ``kind`` (``TFJob``); also the name of its public component."""
    api_version: str
    """``group/version`` of the document a component writes around a bare spec."""
    plural: str
    """The resource's plural (``tfjobs``), for its CRD."""
    parse: Parser
    set_paths: Callable[[dict[str, Any]], SetPaths]
    """Where `--set` writes in a document of this kind (replica counts, images)."""
    spec_models: Callable[[], Mapping[str, type[BaseModel]]]
    """Version name -> the ``spec`` model of that version; the last one is the version a
    component and the provider take, and the CRD's storage version."""
    exports: Mapping[str, str]
    """Public name -> the module that defines it: the component (named as the kind), its
    spec class and the models a program builds a spec from; ``import trainjobs`` offers them."""
    spec_class: str
    """The public name of the spec class a component takes (one of :attr:`exports`)."""
    takes_runtimes: bool = False
    """Its file may hold Kubeflow Trainer's training runtimes beside the job (as a List)."""
    crd: bool = True
    """Whether `trainjobs crds` writes a CRD for it (False: the kind's operator ships one)."""

    @property
    def group(self) -> str:
        return self.api_version.split("/", 1)[0]

    def component(self) -> type[Any]:
        """The public component class (imports the kind's component module, and Pulumi)."""
        return self.export(self.name)

    def export(self, name: str) -> Any:
        """The public object ``name`` of this kind, imported on demand."""
        return getattr(importlib.import_module(self.exports[name]), name)
