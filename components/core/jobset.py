"""One JobSet for a Kueue-queued TFJob or PyTorchJob, so that Kueue admits it whole or not at all.

Kueue admits each object it manages as one Workload. Labelled Job by Job, a training job would
be admitted replica by replica: the master could hold its quota while the workers wait, the
deadlock that gang scheduling exists to avoid. Kueue's documented unit for a group of Jobs is a
JobSet (``jobset.x-k8s.io/v1alpha2``, Kueue's ``jobset`` integration, enabled by default): one
Workload whose pod sets are the JobSet's replicated Jobs, admitted together.

The JobSet has one replicated Job per replica type, in the job's replica order. Its controller
names the child Jobs ``<jobset>-<replicatedJob>-<index>`` (jobset ``pkg/controllers``,
``GenJobName``): with the JobSet named like the job and each replicated Job like its type, those
are the ``<job>-<type>-<i>`` names of the per-index graph, so the Services, TF_CONFIG addresses
and the completion watcher stay as they are. A replicated Job shares one pod template across
its indexes, so a value that differs per index (TF_CONFIG's task index, PyTorch's RANK) is
written with Kubernetes' ``$(VAR)`` expansion of a variable read through the downward API from
an annotation the JobSet controller puts on every pod (``labelAndAnnotateObject``):
``jobset.sigs.k8s.io/job-index`` (the index within its type) or
``jobset.sigs.k8s.io/job-global-index`` (its position across all replicated Jobs: PyTorch's
RANK, the master coming first). Expanded, every pod's env is the operator's, byte for byte.
The global index needs JobSet v0.6.0 or later.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from trainjobs.core.errors import Problem
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_template import default_field

API_VERSION = "jobset.x-k8s.io/v1alpha2"
KUEUE_PREFIX = "kueue.x-k8s.io/"
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"

JOBSET_NAME = "jobset.sigs.k8s.io/jobset-name"
REPLICATED_JOB = "jobset.sigs.k8s.io/replicatedjob-name"
JOB_INDEX = "jobset.sigs.k8s.io/job-index"
GLOBAL_INDEX = "jobset.sigs.k8s.io/job-global-index"

INDEX_VARIABLES = {
    JOB_INDEX: "TRAINJOBS_JOB_INDEX",
    GLOBAL_INDEX: "TRAINJOBS_JOB_GLOBAL_INDEX",
}
"""The env variables that carry the JobSet's index annotations into ``$(...)`` references."""


def is_queued(labels: dict[str, str]) -> bool:
    return QUEUE_LABEL in labels


def kueue_labels(labels: dict[str, str]) -> dict[str, str]:
    """The labels Kueue reads (queue name, workload priority class): the JobSet's alone."""
    return {key: value for key, value in labels.items() if key.startswith(KUEUE_PREFIX)}


def without_kueue_labels(labels: dict[str, str]) -> dict[str, str]:
    """Every other object keeps the job's labels but these: a Job or Pod carrying a queue
    name would be admitted by Kueue on its own."""
    return {key: value for key, value in labels.items() if not key.startswith(KUEUE_PREFIX)}


def child_job_name(jobset: str, replicated_job: str, index: int) -> str:
    """The name the JobSet controller gives a child Job."""
    return f"{jobset}-{replicated_job}-{index}"


NAME_MAX = 63


def pod_name_problem(job: str, replicated_jobs: Sequence[tuple[str, int]]) -> Problem | None:
    """The JobSet webhook's name rule for a queued job's JobSet, or None when it passes.

    jobset ``pkg/webhooks/jobset_webhook.go`` ``ValidateCreate`` refuses a JobSet whose
    longest pod name, ``<jobset>-<replicatedJob>-<maxJobIndex>-<maxPodIndex>`` and the
    5-character random suffix (``placement.GenPodName`` + ``-abcde``), is longer than 63
    (replicated Jobs default to Indexed completion; each of ours has one completion, so the
    pod index is 0). ``replicated_jobs``: (replicated Job name, replicas).
    """
    longest = max(
        (f"{job}-{name}-{replicas - 1}-0-xxxxx" for name, replicas in replicated_jobs), key=len
    )
    if len(longest) <= NAME_MAX:
        return None
    return Problem(
        "metadata.name",
        f"{job!r} is {len(job)} characters; queued, its JobSet's pods would be named like "
        f"{longest!r} ({len(longest)} characters), which the JobSet webhook refuses beyond "
        f"{NAME_MAX}; shorten it to at most {NAME_MAX - (len(longest) - len(job))} characters",
    )


