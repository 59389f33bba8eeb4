"""A TrainJob document (and the runtimes given beside it) in, its validated plan and graph out.

The graph is what Kubeflow Trainer's controller would create for the TrainJob, without the
controller: trainjobs' own ConfigMap (:func:`anchor_name`), the MPI hostfile ConfigMap and
ssh-auth Secret and the PodGroup first, then the JobSet (:mod:`.render`), whose own controller
creates the Jobs, pods and headless Service. The TrainJob object itself is not created: no
Trainer controller would read it. The JobSet's success is the job's success.

The dataset and model initializers are rendered as Trainer renders them. A local run cannot
download from a model hub: the initializers' images and downloads are Trainer's, so a warning
says so, and a volume or local path given through the runtime's ``initializer`` volume stands in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from trainjobs.core import jobset
from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import Graph, GraphOptions, Node
from trainjobs.core.labels import common_labels
from trainjobs.core.pod_rules import check_template_rules
from trainjobs.core.pod_schema import check_template_types
from trainjobs.kinds.trainjob import runtimes, spec
from trainjobs.kinds.trainjob.policies import ANCESTOR, NODE, TRAINER
from trainjobs.kinds.trainjob.render import Rendered, render

ANCHOR_SUFFIX = "-trainjob"
SUPPORTED_POLICIES = {"numNodes", "torch", "mpi", "jax", "xgboost"}


def anchor_name(job: str) -> str:
    """trainjobs' own ConfigMap for the TrainJob: the runtime it was rendered from, and the
    anchor on which the completion watcher finds the job and records its runs (Trainer keeps
    both on the TrainJob, which no controller reads here)."""
    return f"{job}{ANCHOR_SUFFIX}"


@dataclass(frozen=True)
class TrainJobPlan:
    name: str
    namespace: str
    graph: Graph
    success_jobs: tuple[str, ...]
    """The child Jobs of the replicated Jobs the JobSet's success policy targets."""
    other_jobs: tuple[str, ...]
    success_any: bool
    warnings: list[Problem]
    suspend: bool
    min_member: int
    """The PodGroup's minMember (:attr:`.render.Rendered.min_member`)."""
    gang: bool
    kueue: bool
    """Labelled with a Kueue queue: Kueue admits the JobSet, and unsuspends it (a suspended
    TrainJob is how Kueue's documentation queues one)."""


