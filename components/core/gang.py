"""Gang scheduling: the PodGroup a job's pods join, so that they are placed together or not at all.

Half a job holding GPUs while it waits for the other half is the classic deadlock of
distributed training. Kubeflow's operator avoids it, when started with a gang scheduler, by
creating a PodGroup named after the job and making every pod join it
(training-operator 1.9: ``pkg/controller.v1/common/scheduling.go``,
``pkg/controller.v1/control/podgroup_control.go``):

- **Volcano** (``scheduling.volcano.sh/v1beta1``): spec ``minMember``, ``queue`` (default
  ``default``), ``priorityClassName``, ``minResources``; each pod gets
  ``schedulerName: volcano`` (unless it names one) and the annotations
  ``scheduling.k8s.io/group-name`` and ``volcano.sh/task-spec`` (its replica type). Without
  the group-name annotation Volcano would make a one-pod group per pod;
- **scheduler-plugins' coscheduling** (``scheduling.x-k8s.io/v1alpha1``): spec ``minMember``,
  ``minResources``, ``scheduleTimeoutSeconds``; each pod gets the scheduler's name and the
  label ``scheduling.x-k8s.io/pod-group``.

``minMember`` is ``schedulingPolicy.minAvailable``, else every pod of the job; ``minResources``
is the spec's, else the requests (limits where a container gives no requests) of the first
``minMember`` pods, in replica order.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal

from trainjobs.core import quantity
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_template import default_field

VOLCANO = "volcano"
SCHEDULER_PLUGINS = "scheduler-plugins"
GANG_SCHEDULERS = (VOLCANO, SCHEDULER_PLUGINS)
DEFAULT_SCHEDULER_PLUGINS_NAME = "scheduler-plugins-scheduler"
"""The second scheduler's name in scheduler-plugins' own install (its Helm chart)."""
VOLCANO_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VOLCANO_TASK_ANNOTATION = "volcano.sh/task-spec"
SCHEDULER_PLUGINS_GROUP_LABEL = "scheduling.x-k8s.io/pod-group"


@dataclass(frozen=True)
class Gang:
    """How a job is gang-scheduled: which scheduler, and its PodGroup's terms."""

    scheduler: Literal["volcano", "scheduler-plugins"]
    scheduler_name: str
    """The pods' schedulerName (``volcano``, or scheduler-plugins' second scheduler)."""
    min_member: int
    queue: str | None = None
    priority_class: str | None = None
    min_resources: dict[str, Any] | None = None
    schedule_timeout_seconds: int | None = None


def pod_group(gang: Gang, job: str, namespace: str, labels: dict[str, str]) -> Manifest:
    """The PodGroup every pod of ``job`` joins."""
    meta = {"name": job, "namespace": namespace, "labels": labels}
    if gang.scheduler == VOLCANO:
        spec: Manifest = {"minMember": gang.min_member, "queue": gang.queue or "default"}
        if gang.priority_class:
            spec["priorityClassName"] = gang.priority_class
        if gang.min_resources:
            spec["minResources"] = gang.min_resources
        return {
            "apiVersion": "scheduling.volcano.sh/v1beta1",
            "kind": "PodGroup",
            "metadata": meta,
            "spec": spec,
        }
    spec = {"minMember": gang.min_member}
    if gang.min_resources:
        spec["minResources"] = gang.min_resources
    if gang.schedule_timeout_seconds is not None:
        spec["scheduleTimeoutSeconds"] = gang.schedule_timeout_seconds
    return {
        "apiVersion": "scheduling.x-k8s.io/v1alpha1",
        "kind": "PodGroup",
        "metadata": meta,
        "spec": spec,
    }


def join(gang: Gang, job: str, replica_type: str, template: Manifest) -> None:
    """Make a pod template join the job's PodGroup (its own schedulerName is kept)."""
    pod = template["spec"]
    default_field(pod, "schedulerName", gang.scheduler_name)
    meta = default_field(template, "metadata", {})
    if gang.scheduler == VOLCANO:
        meta["annotations"] = {
            **(meta.get("annotations") or {}),
            VOLCANO_GROUP_ANNOTATION: job,
            VOLCANO_TASK_ANNOTATION: replica_type,
        }
    else:
        meta["labels"] = {**(meta.get("labels") or {}), SCHEDULER_PLUGINS_GROUP_LABEL: job}


def sum_requests(templates: list[Manifest]) -> dict[str, str]:
    """The resources ``templates`` (one per pod) ask for: each container's requests, or its
    limits when it gives none, summed per resource (init containers are not counted)."""
    totals: dict[str, Decimal] = {}
    for template in templates:
        for container in template["spec"].get("containers") or []:
            resources = container.get("resources") or {}
            asked = resources.get("requests") or resources.get("limits") or {}
            for name, amount in asked.items():
                totals[name] = totals.get(name, Decimal(0)) + quantity.parse(amount)
    return {name: _quantity(total) for name, total in sorted(totals.items())}


def _quantity(value: Decimal) -> str:
    """A Decimal as a Kubernetes quantity: whole multiples of a binary unit with its suffix
    (memory), other whole numbers plainly, fractions in milli-units (CPU)."""
    if value != value.to_integral_value():
        return f"{int((value * 1000).to_integral_value())}m"
    whole = int(value)
    for suffix, size in (("Ti", 1024**4), ("Gi", 1024**3), ("Mi", 1024**2), ("Ki", 1024)):
        if whole >= size and whole % size == 0:
            return f"{whole // size}{suffix}"
    return str(whole)
