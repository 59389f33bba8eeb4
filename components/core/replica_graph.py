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
"""

from __future__ import annotations

import copy

from components.core.gang import join, pod_group
from components.core.graph import Graph, Manifest, Node
from components.core.labels import (
    JOB_NAME,
    JOB_ROLE,
    REPLICA_INDEX,
    REPLICA_TYPE,
    common_labels,
    metadata,
)
from components.core.pod_template import replace_env
from components.core.replica_spec import (
    PERMANENT_EXIT_CODES,
    ReplicaGroup,
    ReplicaJobPlan,
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
    return common_labels(plan.job, plan.kind, component, plan.labels)


def _selector(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> dict[str, str]:
    return {JOB_NAME: plan.job, REPLICA_TYPE: group.type, REPLICA_INDEX: str(index)}


def _is_master_role(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> bool:
    """Kubeflow's ``job-role: master``: every chief/master pod, else worker 0."""
    if any(g.type in ("chief", "master") for g in plan.groups):
        return group.type in ("chief", "master")
    return group.type == "worker" and index == 0


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
            "selector": _selector(plan, group, index),
            "ports": ports,
        },
    }


def _pod_template(plan: ReplicaJobPlan, group: ReplicaGroup, index: int) -> Manifest:
    given = copy.deepcopy(group.template)
    meta = dict(given.get("metadata") or {})
    labels = {**_labels(plan, group.type), **_selector(plan, group, index)}
    if _is_master_role(plan, group, index):
        labels[JOB_ROLE] = "master"
    meta["labels"] = {**(meta.get("labels") or {}), **labels}
    template = {**given, "metadata": meta}
    pod = template["spec"]
    pod["restartPolicy"] = group.restart.pod
    # Training processes rarely call the API server: no token unless the template asks.
    pod.setdefault("automountServiceAccountToken", False)
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
    template = _pod_template(plan, group, index)
    labels = {**_labels(plan, group.type), **_selector(plan, group, index)}
    name = group.name(plan.job, index)
    if group.restart.pod == "Always":
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
