"""The resource graph of replica-typed jobs (TFJob, PyTorchJob): a Service and a workload per pod.

Kubeflow's operator creates, for every replica index, one pod and one headless Service, both
named ``<job>-<type>-<i>``, and writes each pod's environment (TF_CONFIG, RANK...) literally
into its containers; it never touches the command. The graph does the same with objects the
API server runs by itself, so that no operator is needed:

- per replica index, a **batch/v1 Job** of one pod. A Job per index (rather than one Indexed
  Job per type) is what lets every pod carry its own literal environment, exactly as the
  operator writes it: PyTorch's ``RANK`` is the index plus one, which no downward-API field
  can express. The pod keeps the user's command, args and image (ENTRYPOINT and CMD stay in
  force) and gets the operator's env, labels and, when its Kubeflow restartPolicy says so,
  a podFailurePolicy;
- a replica whose restartPolicy is ``Always`` is a **one-pod StatefulSet** instead: batch/v1
  Jobs cannot restart a container that exited 0, a StatefulSet does;
- per replica index, a **headless Service** named like the pod selects it by its
  ``training.kubeflow.org/*`` labels, so ``<job>-<type>-<i>`` and
  ``<job>-<type>-<i>.<ns>.svc`` resolve to it as they do under the operator.
  ``publishNotReadyAddresses`` lets peers resolve it as soon as it has an address: training
  processes connect while their peers start, before any readiness probe passes.

The replicas that decide the job (chief, master or worker 0) are created last, after every
other workload, so that the others are already starting when they begin.

A job labelled with a Kueue queue is one JobSet instead of its per-index workloads (see
``components/core/jobset.py``): its child Jobs have the same names, pods and env.
"""

from __future__ import annotations

import copy
import dataclasses

from trainjobs.core import jobset
from trainjobs.core.errors import Problem
from trainjobs.core.gang import join, pod_group
from trainjobs.core.graph import Graph, Manifest, Node
from trainjobs.core.labels import (
    JOB_NAME,
    JOB_ROLE,
    REPLICA_INDEX,
    REPLICA_TYPE,
    common_labels,
    metadata,
)
from trainjobs.core.pod_template import replace_env
from trainjobs.core.replica_spec import (
    PERMANENT_EXIT_CODES,
    ReplicaGroup,
    ReplicaJobPlan,
    Success,
)

ASSETS_DIR = "/etc/trainjobs"
ASSETS_VOLUME = "trainjobs-assets"


def build_replica_graph(plan: ReplicaJobPlan) -> Graph:
    """[assets ConfigMap] -> a Service per replica -> its workload (deciding replicas last)."""
    graph = Graph(job=plan.job, kind=plan.kind, namespace=plan.namespace)
    config_map = None
    if plan.assets:
        config_map = graph.add(
            {
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": metadata(f"{plan.job}-assets", plan.namespace, _labels(plan, "assets")),
                "data": dict(plan.assets),
            }
        )
    first = [config_map] if config_map is not None else []
    if plan.gang is not None:
        # Before the pods: a pod that names its group before the group exists is not gang
        # scheduled (Volcano would give it a group of its own).
        first.append(
            graph.add(pod_group(plan.gang, plan.job, plan.namespace, _labels(plan, "gang")))
        )
    if jobset.is_queued(plan.labels):
        services = [
            graph.add(_service(plan, group, index))
            for group in plan.groups
            for index in range(group.replicas)
        ]
        graph.add(_jobset(plan), *services, *first)
        return graph
    deciding = {(plan.success.type, index) for index in plan.success.indexes}
    others: list[Node] = []
    last: list[tuple[ReplicaGroup, int, list[Node]]] = []
    for group in plan.groups:
        assets = [node for node in first if node.kind != "ConfigMap" or _uses_assets(group)]
        for index in range(group.replicas):
            service = graph.add(_service(plan, group, index))
            if (group.type, index) in deciding:
                last.append((group, index, [service, *assets]))
            else:
                others.append(graph.add(_workload(plan, group, index), service, *assets))
    for group, index, before in last:
        graph.add(_workload(plan, group, index), *before, *others)
    return graph


