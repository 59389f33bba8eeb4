"""A TrainJob rendered to the JobSet Kubeflow Trainer's controller would create.

Beside it: an MPI hostfile ConfigMap and ssh-auth Secret, a PodGroup.

Trainer builds the JobSet from the runtime's template in this order (kubeflow/trainer v2.3.0,
commit 658725bdae5c7e3a0854d93ac6ff492e109a22ab: ``pkg/runtime/core/trainingruntime.go``
``buildObjects``/``newRuntimeInfo`` and ``pkg/runtime/framework/plugins/jobset``):

1. the TrainJob's runtimePatches (or older overrides) merged into the template; each
   replicated Job's pod count is its ``parallelism`` (1), the trainer's the MLPolicy's
   ``numNodes``; ``resourcesPerNode`` merged into the trainer's ``node`` container;
2. the MLPolicy enforced (:mod:`.policies`), then the PodGroupPolicy: coscheduling labels
   every pod ``scheduling.x-k8s.io/pod-group: <trainjob>``, Volcano annotates it
   ``scheduling.k8s.io/group-name: <trainjob>``; the PodGroup's minMember is each
   replicated Job's pod count;
3. each replicated Job's ``parallelism`` and ``completions`` set to its pod count; the
   trainer's ``replicas`` set to 1 and its ``node`` container given the TrainJob's image,
   command and args (the user's command as written: never rewritten), and ``trainer.env``;
   the initializers' containers given ``STORAGE_URI`` and their env;
4. ``suspend`` copied. The JobSet is named like the TrainJob, which makes its pods
   ``<trainjob>-<replicatedJob>-<jobIndex>-<podIndex>``.

What the JobSet webhook would default is written out (Indexed completion, restartPolicy
OnFailure, the success policy), so that the manifests pass the schemas as they are stored.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from trainjobs.core import apimachinery, jobset
from trainjobs.core.errors import Problem
from trainjobs.core.gang import SCHEDULER_PLUGINS_GROUP_LABEL, VOLCANO_GROUP_ANNOTATION
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_requests import pod_requests
from trainjobs.core.pod_template import default_field
from trainjobs.kinds.trainjob import patches, policies, runtimes
from trainjobs.kinds.trainjob.policies import NODE, TRAINER, PodSet
from trainjobs.kinds.trainjob.runtimes import Runtime
from trainjobs.kinds.trainjob.spec import TrainJobSpec, as_patches

INITIALIZERS = {"dataset-initializer": "dataset", "model-initializer": "model"}
STORAGE_URI = "STORAGE_URI"
DEFAULT_SCHEDULE_TIMEOUT = 60
VOLCANO_QUEUE_ANNOTATION = "scheduling.volcano.sh/queue-name"


@dataclass(frozen=True)
class Rendered:
    jobset: Manifest
    beside: list[Manifest]
    """Objects created before the JobSet: the hostfile ConfigMap, ssh Secret, PodGroup."""
    min_member: int
    """A PodGroup's minMember: each replicated Job's pod count, once."""
    deciding: tuple[str, ...]
    """The replicated Jobs whose success is the JobSet's (its success policy's targets)."""
    success_any: bool


def render(
    name: str,
    namespace: str,
    spec: TrainJobSpec,
    runtime: Runtime,
    labels: dict[str, str],
    problems: list[Problem],
    release: str,
) -> Rendered:
    """The JobSet for TrainJob ``name``; problems for what Trainer's webhook refuses."""
    template = copy.deepcopy(runtime.template)
    js_spec: Manifest = default_field(template, "spec", {})
    meta = template.get("metadata") or {}
    js_labels = {**(meta.get("labels") or {}), **spec.labels}
    js_annotations = {**(meta.get("annotations") or {}), **spec.annotations}
    more_labels, more_annotations = patches.apply_runtime_patches(
        as_patches(spec.runtime_patches), template, problems
    )
    js_labels.update(more_labels)
    js_annotations.update(more_annotations)
    for field, overrides in (
        ("podTemplateOverrides", spec.pod_template_overrides),
        ("podSpecOverrides", spec.pod_spec_overrides),
    ):
        patches.apply_overrides(as_patches(overrides), field, template, problems)
    problems += _initializer_problems(spec, js_spec["replicatedJobs"], release)
    problems += policies.reserved_env_problems(runtime.ml_policy, spec.trainer)
    problems += policies.tune_run_problems(runtime.ml_policy, spec.trainer)

    mpi = runtime.ml_policy.get("mpi")
    as_node = bool((mpi or {}).get("runLauncherAsNode"))
    pod_sets = []
    for job in js_spec["replicatedJobs"]:
        pod_set = PodSet(job, int(job["template"]["spec"].get("parallelism") or 1))
        if pod_set.ancestor == TRAINER and runtime.ml_policy:
            pod_set.count = int(runtime.ml_policy.get("numNodes") or 1)
        if (
            spec.trainer is not None
            and spec.trainer.resources_per_node is not None
            and (
                (pod_set.ancestor == TRAINER and runtime.ml_policy)
                or (as_node and pod_set.name == NODE)
            )
        ):
            container = pod_set.container(NODE)
            if container is not None:
                container["resources"] = patches.merge(
                    container.get("resources") or {}, spec.trainer.resources_per_node
                )
        pod_sets.append(pod_set)
    if (
        mpi is not None
        and as_node
        and (spec.trainer is not None and (spec.trainer.num_nodes or 1) >= 2)
        and not {NODE, policies.LAUNCHER} <= {p.name for p in pod_sets}
    ):
        problems.append(
            Problem(
                "spec.trainer.numNodes",
                "must have 1 when MPI trainingRuntime with enabled runLauncherAsNode does not "
                "have either launcher and node",
            )
        )

    problems += policies.env_injection_problems(runtime.ml_policy, pod_sets)
    network = js_spec.get("network") or {}
    subdomain = network.get("subdomain") or name
    enforced = policies.enforce(runtime.ml_policy, pod_sets, spec.trainer, name, subdomain)
    scheduling = _pod_group_marks(runtime.pod_group_policy, name)
    for pod_set in pod_sets:
        job_spec = pod_set.job["template"]["spec"]
        job_spec["parallelism"] = pod_set.count
        job_spec["completions"] = pod_set.count
        _trainer_overrides(pod_set, spec, as_node)
        _initializer_env(pod_set, spec)
        for key, marks in scheduling.items():
            pod_meta = default_field(job_spec["template"], "metadata", {})
            pod_meta[key] = {**(pod_meta.get(key) or {}), **marks}
        # The JobSet webhook's defaults (jobset pkg/webhooks/jobset_webhook.go, Default).
        default_field(job_spec, "completionMode", "Indexed")
        default_field(pod_set.pod, "restartPolicy", "OnFailure")
    if spec.suspend is not None:
        js_spec["suspend"] = spec.suspend
    default_field(js_spec, "successPolicy", {"operator": "All"})
    manifest: Manifest = {
        "apiVersion": jobset.API_VERSION,
        "kind": "JobSet",
        "metadata": {"name": name, "namespace": namespace, "labels": {**js_labels, **labels}},
        "spec": js_spec,
    }
    if js_annotations:
        manifest["metadata"]["annotations"] = js_annotations
    min_member = sum(p.count for p in pod_sets)
    problems += _generated_name_problems(name, pod_sets, runtime.key)
    problems += _queue_problems(runtime.pod_group_policy, js_annotations)
    beside = _beside(
        runtime, enforced, pod_sets, name, namespace, labels, min_member, js_annotations
    )
    success = js_spec["successPolicy"]
    targets = tuple(success.get("targetReplicatedJobs") or [p.name for p in pod_sets])
    return Rendered(manifest, beside, min_member, targets, success.get("operator") == "Any")