def split_documents(document: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The TrainJob and the runtime documents given beside it (a ``kind: List``)."""
    if document.get("kind") != "List":
        return document, []
    items = [item for item in document.get("items") or [] if isinstance(item, dict)]
    job = next(item for item in items if item.get("kind") == spec.KIND)
    return job, [item for item in items if item.get("kind") in spec.RUNTIME_KINDS]


def parse(
    document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> TrainJobPlan:
    # Of the stack's options only the Trainer release counts: Trainer's runtimes say how
    # pods are gang-scheduled, not the stack.
    release = options.trainer_version or runtimes.LATEST
    problems: list[Problem] = []
    warnings: list[Problem] = []
    unknown = runtimes.release_problem(release)
    if unknown is not None:
        raise SpecError(source, [unknown])
    job_document, runtime_documents = split_documents(document)
    # The file's own runtimes first, then those installed apart from it.
    documents = [(item, source) for item in runtime_documents] + list(options.runtimes)
    given = [
        runtime
        for item, found_in in documents
        if (runtime := runtimes.runtime_from(item, found_in, problems)) is not None
    ]
    read = spec.read(job_document, problems, warnings)
    if read is None or problems:
        raise SpecError(source, problems, warnings)
    name, train = read.name, read.spec
    namespace = read.namespace or namespace
    problems += _resources_problems(train)
    if problems:
        raise SpecError(source, problems, warnings)
    found = runtimes.lookup(train.runtime_ref, given, namespace, release)
    if found is None:
        raise SpecError(source, [runtimes.missing(train.runtime_ref, given, release)], warnings)
    runtime = found.runtime
    warnings += [found.warning] if found.warning is not None else []
    warnings += runtimes.prune_for_release(runtime, release)
    unsupported = sorted(set(runtime.ml_policy) - SUPPORTED_POLICIES)
    if unsupported:
        raise SpecError(
            source,
            [
                Problem(
                    "spec.runtimeRef.name",
                    f"{runtime.key} has mlPolicy.{unsupported[0]}, which trainjobs does not "
                    f"render (Trainer's {unsupported[0]} plugin); use a runtime with "
                    f"{', '.join(sorted(SUPPORTED_POLICIES - {'numNodes'}))} or none",
                )
            ],
            warnings,
        )
    labels = common_labels(name, spec.KIND, "trainer", jobset.without_kueue_labels(read.labels))
    js_labels = {**labels, **jobset.kueue_labels(read.labels)}
    rendered = render(name, namespace, train, runtime, js_labels, problems, release)
    warnings += _initializer_warnings(train)
    warnings += _trainer_warnings(train, rendered)
    if train.managed_by == spec.MANAGERS[1]:
        warnings.append(
            Problem(
                "spec.managedBy",
                f"{spec.MANAGERS[1]}: on a cluster Trainer leaves the TrainJob to MultiKueue, "
                "which runs it on a worker cluster; here its JobSet is created where the stack "
                "deploys",
            )
        )
    if train.active_deadline_seconds:
        warnings.append(
            Problem(
                "spec.activeDeadlineSeconds",
                "Trainer's controller enforces it on the TrainJob, which is not created here, "
                "so it has no effect; set activeDeadlineSeconds on the runtime's Jobs instead",
            )
        )
    if problems:
        raise SpecError(source, problems, warnings)
    return TrainJobPlan(
        name=name,
        namespace=namespace,
        graph=_graph(name, namespace, rendered, runtime),
        success_jobs=_child_jobs(rendered, deciding=True),
        other_jobs=_child_jobs(rendered, deciding=False),
        success_any=rendered.success_any,
        warnings=warnings,
        suspend=bool(train.suspend),
        min_member=rendered.min_member,
        gang=any(m["kind"] == "PodGroup" for m in rendered.beside),
        kueue=jobset.is_queued(read.labels),
    )


def _resources_problems(train: spec.TrainJobSpec) -> list[Problem]:
    """``resourcesPerNode`` as a container's resources, to the API server's schema and rules
    (it is read for the MLPolicy before it reaches a pod template)."""
    if train.trainer is None or train.trainer.resources_per_node is None:
        return []
    resources = train.trainer.resources_per_node
    template = {"spec": {"containers": [{"name": NODE, "image": "image", "resources": resources}]}}
    found: list[Problem] = []
    check_template_types(template, "", found, [])
    if not found:
        check_template_rules(template, "", found)
    inner = ".spec.containers[0].resources"
    return [
        Problem("spec.trainer.resourcesPerNode" + p.path.removeprefix(inner), p.message)
        for p in found
    ]


def _initializer_warnings(train: spec.TrainJobSpec) -> list[Problem]:
    if train.initializer is None:
        return []
    return [
        Problem(
            f"spec.initializer.{which}",
            f"a local run cannot download {which}s from a hub (storageUri "
            f"{getattr(train.initializer, which).storage_uri!r}): on a cluster Trainer's "
            f"{which}-initializer does; a local run mounts no host path either (Pod Security "
            f"baseline), so give the trainer an image that already holds the {which} and read "
            "it from there, or run on a cluster",
        )
        for which in ("dataset", "model")
        if getattr(train.initializer, which) is not None
    ]


def _trainer_warnings(train: spec.TrainJobSpec, rendered: Rendered) -> list[Problem]:
    """Trainer applies ``spec.trainer`` to the trainer Job's container named ``node`` only."""
    if train.trainer is None:
        return []
    for job in rendered.jobset["spec"]["replicatedJobs"]:
        labels = (job["template"].get("metadata") or {}).get("labels") or {}
        if labels.get(ANCESTOR) != TRAINER:
            continue
        pod = job["template"]["spec"]["template"]["spec"]
        names = [str(c.get("name")) for c in pod.get("containers") or []]
        if NODE not in names:
            return [
                Problem(
                    "spec.trainer",
                    f"the runtime's trainer Job {job['name']!r} has no container named 'node' "
                    f"(it has {', '.join(names)}), so Trainer applies none of spec.trainer's "
                    "image, command, args, env and policy env to it; name it 'node'",
                )
            ]
    return []


def _graph(name: str, namespace: str, rendered: Rendered, runtime: runtimes.Runtime) -> Graph:
    graph = Graph(job=name, kind=spec.KIND, namespace=namespace)
    labels = rendered.jobset["metadata"]["labels"]
    anchor = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": anchor_name(name), "namespace": namespace, "labels": labels},
        "data": {"runtime": f"{runtime.key} ({runtime.source})"},
    }
    before: list[Node] = [graph.add(anchor)]
    # An ssh-auth Secret gets its key pair at deploy time or for a local run, never rendered.
    before += [graph.add(manifest) for manifest in rendered.beside]
    graph.add(rendered.jobset, *before)
    return graph


def _child_jobs(rendered: Rendered, *, deciding: bool) -> tuple[str, ...]:
    return tuple(
        jobset.child_job_name(rendered.jobset["metadata"]["name"], job["name"], index)
        for job in rendered.jobset["spec"]["replicatedJobs"]
        if (job["name"] in rendered.deciding) == deciding
        for index in range(int(job.get("replicas", 1)))
    )
