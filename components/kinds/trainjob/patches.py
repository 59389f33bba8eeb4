"""A TrainJob's changes to its runtime's JobSet template, applied and checked as Trainer does.

runtimePatches (v2.2+), podTemplateOverrides (v2.1) and podSpecOverrides (v2.0).

Sources: kubeflow/trainer v2.3.0 ``pkg/runtime/core/trainingruntime.go``
(``newRuntimeInfo``: a patch's template metadata joins the JobSet's labels and annotations;
``mergeRuntimePatches``: a strategic merge of each patch, in order, onto the template: maps
merged, lists of named items merged by name) and ``pkg/runtime/framework/plugins/jobset``
(``Validate``: the reasons a patch is refused); v2.0.0 and v2.1.0 ``trainjob_types.go`` for the
older overrides, whose ``targetJobs`` name the replicated Jobs they change.
"""

from __future__ import annotations

from typing import Any

from trainjobs.core.errors import Problem
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_template import default_field

MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "volumes": "name",
    "imagePullSecrets": "name",
    "schedulingGates": "name",
    "env": "name",
    "volumeMounts": "mountPath",
}
"""Lists a patch may reach whose items a strategic merge matches, and the key it matches them
by: each field's ``patchMergeKey`` in kubernetes ``staging/src/k8s.io/api/core/v1/types.go``
(a container may mount one volume at several paths, never two volumes at one). Other lists
(tolerations) are replaced."""
PROTECTED_ENV = ("dataset-initializer", "model-initializer", "node")
"""Containers whose env only Trainer sets (the webhook refuses patches of it)."""


def merge(base: Any, patch: Any) -> Any:
    """``patch`` merged onto ``base``: mappings key by key, keyed lists item by key, anything
    else replaced."""
    if isinstance(base, dict) and isinstance(patch, dict):
        merged = dict(base)
        for key, value in patch.items():
            if key in merged and key in MERGE_KEYS:
                merged[key] = _merge_keyed(merged[key], value, MERGE_KEYS[key])
            else:
                merged[key] = merge(merged.get(key), value) if key in merged else value
        return merged
    return patch


def _merge_keyed(base: Any, patch: Any, key: str) -> Any:
    if not isinstance(base, list) or not isinstance(patch, list):
        return patch
    merged = list(base)
    for item in patch:
        name = item.get(key) if isinstance(item, dict) else None
        at = next(
            (i for i, old in enumerate(merged) if isinstance(old, dict) and old.get(key) == name),
            None,
        )
        if at is None or name is None:
            merged.append(item)
        else:
            merged[at] = merge(merged[at], item)
    return merged


def container_names(replicated_job: Manifest) -> set[str]:
    pod = replicated_job["template"]["spec"]["template"].get("spec") or {}
    return {
        str(container.get("name"))
        for group in ("initContainers", "containers")
        for container in pod.get(group) or []
    }


def apply_runtime_patches(
    patches: list[dict[str, Any]], template: Manifest, problems: list[Problem]
) -> tuple[dict[str, str], dict[str, str]]:
    """Merge ``runtimePatches`` into the JobSet ``template``; the labels and annotations the
    patches give the JobSet."""
    labels: dict[str, str] = {}
    annotations: dict[str, str] = {}
    jobs = {job["name"]: job for job in template["spec"]["replicatedJobs"]}
    where = "spec.runtimePatches"
    for patch in patches:
        spec_patch = (patch.get("trainingRuntimeSpec") or {}).get("template") or {}
        meta = spec_patch.get("metadata") or {}
        labels.update(meta.get("labels") or {})
        annotations.update(meta.get("annotations") or {})
        for job_patch in (spec_patch.get("spec") or {}).get("replicatedJobs") or []:
            job = jobs.get(job_patch.get("name"))
            if job is None:
                problems.append(
                    Problem(
                        where,
                        "must not have replicated job that doesn't exist in the runtime job "
                        "template",
                    )
                )
                continue
            _check_containers(job, (job_patch.get("template") or {}), where, problems)
            job["template"] = merge(job["template"], job_patch.get("template") or {})
    return labels, annotations


def _check_containers(
    job: Manifest, job_template_patch: Manifest, where: str, problems: list[Problem]
) -> None:
    names = container_names(job)
    pod_patch = ((job_template_patch.get("spec") or {}).get("template") or {}).get("spec") or {}
    for group, what in (("initContainers", "initContainer"), ("containers", "container")):
        for container in pod_patch.get(group) or []:
            name = container.get("name")
            if name not in names:
                problems.append(
                    Problem(
                        where,
                        f"must not have {what} that doesn't exist in the runtime job {job['name']}",
                    )
                )
            elif group == "containers" and container.get("env") and name in PROTECTED_ENV:
                problems.append(
                    Problem(
                        where,
                        "must not have envs for the dataset-initializer, model-initializer, "
                        "node containers",
                    )
                )


def apply_overrides(
    overrides: list[dict[str, Any]], field: str, template: Manifest, problems: list[Problem]
) -> None:
    """v2.0's ``podSpecOverrides`` (the pod spec's fields inline) or v2.1's
    ``podTemplateOverrides`` (``metadata`` and ``spec``) on their target Jobs' pod templates."""
    jobs = {job["name"]: job for job in template["spec"]["replicatedJobs"]}
    for index, override in enumerate(overrides):
        if field == "podSpecOverrides":
            pod_patch = {
                "spec": {k: v for k, v in override.items() if k != "targetJobs"},
            }
        else:
            pod_patch = {k: override[k] for k in ("metadata", "spec") if k in override}
        for target_index, target in enumerate(override.get("targetJobs") or []):
            job = jobs.get((target or {}).get("name"))
            if job is None:
                problems.append(
                    Problem(
                        f"spec.{field}[{index}].targetJobs[{target_index}].name",
                        f"{(target or {}).get('name')!r} is not a replicated Job of the runtime "
                        f"(it has {', '.join(jobs)})",
                    )
                )
                continue
            job_spec = job["template"]["spec"]
            job_spec["template"] = merge(default_field(job_spec, "template", {}), pod_patch)
