"""The resource graph of replica-typed jobs (TFJob, PyTorchJob)."""

from __future__ import annotations

import copy

from components.core.graph import Graph, Manifest
from components.core.labels import REPLICA_TYPE, common_labels, metadata
from components.core.pod_template import main_container, with_env
from components.core.replica_spec import ASSETS_DIR, BOOTSTRAP, ReplicaGroup, ReplicaJobPlan

ASSETS_VOLUME = "trainjobs-assets"


PERMANENT_EXIT_CODES = list(range(1, 128))


# Where a pod learns its index: Indexed Jobs annotate it, StatefulSets (1.28+) label it.
INDEX_FROM_JOB = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


INDEX_FROM_STATEFULSET = "metadata.labels['apps.kubernetes.io/pod-index']"


def build_replica_graph(plan: ReplicaJobPlan) -> Graph:
    """ConfigMap -> headless Service(s) -> parameter servers, workers, master (in that order)."""
    graph = Graph(job=plan.job, kind=plan.kind, namespace=plan.namespace)

    def labels(component: str) -> dict[str, str]:
        return common_labels(plan.job, plan.kind, component, plan.labels)

    config_map = graph.add(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(f"{plan.job}-assets", plan.namespace, labels("assets")),
            "data": {"bootstrap.sh": plan.bootstrap} if plan.bootstrap else {},
        }
    )
    services = [graph.add(_headless_service(plan.job, plan, labels("network"), None), config_map)]
    if plan.master_service:
        services.append(
            graph.add(
                _headless_service(plan.master_service, plan, labels("network"), "master"),
                config_map,
            )
        )
    deciding = plan.deciding_group
    order = sorted(plan.groups, key=lambda g: (g is deciding, not g.long_running, g.type))
    workloads = []
    for replica_group in order:
        manifest = (
            _statefulset(plan, replica_group, labels(replica_group.type))
            if replica_group.long_running
            else _indexed_job(
                plan, replica_group, labels(replica_group.type), replica_group is deciding
            )
        )
        after = workloads if replica_group is deciding else []
        workloads.append(graph.add(manifest, config_map, *services, *after))
    return graph


def _headless_service(
    name: str, plan: ReplicaJobPlan, labels: dict[str, str], replica_type: str | None
) -> Manifest:
    selector = {"training.kubeflow.org/job-name": plan.job}
    if replica_type:
        selector[REPLICA_TYPE] = replica_type
    spec: Manifest = {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": selector,
        "ports": [{"name": plan.port_name, "port": plan.port, "targetPort": plan.port}],
    }
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": metadata(name, plan.namespace, labels),
        "spec": spec,
    }


def _pod_template(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str], index_from: str
) -> Manifest:
    template = copy.deepcopy(replica_group.template)
    meta = template.setdefault("metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels, REPLICA_TYPE: replica_group.type}
    pod = template["spec"]
    pod["subdomain"] = plan.job
    pod.setdefault("automountServiceAccountToken", False)
    container = main_container(template, replica_group.container)
    env: list[Manifest] = [
        {"name": "TRAINJOBS_REPLICA_TYPE", "value": replica_group.type},
        {
            "name": "TRAINJOBS_REPLICA_INDEX",
            "valueFrom": {"fieldRef": {"fieldPath": index_from}},
        },
        *plan.static_env.get(replica_group.type, []),
    ]
    with_env(container, env)
    ports = container.setdefault("ports", [])
    if not any(port.get("name") == plan.port_name for port in ports):
        ports.append({"name": plan.port_name, "containerPort": plan.port, "protocol": "TCP"})
    if plan.bootstrap:
        container["command"] = ["sh", BOOTSTRAP, *container["command"], *container.pop("args", [])]
        container["volumeMounts"] = [
            *(container.get("volumeMounts") or []),
            {"name": ASSETS_VOLUME, "mountPath": ASSETS_DIR, "readOnly": True},
        ]
        pod["volumes"] = [
            *(pod.get("volumes") or []),
            {
                "name": ASSETS_VOLUME,
                "configMap": {"name": f"{plan.job}-assets", "defaultMode": 0o555},
            },
        ]
    return template


def _indexed_job(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str], deciding: bool
) -> Manifest:
    template = _pod_template(plan, replica_group, labels, INDEX_FROM_JOB)
    template["spec"]["restartPolicy"] = "Never"  # podFailurePolicy requires it
    spec: Manifest = {
        "completionMode": "Indexed",
        "completions": replica_group.replicas,
        "parallelism": replica_group.replicas,
        "podFailurePolicy": {
            "rules": [
                {
                    "action": "FailJob",
                    "onExitCodes": {
                        "containerName": replica_group.container,
                        "operator": "In",
                        "values": PERMANENT_EXIT_CODES,
                    },
                },
                # Evictions and preemptions are not the program's fault: retry without
                # counting them against backoffLimit.
                {
                    "action": "Ignore",
                    "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
                },
            ]
        },
        "template": template,
    }
    if deciding and replica_group.type == "worker" and replica_group.replicas > 1:
        spec["successPolicy"] = {"rules": [{"succeededIndexes": "0"}]}
    if plan.backoff_limit is not None:
        spec["backoffLimit"] = plan.backoff_limit
    if plan.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = plan.active_deadline_seconds
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(replica_group.workload, plan.namespace, labels),
        "spec": spec,
    }


def _statefulset(
    plan: ReplicaJobPlan, replica_group: ReplicaGroup, labels: dict[str, str]
) -> Manifest:
    template = _pod_template(plan, replica_group, labels, INDEX_FROM_STATEFULSET)
    selector = {"training.kubeflow.org/job-name": plan.job, REPLICA_TYPE: replica_group.type}
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(replica_group.workload, plan.namespace, labels),
        "spec": {
            "serviceName": plan.job,
            "replicas": replica_group.replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector},
            "template": template,
        },
    }


def index_check_script() -> str:
    """Shell lines shared by bootstrap scripts: validate the index the downward API gave."""
    return (
        'index="${TRAINJOBS_REPLICA_INDEX:?the pod index is set by the downward API}"\n'
        'case "$index" in\n'
        "    ''|*[!0-9]*) echo \"bootstrap.sh: replica index '$index' is not a number\" >&2; "
        "exit 2 ;;\n"
        "esac\n"
    )