def _generated_name_problems(name: str, pod_sets: list[PodSet], runtime: str) -> list[Problem]:
    """The JobSet webhook's rules on the names its controller generates (jobset
    ``pkg/webhooks/jobset_webhook.go``, ``ValidateCreate``): each replicated Job's longest Job
    name, ``<jobset>-<replicatedJob>-<maxJobIndex>``, is an RFC 1035 label, and the longest pod
    name, with the 5-character random suffix, is at most 63 characters. ``runtime``: the
    runtime's key, which names the replicated Jobs' field path."""
    found: list[Problem] = []
    for index, pod_set in enumerate(pod_sets):
        job_name = jobset.child_job_name(
            name, pod_set.name, int(pod_set.job.get("replicas", 1)) - 1
        )
        rules = apimachinery.dns1035_label(job_name)
        found += [
            Problem(
                f"{runtime}.spec.template.spec.replicatedJobs[{index}].name",
                f"Invalid value: {json.dumps(job_name)}: {rule}: the JobSet controller names the "
                "replicated Job's Jobs <trainjob>-<name>-<index>; rename it",
            )
            for rule in rules
            if rule != apimachinery.max_length(apimachinery.DNS1123_LABEL_MAX)
        ]
    if found:
        return found
    index, longest = max(
        (
            (i, f"{name}-{p.name}-{int(p.job.get('replicas', 1)) - 1}-{p.count - 1}-xxxxx")
            for i, p in enumerate(pod_sets)
        ),
        key=lambda pair: len(pair[1]),
    )
    if len(longest) <= jobset.NAME_MAX:
        return []
    too_long = (
        "JobSet name is too long, pod names generated for this JobSet will exceed 63 "
        f"characters (the longest: {longest!r}, {len(longest)} characters)"
    )
    budget = jobset.NAME_MAX - (len(longest) - len(name))
    if budget >= 1:
        return [
            Problem("metadata.name", f"{too_long}; shorten the name to at most {budget} characters")
        ]
    # Not even a one-character TrainJob name fits: the replicated Job's name is what is long.
    replicated = pod_sets[index].name
    return [
        Problem(
            f"{runtime}.spec.template.spec.replicatedJobs[{index}].name",
            f"{too_long}, whatever the TrainJob's name; shorten the replicated Job's name to at "
            f"most {len(replicated) - (len(longest) - jobset.NAME_MAX)} characters",
        )
    ]


