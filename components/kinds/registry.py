"""The registry of job kinds: any spec document in, one JobDefinition out.

The Pulumi program, the CLI, the library, the provider and the local runtime all go through
here. :data:`KIND_MODULES` lists the module of each kind's ``KIND``
(:class:`~trainjobs.kinds.kind.Kind`); adding a kind means adding its package and one entry.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from trainjobs.core.errors import Problem, SpecError, written
from trainjobs.core.graph import GraphOptions
from trainjobs.core.rendered_pods import check_graph
from trainjobs.core.set_paths import SetPaths
from trainjobs.kinds.bundle import check_companion, with_companions
from trainjobs.kinds.kind import JobDefinition, Kind, Workload
from trainjobs.kinds.retired import unknown_kind

# trainjobs.core.documents (YAML) is imported where a document is read: listing the kinds
# (`trainjobs run --help`) loads no YAML.

__all__ = [
    "KINDS",
    "KIND_MODULES",
    "JobDefinition",
    "Kind",
    "Registry",
    "Workload",
    "exports",
    "load_job",
    "parse_job",
    "runtimes_owner",
    "set_paths",
]
"""With the JobDefinition and Workload of :mod:`.kind`, which callers import from here."""

KIND_MODULES: list[str] = [
    "trainjobs.kinds.chainer.kind",
    "trainjobs.kinds.tensorflow.kind",
    "trainjobs.kinds.pytorch.kind",
    "trainjobs.kinds.mpijob.kind",
    "trainjobs.kinds.trainjob.kind",
    "trainjobs.kinds.xgboostjob.kind",
    "trainjobs.kinds.paddlejob.kind",
    "trainjobs.kinds.jaxjob.kind",
]
"""The module of each kind's ``KIND``, in the order messages and help list the kinds."""


class Registry(Mapping[str, Kind]):
    """Kind name -> :class:`Kind`, read from ``modules`` when first used. A ``KIND`` module
    is light (its spec models, graph and component are imported when a job of that kind is
    read or built), so listing the kinds loads no kind's models."""

    def __init__(self, modules: list[str]) -> None:
        self.modules = modules
        self._read: tuple[str, ...] = ()
        self._kinds: dict[str, Kind] = {}

    def _loaded(self) -> dict[str, Kind]:
        if self._read != tuple(self.modules):  # a kind added since (a plugin, a test)
            kinds = [importlib.import_module(module).KIND for module in self.modules]
            self._kinds = {kind.name: kind for kind in kinds}
            self._read = tuple(self.modules)
        return self._kinds

    def __getitem__(self, name: str) -> Kind:
        return self._loaded()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._loaded())

    def __len__(self) -> int:
        return len(self._loaded())


KINDS = Registry(KIND_MODULES)
"""Every kind, by name."""


def exports() -> dict[str, str]:
    """Every kind's public names -> the modules that define them (``import trainjobs``)."""
    return {name: module for kind in KINDS.values() for name, module in kind.exports.items()}


def runtimes_owner() -> str:
    """The kind whose jobs the training runtimes go beside, in one file (a List)."""
    return next(name for name, kind in KINDS.items() if kind.takes_runtimes)


def set_paths(document: dict[str, Any]) -> SetPaths | None:
    """Where `--set` writes in ``document``, or None when it is no job of a known kind (which
    parsing refuses). A List (a job with its training runtimes) has the paths of its one job."""
    if document.get("kind") == "List":
        items = document.get("items")
        jobs = [
            (index, item)
            for index, item in enumerate(items if isinstance(items, list) else [])
            if isinstance(item, dict) and item.get("kind") in KINDS
        ]
        if len(jobs) != 1:
            return None
        index, job = jobs[0]
        found = set_paths(job)
        return found.under(("items", index)) if found is not None else None
    kind = document.get("kind")
    entry = KINDS.get(kind) if isinstance(kind, str) else None
    return entry.set_paths(document) if entry is not None else None