def _labels(plan: ReplicaJobPlan, component: str) -> dict[str, str]:
    return common_labels(plan.job, plan.kind, component, jobset.without_kueue_labels(plan.labels))


def _selector(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> dict[str, str]:
    return {JOB_NAME: plan.job, REPLICA_TYPE: group.type, REPLICA_INDEX: str(index)}


def _service_selector(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> dict[str, str]:
    """A JobSet's pods share a template per type: the controller's index label tells them apart."""
    if jobset.is_queued(plan.labels):
        return {JOB_NAME: plan.job, REPLICA_TYPE: group.type, jobset.JOB_INDEX: str(index)}
    return _selector(plan, group, index)


def _is_master_role(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> bool:
    """Kubeflow's ``job-role: master``, as the kind's controller decides it."""
    return plan.master_role({g.type for g in plan.groups}, group.type, index)


def _uses_assets(group: ReplicaGroup) -> bool:
    volumes = (group.template.get("spec") or {}).get("volumes") or []
    return any(volume.get("name") == ASSETS_VOLUME for volume in volumes)


def _service(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> Manifest:
    main = next(c for c in group.template["spec"]["containers"] if c["name"] == group.container)
    ports = [
        {"name": port["name"], "port": int(port["containerPort"])}
        for port in main.get("ports") or []
        if isinstance(port, dict) and port.get("name") and port.get("containerPort")
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(
            group.name(plan.job, index),
            plan.namespace,
            {**_labels(plan, group.type), **_selector(plan, group, index)},
        ),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": _service_selector(plan, group, index),
            "ports": ports,
        },
    }


def _pod_template(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> Manifest:
    given = copy.deepcopy(group.template)
    meta = dict(given.get("metadata") or {})
    master_role = _is_master_role(plan, group, index)
    # PyTorch's rank: a worker's is its index plus one when a master holds rank 0.
    rank = index + 1 if group.type == "worker" and "master" in plan.groups_by_type else index
    labels = {
        **plan.operator_labels.for_pod(plan.job, group.type, index, rank, master_role),
        **_labels(plan, group.type),
        **_selector(plan, group, index),
    }
    if master_role:
        labels[JOB_ROLE] = "master"
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    template = {**given, "metadata": meta}
    pod = template["spec"]
    pod["restartPolicy"] = group.restart.pod
    if plan.run.scheduler_name:
        pod["schedulerName"] = plan.run.scheduler_name
    if plan.gang is not None:
        join(plan.gang, plan.job, group.type, template)
    env = plan.env.get((group.type, index), [])
    targets = [c for c in pod["containers"] if c.get("name") == group.container]
    if plan.env_target == "all":
        targets = list(pod["containers"])
    elif plan.env_target == "first-default":
        targets = targets[:1]
    for container in targets:
        replace_env(container, env)
    return template


def _workload(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> Manifest:
    if group.restart.pod != "Always":
        return _job(plan, group, index)
    template = _pod_template(plan, group, index)
    labels = {**_labels(plan, group.type), **_selector(plan, group, index)}
    name = group.name(plan.job, index)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(name, plan.namespace, labels),
        "spec": {
            "serviceName": name,
            "replicas": 0 if plan.run.suspend else 1,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": _selector(plan, group, index)},
            "template": template,
        },
    }


def _job(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> Manifest:
    template = _pod_template(plan, group, index)
    labels = {**_labels(plan, group.type), **_selector(plan, group, index)}
    name = group.name(plan.job, index)
    spec: Manifest = {"parallelism": 1, "completions": 1}
    if group.restart.backoff_limit is not None:
        spec["backoffLimit"] = group.restart.backoff_limit
    if plan.run.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = plan.run.active_deadline_seconds
    if plan.run.ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = plan.run.ttl_seconds_after_finished
    if plan.run.suspend:
        spec["suspend"] = True
    if group.restart.permanent_exit_codes:
        spec["podFailurePolicy"] = {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": group.container,
                        "operator": "In",
                        "values": PERMANENT_EXIT_CODES,
                    },
                },
                # Evictions and preemptions are not the program's fault: retry them without
                # counting them against backoffLimit.
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        }
    spec["template"] = template
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(name, plan.namespace, labels),
        "spec": spec,
    }


def _jobset(plan: ReplicaJobPlan) -> Manifest:
    """The job as one JobSet (Kueue): a replicated Job per type, the env shared per index."""
    replicated: list[Manifest] = []
    offset = 0
    for group in plan.groups:
        if group.restart.pod == "Always":
            # A JobSet runs Jobs only; the closest is restarting the container when it fails.
            group = dataclasses.replace(
                group, restart=dataclasses.replace(group.restart, pod="OnFailure")
            )
        jobs = [_job(plan, group, index) for index in range(group.replicas)]
        spec = copy.deepcopy(jobs[0]["spec"])
        # The JobSet carries these for the whole job (and Kueue owns suspension).
        spec.pop("suspend", None)
        spec.pop("ttlSecondsAfterFinished", None)
        pod_labels = spec["template"]["metadata"]["labels"]
        legacy = plan.operator_labels
        for key in (REPLICA_INDEX, *legacy.index, *legacy.rank):
            pod_labels.pop(key, None)
        for key in (JOB_ROLE, *legacy.role):
            # Worker 0 alone: no per-index label in a template shared by the type.
            if not all(key in job["spec"]["template"]["metadata"]["labels"] for job in jobs):
                pod_labels.pop(key, None)
        for position, container in enumerate(spec["template"]["spec"]["containers"]):
            per_index = [
                job["spec"]["template"]["spec"]["containers"][position].get("env") or []
                for job in jobs
            ]
            if per_index[0]:
                container["env"] = jobset.shared_env(per_index, offset)
        labels = {k: v for k, v in jobs[0]["metadata"]["labels"].items() if k != REPLICA_INDEX}
        replicated.append(
            {
                "name": group.type,
                "replicas": group.replicas,
                "template": {"metadata": {"labels": labels}, "spec": spec},
            }
        )
        offset += group.replicas
    deciding = plan.groups_by_type[plan.success.type]
    operator = "Any" if plan.success.any else "All"
    return jobset.jobset(
        plan.job,
        plan.namespace,
        {**_labels(plan, "jobset"), **jobset.kueue_labels(plan.labels)},
        replicated,
        (operator, deciding.type),
        suspend=plan.run.suspend,
        ttl_seconds_after_finished=plan.run.ttl_seconds_after_finished,
    )


def as_queued(plan: ReplicaJobPlan) -> ReplicaJobPlan:
    """The plan as its JobSet runs it, when Kueue queues the job; with a warning for each
    thing a JobSet cannot express exactly."""
    if not jobset.is_queued(plan.labels):
        return plan
    warnings = list(plan.warnings)
    success = plan.success
    deciding = plan.groups_by_type[success.type]
    label = f"metadata.labels.{jobset.QUEUE_LABEL}"
    if len(success.indexes) < deciding.replicas:
        warnings.append(
            Problem(
                label,
                f"queued as a JobSet, the job succeeds when every {deciding.type} succeeds "
                f"(a JobSet's success policy names replica types, not indexes; Kubeflow waits "
                f"for {deciding.type} {', '.join(map(str, success.indexes))} only)",
            )
        )
        success = Success(success.type, tuple(range(deciding.replicas)), success.any)
    for group in plan.groups:
        if group.restart.pod == "Always":
            warnings.append(
                Problem(
                    f"{group.source_path}.restartPolicy",
                    "queued as a JobSet, an Always replica is a Job whose container restarts "
                    "when it fails (OnFailure): a JobSet runs Jobs only",
                )
            )
    return dataclasses.replace(plan, success=success, warnings=warnings)