def _trainer_overrides(pod_set: PodSet, spec: TrainJobSpec, as_node: bool) -> None:
    """Builder.Trainer: image, command and args on the trainer's node container; the
    TrainJob's env there, and on an MPI node that the launcher runs beside."""
    trainer = spec.trainer
    container = pod_set.container(NODE)
    if pod_set.ancestor == TRAINER:
        pod_set.job["replicas"] = 1
    if trainer is None or container is None:
        return
    if pod_set.ancestor == TRAINER:
        for field, value in (
            ("image", trainer.image),
            ("command", trainer.command),
            ("args", trainer.args),
        ):
            if value is not None:
                container[field] = copy.deepcopy(value)
    if pod_set.ancestor == TRAINER or (as_node and pod_set.name == NODE):
        policies.upsert(default_field(container, "env", []), [dict(e) for e in trainer.env])


def _initializer_env(pod_set: PodSet, spec: TrainJobSpec) -> None:
    which = INITIALIZERS.get(pod_set.ancestor or "")
    if which is None:
        return
    pod_set.job["replicas"] = 1
    source = getattr(spec.initializer, which) if spec.initializer is not None else None
    container = pod_set.container(pod_set.ancestor or "")
    if source is None or container is None:
        return
    env = default_field(container, "env", [])
    if source.storage_uri is not None:
        policies.upsert(env, [{"name": STORAGE_URI, "value": source.storage_uri}])
    policies.upsert(env, [dict(item) for item in source.env])
    if source.secret_ref is not None:
        default_field(container, "envFrom", []).append(
            {"secretRef": {"name": source.secret_ref.get("name")}}
        )


def _initializer_problems(spec: TrainJobSpec, jobs: list[Manifest], release: str) -> list[Problem]:
    """The JobSet plugin's Validate: an initializer needs its Job and container, and from
    v2.3.0 (kubeflow/trainer#3714) its ``initializer`` volume mounted."""
    found: list[Problem] = []
    if spec.initializer is None:
        return found
    by_name = {job["name"]: job for job in jobs}
    for job_name, which in INITIALIZERS.items():
        if getattr(spec.initializer, which) is None:
            continue
        config = "datasetConfig" if which == "dataset" else "modelConfig"
        job = by_name.get(job_name)
        if job is None:
            reason = f"must have {job_name} job when trainJob is configured with input {config}"
        elif job_name not in patches.container_names(job):
            reason = f"must have container with name - {job_name} in the {job_name} job"
        elif runtimes.since(release, "v2.3.0") and not any(
            mount.get("name") == "initializer"
            for container in PodSet(job, 1).pod.get("containers") or []
            if container.get("name") == job_name
            for mount in container.get("volumeMounts") or []
        ):
            reason = (
                f"must have volumeMount with name - initializer in container {job_name} of the "
                f"{job_name} job (Kubeflow Trainer v2.3.0's rule; name the initializer's volume "
                "`initializer`, or select the release the runtime was written for: "
                "--trainer-version or trainjobs:trainerVersion)"
            )
        else:
            continue
        found.append(Problem("spec.runtimeRef", reason))
    return found