def parse_job(
    document: dict[str, Any],
    source: str,
    namespace: str = "default",
    options: GraphOptions | None = None,
) -> JobDefinition:
    from trainjobs.core.documents import RUNTIME_KINDS

    document, companions = _single_item(document, source)
    kind = document.get("kind")
    if kind == "List":  # a job and the training runtimes given beside it
        kind = runtimes_owner()
    if kind in RUNTIME_KINDS:
        owner = runtimes_owner()
        raise SpecError(
            source,
            [
                Problem(
                    "kind",
                    f"a {kind} is a training runtime, not a job: put it beside the {owner} "
                    f"whose runtimeRef names it, in that {owner}'s file (YAML documents "
                    "separated by ---)",
                )
            ],
        )
    entry = KINDS.get(kind) if isinstance(kind, str) else None
    if entry is None:
        raise SpecError(source, [unknown_kind(document, KINDS)])
    job = entry.parse(document, source, namespace, options or GraphOptions())
    # Every kind's final pod templates, whatever was added to them after the spec's checks
    # (the companions' are the user's objects, which the cluster checks as it creates them).
    warnings = list(job.warnings)
    check_graph(job.graph, source, warnings)
    if len(warnings) > len(job.warnings):
        job = replace(job, warnings=tuple(warnings))
    return with_companions(job, companions, source)


def _single_item(
    document: dict[str, Any], source: str
) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """A List (a file of several documents, ``kubectl get ... -o yaml``) holds one job, the
    training runtimes of a job that takes them, and any other object kubectl would create
    beside it (:mod:`.bundle`): the job (or the job's List with its runtimes), and those
    companions with their indexes."""
    from trainjobs.core.documents import RUNTIME_KINDS

    if document.get("kind") != "List":
        return document, []
    items = document.get("items")
    if not isinstance(items, list):
        raise SpecError(
            source,
            [
                Problem(
                    "items", f"must be a list of job documents (got {items!r}): one job per file"
                )
            ],
        )
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise SpecError(
                source, [Problem(f"items[{index}]", f"must be a mapping (got {item!r})")]
            )
    if len(items) == 1:
        return items[0], []
    jobs = [item for item in items if item.get("kind") in KINDS]
    runtimes = [item for item in items if item.get("kind") in RUNTIME_KINDS]
    companions = [
        (index, item)
        for index, item in enumerate(items)
        if item.get("kind") not in KINDS and item.get("kind") not in RUNTIME_KINDS
    ]
    owner = runtimes_owner()
    if runtimes and (len(jobs) != 1 or jobs[0].get("kind") != owner):
        kinds = [item.get("kind") for item in jobs]
        raise SpecError(
            source,
            [
                Problem(
                    "items",
                    f"training runtimes ({', '.join(sorted(RUNTIME_KINDS))}) go beside exactly "
                    f"one {owner} (got {kinds!r}): one job per file",
                )
            ],
        )
    if len(jobs) > 1:
        raise SpecError(
            source,
            [
                Problem(
                    "items",
                    f"a List must hold exactly one job (got {len(jobs)}): one job per file",
                )
            ],
        )
    if not jobs:
        said = ", ".join(written(item.get("kind")) for item in items)
        raise SpecError(
            source,
            [
                Problem(
                    "items",
                    f"none of the {len(items)} documents is a job (kinds {said}): a file "
                    f"holds one job, of kind {', '.join(KINDS)}, and the objects it needs",
                )
            ],
        )
    job_kinds: dict[str, list[str]] = {}
    for name, entry in KINDS.items():
        job_kinds.setdefault(entry.group, []).append(name)
    for index, item in companions:
        check_companion(item, index, source, job_kinds)
    if runtimes:
        kept = [item for item in items if item.get("kind") in (*KINDS, *RUNTIME_KINDS)]
        return {**document, "items": kept}, companions
    return jobs[0], companions


def load_job(
    path: str | Path, namespace: str = "default", options: GraphOptions | None = None
) -> JobDefinition:
    from trainjobs.core.documents import load_file

    return parse_job(load_file(path), str(path), namespace, options)