class UnsharedEnv(ValueError):
    """A per-index env value that one template for every index cannot express."""

    def __init__(self, name: str, values: list[str]) -> None:
        super().__init__(
            f"the per-index env value of {name} is not a function of the JobSet's index: {values}"
        )
        self.name = name


def shared_env(per_index: Sequence[Sequence[Manifest]], offset: int) -> list[Manifest]:
    """One env list for every index of a replicated Job whose pods need ``per_index[i]``.

    Values equal across indexes stay literal. A value that differs is the same text around
    the index (``offset`` + index for the global one), which becomes a ``$(...)`` reference
    to a variable read from the pod's annotation; those variables come first, as expansion
    only sees variables defined earlier in the list.
    """
    names = [[item["name"] for item in env] for env in per_index]
    for other in names[1:]:
        if other != names[0]:
            # A variable some pods get and others do not (or in another order).
            differing = next(
                (a for a, b in zip(names[0], other, strict=False) if a != b),
                (names[0] + other)[min(len(names[0]), len(other))],
            )
            raise UnsharedEnv(differing, [" ".join(env) for env in names])
    shared: list[Manifest] = []
    needed: list[str] = []
    for position, item in enumerate(per_index[0]):
        values = [str(env[position].get("value", "")) for env in per_index]
        if "valueFrom" in item or all(value == values[0] for value in values):
            shared.append(dict(item))
            continue
        indexed = _indexed(values, offset)
        if indexed is None:
            raise UnsharedEnv(item["name"], values)
        annotation, text = indexed
        if annotation not in needed:
            needed.append(annotation)
        shared.append({"name": item["name"], "value": text})
    sources = [
        {
            "name": INDEX_VARIABLES[annotation],
            "valueFrom": {"fieldRef": {"fieldPath": f"metadata.annotations['{annotation}']"}},
        }
        for annotation in sorted(needed)
    ]
    return [*sources, *shared]


def _indexed(values: list[str], offset: int) -> tuple[str, str] | None:
    """The annotation and the ``$(...)`` text that give ``values[i]`` for every index i, or
    None when no such text exists."""
    prefix = _common_prefix(values)
    suffix = _common_prefix([value[len(prefix) :][::-1] for value in values])[::-1]
    middles = [value[len(prefix) : len(value) - len(suffix)] for value in values]
    escaped_prefix, escaped_suffix = prefix.replace("$", "$$"), suffix.replace("$", "$$")
    for annotation, first in ((JOB_INDEX, 0), (GLOBAL_INDEX, offset)):
        if middles == [str(first + index) for index in range(len(values))]:
            variable = INDEX_VARIABLES[annotation]
            return annotation, f"{escaped_prefix}$({variable}){escaped_suffix}"
    return None


def _common_prefix(values: list[str]) -> str:
    shortest = min(values, key=len)
    for position, character in enumerate(shortest):
        if any(value[position] != character for value in values):
            return shortest[:position]
    return shortest


