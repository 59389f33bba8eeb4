"""What a job's resource graph becomes on one machine: the pods, identities and grants.

Pure: graph in, plain data out. The runtime (:mod:`components.local.runtime`) executes it.

- A StatefulSet becomes ``replicas`` pods named ``<statefulset>-<i>`` (their hostname too),
  under the StatefulSet's ``serviceName`` subdomain, restartPolicy Always.
- The job's completion Job becomes one pod named after its template's ``hostname`` (the
  ChainerJob master sets it, so the hostfile can name it), restartPolicy Never or OnFailure,
  with the Job's ``backoffLimit`` (Kubernetes' default 6) and ``activeDeadlineSeconds``.
- ServiceAccounts, Roles and RoleBindings become grants the kubectl stand-in enforces.
- ConfigMaps become volume contents. Services need nothing beyond the pods' DNS names.

Anything else (Indexed or parallel Jobs, other Jobs, Deployments...) is refused with a clear
message rather than run half-right.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from components.errors import UserError
from components.graph import Graph, Manifest

DEFAULT_BACKOFF_LIMIT = 6
"""batch/v1 Job's default when backoffLimit is unset."""
DEFAULT_GRACE_SECONDS = 30
"""A pod's default terminationGracePeriodSeconds."""
GPU_RESOURCE = "nvidia.com/gpu"
_PASSIVE_KINDS = {"ConfigMap", "ServiceAccount", "Role", "RoleBinding", "Service"}


@dataclass(frozen=True)
class PodPlan:
    """One pod to run: its names, its template and who owns it."""

    name: str
    hostname: str
    subdomain: str | None
    owner: str
    """`Kind/name` of the workload that created it."""
    template: Manifest
    restart_policy: str
    service_account: str | None
    """The service account whose token the pod mounts, or None without a token."""

    @property
    def spec(self) -> Manifest:
        return self.template["spec"]

    @property
    def grace_seconds(self) -> float:
        return float(self.spec.get("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS))

    def gpu_request(self) -> int:
        """GPUs the pod asks for (limits, else requests), summed over its main containers."""
        total = 0
        for container in self.spec.get("containers") or []:
            resources = container.get("resources") or {}
            value = (resources.get("limits") or {}).get(GPU_RESOURCE) or (
                resources.get("requests") or {}
            ).get(GPU_RESOURCE)
            total += int(str(value or 0))
        return total


@dataclass(frozen=True)
class ClusterPlan:
    job: str
    namespace: str
    master: PodPlan
    """The completion Job's pod: its outcome is the job's outcome."""
    workers: list[PodPlan]
    backoff_limit: int
    active_deadline_seconds: int | None
    config_maps: dict[str, dict[str, str]]
    grants: dict[str, list[tuple[str, str, str]]]
    """service account -> (verb, resource, pod name or '*') it may use."""

    @property
    def pods(self) -> list[PodPlan]:
        return [self.master, *self.workers]


def plan_cluster(graph: Graph, completion_job: str) -> ClusterPlan:
    config_maps: dict[str, dict[str, str]] = {}
    accounts: dict[str, Manifest] = {}
    workers: list[PodPlan] = []
    job: Manifest | None = None
    for node in graph.nodes:
        manifest = node.manifest
        if node.kind == "ConfigMap":
            config_maps[node.name] = dict(manifest.get("data") or {})
        elif node.kind == "ServiceAccount":
            accounts[node.name] = manifest
        elif node.kind == "StatefulSet":
            workers += _statefulset_pods(manifest, accounts)
        elif node.kind == "Job" and node.name == completion_job:
            job = manifest
        elif node.kind not in _PASSIVE_KINDS:
            raise UserError(
                f"local runs cannot run {node.key} yet (they run one Job, the job's "
                f"completion Job, plus StatefulSets); run this job kind on a cluster"
            )
    if job is None:
        raise UserError(f"the graph of {graph.job} has no Job named {completion_job!r}")
    spec = job["spec"]
    if spec.get("completionMode") == "Indexed" or spec.get("completions", 1) != 1:
        raise UserError(
            f"local runs cannot run Job/{completion_job} yet: only single-pod Jobs are "
            "supported (no completionMode Indexed, completions 1)"
        )
    template = job["spec"]["template"]
    pod_spec = template["spec"]
    master = PodPlan(
        name=pod_spec.get("hostname") or completion_job,
        hostname=pod_spec.get("hostname") or completion_job,
        subdomain=pod_spec.get("subdomain"),
        owner=f"Job/{completion_job}",
        template=template,
        restart_policy=pod_spec.get("restartPolicy", "Never"),
        service_account=_token_account(pod_spec, accounts),
    )
    return ClusterPlan(
        job=graph.job,
        namespace=graph.namespace,
        master=master,
        workers=workers,
        backoff_limit=int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)),
        active_deadline_seconds=spec.get("activeDeadlineSeconds"),
        config_maps=config_maps,
        grants=_grants(graph),
    )


def _statefulset_pods(manifest: Manifest, accounts: dict[str, Manifest]) -> list[PodPlan]:
    name = manifest["metadata"]["name"]
    spec = manifest["spec"]
    template = spec["template"]
    return [
        PodPlan(
            name=f"{name}-{index}",
            hostname=f"{name}-{index}",
            subdomain=spec.get("serviceName"),
            owner=f"StatefulSet/{name}",
            template=template,
            restart_policy="Always",
            service_account=_token_account(template["spec"], accounts),
        )
        for index in range(int(spec.get("replicas", 1)))
    ]


def _token_account(pod_spec: dict[str, Any], accounts: dict[str, Manifest]) -> str | None:
    """The pod's service account if a token is mounted: the pod's setting wins over the SA's."""
    account = pod_spec.get("serviceAccountName") or "default"
    mount = pod_spec.get("automountServiceAccountToken")
    if mount is None:
        mount = (accounts.get(account) or {}).get("automountServiceAccountToken", True)
    return account if mount else None


def _grants(graph: Graph) -> dict[str, list[tuple[str, str, str]]]:
    """Core-group permissions of each service account bound to a Role of this graph."""
    roles = {node.name: node.manifest for node in graph.nodes if node.kind == "Role"}
    grants: dict[str, list[tuple[str, str, str]]] = {}
    for node in graph.nodes:
        if node.kind != "RoleBinding" or node.manifest["roleRef"]["kind"] != "Role":
            continue
        role = roles.get(node.manifest["roleRef"]["name"])
        if role is None:
            continue
        allowed = [
            (verb, resource, name)
            for rule in role.get("rules") or []
            if "" in (rule.get("apiGroups") or [])
            for resource in rule.get("resources") or []
            for verb in rule.get("verbs") or []
            for name in rule.get("resourceNames") or ["*"]
        ]
        for subject in node.manifest.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount":
                grants.setdefault(subject["name"], []).extend(allowed)
    return grants
