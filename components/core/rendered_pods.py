"""The final pod templates of a job's graph, checked as the API server checks them.

A kind checks the templates a spec gives it, at the spec's own field paths; what is added after
that (a runtime's template, patches and overrides, the operator's env, volumes, mounts and
containers, trainjobs' own) is only in the graph. Every kind's graph passes through
:func:`check_graph` (from :func:`trainjobs.kinds.registry.parse_job`), so no pod template
reaches a manifest, a cluster or a local run that the API server's schema and rules
(:func:`~trainjobs.core.pod_template.check_final_template`) did not see: two mounts at one path
(``ValidateVolumeMounts``: "must be unique") are refused here, and a field the schema does not
know is removed, as the API server prunes it. Pod Security baseline is checked on these same
templates by a local run (:mod:`trainjobs.local.pod_security`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import Graph, Manifest
from trainjobs.core.pod_template import check_final_template

WORKLOADS = ("Job", "StatefulSet", "Deployment", "ReplicaSet", "DaemonSet")
"""Kinds whose ``spec.template`` is a pod template (JobSet's are one level down)."""


def pod_templates(manifest: Manifest) -> Iterator[tuple[str, dict[str, Any]]]:
    """Each pod template of ``manifest`` with its field path in it."""
    spec = manifest.get("spec")
    if not isinstance(spec, dict):
        return
    if manifest.get("kind") in WORKLOADS and isinstance(spec.get("template"), dict):
        yield "spec.template", spec["template"]
    elif manifest.get("kind") == "JobSet":
        for index, job in enumerate(spec.get("replicatedJobs") or []):
            template = ((job.get("template") or {}).get("spec") or {}).get("template")
            if isinstance(template, dict):
                yield f"spec.replicatedJobs[{index}].template.spec.template", template


def check_graph(graph: Graph, source: str, warnings: list[Problem]) -> None:
    """Check every pod template of ``graph`` in place; raise SpecError naming each problem at
    ``<Kind>/<name> <field path>``. Unknown fields are removed, with a warning each."""
    problems: list[Problem] = []
    for node in graph.nodes:
        for path, template in pod_templates(node.manifest):
            check_final_template(template, f"{node.key} {path}", problems, warnings)
    if problems:
        raise SpecError(source, problems, warnings)