def _pod_group_marks(policy: Manifest, name: str) -> dict[str, dict[str, str]]:
    if "coscheduling" in policy:
        return {"labels": {SCHEDULER_PLUGINS_GROUP_LABEL: name}}
    if "volcano" in policy:
        return {"annotations": {VOLCANO_GROUP_ANNOTATION: name}}
    return {}


def _queue_problems(policy: Manifest, annotations: dict[str, str]) -> list[Problem]:
    """Volcano's ``Validate``: the queue annotation, where given, names a queue."""
    if "volcano" not in policy or annotations.get(VOLCANO_QUEUE_ANNOTATION) != "":
        return []
    return [
        Problem(
            f"spec.annotations[{VOLCANO_QUEUE_ANNOTATION}]",
            'Invalid value: "": Volcano queue name must not be empty; name the Volcano queue or '
            "remove the annotation",
        )
    ]


def _beside(
    runtime: Runtime,
    enforced: policies.Enforced,
    pod_sets: list[PodSet],
    name: str,
    namespace: str,
    labels: dict[str, str],
    min_member: int,
    annotations: dict[str, str],
) -> list[Manifest]:
    found: list[Manifest] = []
    if enforced.ssh_secret is not None:
        found.append(
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": enforced.ssh_secret, "namespace": namespace, "labels": labels},
                "type": "kubernetes.io/ssh-auth",
                "immutable": True,
            }
        )
    if enforced.hostfile is not None:
        found.append(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": f"{name}{policies.HOSTFILE_SUFFIX}",
                    "namespace": namespace,
                    "labels": labels,
                },
                "data": {"hostfile": enforced.hostfile},
            }
        )
    policy = runtime.pod_group_policy
    if "coscheduling" in policy or "volcano" in policy:
        found.append(_pod_group(policy, pod_sets, name, namespace, labels, min_member, annotations))
    return found


def _pod_group(
    policy: Manifest,
    pod_sets: list[PodSet],
    name: str,
    namespace: str,
    labels: dict[str, str],
    min_member: int,
    annotations: dict[str, str],
) -> Manifest:
    """The coscheduling or Volcano PodGroup (``Build`` in ``plugins/coscheduling/
    coscheduling.go`` and ``plugins/volcano/volcano.go``): each pod set's pod count, once
    (Trainer does not count a replicated Job's ``replicas``, kubeflow/trainer#2318), and that
    count times what one of its pods requests (Kubernetes' ``PodRequests``). Volcano's
    (``plugins/volcano/volcano.go``, ``Build``) also takes its queue from the JobSet's
    annotation ``scheduling.volcano.sh/queue-name`` (the runtime's, the TrainJob's before
    v2.2, a runtime patch's) and the policy's network topology, with the CRD's defaults."""
    totals: dict[str, Decimal] = {}
    for pod_set in pod_sets:
        for resource, amount in pod_requests(pod_set.pod).items():
            totals[resource] = totals.get(resource, Decimal(0)) + amount * pod_set.count
    min_resources = {key: _shown(value) for key, value in sorted(totals.items())}
    meta = {"name": name, "namespace": namespace, "labels": labels}
    spec: dict[str, Any] = {"minMember": min_member, "minResources": min_resources}
    if "coscheduling" in policy:
        timeout = (policy["coscheduling"] or {}).get("scheduleTimeoutSeconds")
        spec["scheduleTimeoutSeconds"] = (
            timeout if timeout is not None else DEFAULT_SCHEDULE_TIMEOUT
        )
        api = "scheduling.x-k8s.io/v1alpha1"
    else:
        api = "scheduling.volcano.sh/v1beta1"
        priority = [
            p.pod.get("priorityClassName") for p in pod_sets if p.pod.get("priorityClassName")
        ]
        if priority:
            spec["priorityClassName"] = priority[-1]
        if VOLCANO_QUEUE_ANNOTATION in annotations:
            spec["queue"] = annotations[VOLCANO_QUEUE_ANNOTATION]
        topology = (policy["volcano"] or {}).get("networkTopology")
        if topology is not None:
            spec["networkTopology"] = {
                "mode": topology.get("mode") or "hard",
                "highestTierAllowed": 1
                if topology.get("highestTierAllowed") is None
                else topology["highestTierAllowed"],
            }
    return {"apiVersion": api, "kind": "PodGroup", "metadata": meta, "spec": spec}


def _shown(value: Decimal) -> str:
    if value == value.to_integral_value():
        return str(int(value))
    return f"{int((value * 1000).to_integral_value())}m"
