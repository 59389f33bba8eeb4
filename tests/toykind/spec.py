"""EchoJob's spec model and parser: one Indexed Job whose pods run the template."""

from __future__ import annotations

from typing import Any

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import Graph, GraphOptions
from trainjobs.core.job_document import read_envelope, validate_section
from trainjobs.core.set_paths import SetPaths, replica
from trainjobs.core.spec_model import SpecModel
from trainjobs.kinds.kind import JobDefinition, Workload

KIND = "EchoJob"


class EchoJobSpec(SpecModel):
    """An EchoJob's ``spec``: a number of pods, all from one template."""

    replicas: int = 1
    """Pods to run."""
    template: dict[str, Any]
    """The pods' template (a Kubernetes PodTemplateSpec)."""


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> JobDefinition:
    problems: list[Problem] = []
    warnings: list[Problem] = []
    envelope = read_envelope(document, KIND, ("v1",), problems, warnings)
    spec = validate_section(EchoJobSpec, envelope.spec, "spec", problems) if envelope else None
    if envelope is None or spec is None:
        raise SpecError(source, problems, warnings)
    job_namespace = envelope.namespace or namespace
    graph = Graph(envelope.name, KIND, job_namespace)
    graph.add(
        {
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {"name": envelope.name, "namespace": job_namespace},
            "spec": {
                "completions": spec.replicas,
                "parallelism": spec.replicas,
                "completionMode": "Indexed",
                "template": {
                    **spec.template,
                    "spec": {"restartPolicy": "Never", **spec.template["spec"]},
                },
            },
        }
    )
    return JobDefinition(
        kind=KIND,
        name=envelope.name,
        namespace=job_namespace,
        graph=graph,
        success_jobs=(envelope.name,),
        workers=[Workload("Job", envelope.name, spec.replicas)],
        worker_pods=[],
        warnings=tuple(warnings),
    )


def set_paths(document: dict[str, Any]) -> SetPaths:
    return replica("Echo", ("spec",), document.get("spec"))