def jobset(
    name: str,
    namespace: str,
    labels: dict[str, str],
    replicated_jobs: list[Manifest],
    success: tuple[str, str],
    *,
    suspend: bool = False,
    ttl_seconds_after_finished: int | None = None,
    subdomain: str | None = None,
) -> Manifest:
    """The JobSet: ``success`` is (operator All or Any, the replicated Job that decides).

    No failure policy: the JobSet fails as soon as one child Job fails, which is when
    Kubeflow fails the job (each child Job retries within its own backoffLimit first).
    No DNS hostnames either, unless ``subdomain`` names the job's headless Service: the job's
    own Services name every pod, as Kubeflow's do. With it (an MPIJob), every pod is
    ``<jobset>-<replicatedJob>-<i>-0.<subdomain>``; the JobSet controller creates no Service
    of that name when one exists (``createHeadlessSvcIfNecessary``).
    """
    operator, target = success
    replicated_jobs = [_float_quantities_as_text(replicated) for replicated in replicated_jobs]
    network: Manifest = {"enableDNSHostnames": False}
    if subdomain is not None:
        network = {"enableDNSHostnames": True, "subdomain": subdomain}
    spec: Manifest = {
        "network": network,
        "successPolicy": {"operator": operator, "targetReplicatedJobs": [target]},
        "replicatedJobs": replicated_jobs,
    }
    if suspend:
        spec["suspend"] = True
    if ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = ttl_seconds_after_finished
    return {
        "apiVersion": API_VERSION,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": spec,
    }


def _float_quantities_as_text(replicated: Manifest) -> Manifest:
    """``replicated`` with each quantity written as a YAML float (``cpu: 0.5``) as text: a
    Job's own decoding reads a number as a quantity (apimachinery's Quantity.UnmarshalJSON),
    but the JobSet CRD's schema types quantities as an integer or a string
    (``x-kubernetes-int-or-string``), which a float is not."""
    replicated = copy.deepcopy(replicated)
    pod = replicated["template"]["spec"]["template"].get("spec") or {}
    holders = [
        pod,
        *(c for group in ("initContainers", "containers") for c in pod.get(group) or []),
    ]
    amounts: list[Manifest] = [pod.get("overhead") or {}]
    for holder in holders:
        resources = holder.get("resources") or {}
        amounts += [resources.get("requests") or {}, resources.get("limits") or {}]
    for amount in amounts:
        for resource, value in amount.items():
            if isinstance(value, float):
                amount[resource] = repr(value)
    return replicated


def child_jobs(manifest: Manifest) -> list[Manifest]:
    """The Jobs the JobSet controller creates for a JobSet, labelled, annotated and placed
    under its subdomain as it does (``constructJob`` and ``labelAndAnnotateObject``): what a
    local run starts in its place."""
    name = manifest["metadata"]["name"]
    jobs: list[Manifest] = []
    global_index = 0
    # With DNS hostnames (the webhook's default) every pod is under the JobSet's subdomain:
    # ``<pod>.<subdomain>`` resolves (jobset pkg/controllers/jobset_controller.go, constructJob
    # and GetSubdomain; pkg/webhooks/jobset_webhook.go, Default).
    network = manifest["spec"].get("network") or {}
    subdomain = (
        None if network.get("enableDNSHostnames") is False else network.get("subdomain") or name
    )
    for replicated in manifest["spec"]["replicatedJobs"]:
        for index in range(int(replicated.get("replicas", 1))):
            marks = {
                JOBSET_NAME: name,
                REPLICATED_JOB: replicated["name"],
                JOB_INDEX: str(index),
                GLOBAL_INDEX: str(global_index),
            }
            template = copy.deepcopy(replicated["template"])
            spec = template["spec"]
            pod_meta = default_field(spec["template"], "metadata", {})
            for meta in (default_field(template, "metadata", {}), pod_meta):
                meta["labels"] = {**(meta.get("labels") or {}), **marks}
                meta["annotations"] = {**(meta.get("annotations") or {}), **marks}
            if manifest["spec"].get("suspend"):
                spec["suspend"] = True
            if subdomain is not None:
                spec["template"]["spec"]["subdomain"] = subdomain
            metadata = {
                **template["metadata"],
                "name": child_job_name(name, replicated["name"], index),
                "namespace": manifest["metadata"]["namespace"],
            }
            job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": spec}
            jobs.append(job)
            global_index += 1
    return jobs
