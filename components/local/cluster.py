"""What a job's resource graph becomes on one machine: the pods, identities and grants.

Pure: graph in, plain data out. The runtime (:mod:`trainjobs.local.runtime`) executes it.

- A StatefulSet becomes ``replicas`` pods named ``<statefulset>-<i>`` (their hostname too),
  under the StatefulSet's ``serviceName`` subdomain, restartPolicy Always, labelled as the
  StatefulSet controller labels them (``apps.kubernetes.io/pod-index``, 1.28+).
- A batch/v1 Job becomes one pod per completion index. A non-indexed Job (completions 1, the
  ChainerJob master) gets one pod named after its template's ``hostname`` (the ChainerJob
  master sets it, so the hostfile can name it). An Indexed Job gets, for every index ``i``,
  what the Job controller gives its pods: hostname ``<job>-<i>`` (stable DNS under the
  template's ``subdomain``), the ``batch.kubernetes.io/job-completion-index`` annotation and
  label, and ``JOB_COMPLETION_INDEX`` in every container. Each Job keeps its ``backoffLimit``
  (Kubernetes' default 6), ``activeDeadlineSeconds``, ``podFailurePolicy`` exit-code rules and
  ``successPolicy`` succeeded indexes.
- A Service whose selector matches exactly one pod makes its DNS names resolve to that pod
  (PyTorch's ``<job>-master-0``). A Service selecting several pods would need one DNS answer
  with several addresses, which a hosts file cannot give: pods address each other by their
  own names, which every pod resolves.
- ServiceAccounts, Roles and RoleBindings become grants the kubectl stand-in enforces.
- ConfigMaps (and Secrets given beside the job) become volume and env contents; of the other
  objects given beside the job, what has no local equivalent is refused at once.

Anything else (parallel non-indexed Jobs, Deployments...) is refused with a clear message
rather than run half-right.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
from dataclasses import dataclass, field
from typing import Any

from trainjobs.core import quantity
from trainjobs.core.errors import UserError
from trainjobs.core.graph import Graph, Manifest
from trainjobs.core.jobset import child_jobs
from trainjobs.core.pod_template import GPU_RESOURCE

DEFAULT_BACKOFF_LIMIT = 6
"""batch/v1 Job's default when backoffLimit is unset."""
DEFAULT_GRACE_SECONDS = 30
"""A pod's default terminationGracePeriodSeconds."""
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
"""Annotation (and, 1.28+, label) the Job controller puts on each pod of an Indexed Job."""
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
"""Env var the Job controller adds to every container of an Indexed Job's pods."""
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
"""Label the StatefulSet controller puts on each pod (1.28+): its ordinal."""
STATEFULSET_POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
# A PodGroup changes only how pods are placed: the runtime honours its minMember itself.
_PASSIVE_KINDS = {"ConfigMap", "ServiceAccount", "Role", "RoleBinding", "PodGroup"}
_FAILURE_ACTIONS = ("FailJob", "Ignore", "Count")


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
    index: int | None = None
    """The completion index (Indexed Job) or ordinal (StatefulSet); None for a plain Job."""
    labels: dict[str, str] = field(default_factory=dict)
    """The template's labels plus those its controller adds."""
    annotations: dict[str, str] = field(default_factory=dict)
    """The template's annotations plus those its controller adds."""
    controller_env: dict[str, str] = field(default_factory=dict)
    """Env vars the controller adds to every container (JOB_COMPLETION_INDEX)."""
    service_names: tuple[str, ...] = ()
    """Services whose selector matches this pod alone: their names resolve to it."""

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
            total += quantity.whole_units(value or 0)
        return total


@dataclass(frozen=True)
class ExitCodeRule:
    """A batch/v1 podFailurePolicy rule with ``onExitCodes``, in the policy's order."""

    position: int
    """The rule's index in ``podFailurePolicy.rules`` (Kubernetes names it in the message)."""
    action: str
    """FailJob: the Job fails at once; Ignore: retried without counting; Count: the default."""
    container: str | None
    """Only this container's exit code counts; None: any container's."""
    operator: str
    """In or NotIn."""
    values: frozenset[int]

    def matches(self, container: str, code: int) -> bool:
        if self.container is not None and container != self.container:
            return False
        return (code in self.values) == (self.operator == "In")


@dataclass(frozen=True)
class JobPlan:
    """One batch/v1 Job: a pod per completion index and the rules that decide its outcome."""

    name: str
    pods: list[PodPlan]
    """One per completion index, in index order."""
    indexed: bool
    backoff_limit: int
    active_deadline_seconds: int | None
    exit_code_rules: tuple[ExitCodeRule, ...] = ()
    succeeded_indexes: frozenset[int] | None = None
    """successPolicy: the Job completes once these indexes succeeded; None: all of them."""


@dataclass(frozen=True)
class ClusterPlan:
    job: str
    namespace: str
    jobs: list[JobPlan]
    """Every Job of the graph, those that decide success first."""
    workers: list[PodPlan]
    """StatefulSet pods: long-running, restarted when they exit, stopped at the end."""
    config_maps: dict[str, dict[str, str]]
    secrets: dict[str, Manifest]
    """The job's Secrets as the graph has them: those given beside the job with their data
    (:func:`secret_files`), the ssh transport's without (see trainjobs.local.ssh)."""
    grants: dict[str, list[tuple[str, str, str]]]
    """service account -> (verb, resource, pod name or '*') it may use."""
    success_jobs: tuple[str, ...] = ()
    """The Jobs whose completion is the job's success: all of them, or any with success_any."""
    success_any: bool = False

    @property
    def completion(self) -> JobPlan:
        """The first Job that decides success (its limits are reported as the job's)."""
        return self.jobs[0]

    @property
    def master(self) -> PodPlan:
        """The completion Job's first pod (the ChainerJob master, the chief or master)."""
        return self.completion.pods[0]

    @property
    def backoff_limit(self) -> int:
        return self.completion.backoff_limit

    @property
    def active_deadline_seconds(self) -> int | None:
        return self.completion.active_deadline_seconds

    @property
    def job_pods(self) -> list[PodPlan]:
        return [pod for job in self.jobs for pod in job.pods]

    @property
    def pods(self) -> list[PodPlan]:
        return [*self.job_pods, *self.workers]


LOCAL_COMPANIONS = ("ConfigMap", "Secret", "Service", "ServiceAccount")
"""What a local run provides of the objects given beside the job (trainjobs.kinds.bundle):
volume and env contents, names that resolve, identities."""


def refuse_companions(graph: Graph, companions: tuple[str, ...]) -> None:
    """Refuse at once, naming each, the objects beside the job a local run cannot provide."""
    refused = [
        f"{key} (no local equivalent)"
        for key in companions
        if graph.get(key).kind not in LOCAL_COMPANIONS
    ]
    if refused:
        raise UserError(
            f"local runs cannot create {', '.join(refused)}, given beside the job in its file; "
            f"they provide {', '.join(LOCAL_COMPANIONS)}: run this file on a cluster, or "
            "leave those objects out of it"
        )


def secret_files(secret: Manifest) -> dict[str, str]:
    """A Secret given beside the job as its volume and env hold it: ``data`` decoded, with
    ``stringData`` over it (the API server merges stringData into data, overwriting:
    kubernetes pkg/apis/core/v1/conversion.go ``Convert_v1_Secret_To_core_Secret``)."""
    name = secret["metadata"]["name"]
    files: dict[str, str] = {}
    for key, value in (secret.get("data") or {}).items():
        try:
            files[key] = base64.b64decode(str(value), validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise UserError(
                f"Secret {name}: data.{key}: not base64 of UTF-8 text, which local runs "
                "write; give text in stringData instead"
            ) from None
    files.update({key: str(value) for key, value in (secret.get("stringData") or {}).items()})
    return files


def plan_cluster(
    graph: Graph,
    success_jobs: tuple[str, ...],
    success_any: bool = False,
    companions: tuple[str, ...] = (),
) -> ClusterPlan:
    refuse_companions(graph, companions)
    config_maps: dict[str, dict[str, str]] = {}
    secrets: dict[str, Manifest] = {}
    accounts: dict[str, Manifest] = {}
    services: list[Manifest] = []
    workers: list[PodPlan] = []
    jobs: list[JobPlan] = []
    for node in graph.nodes:
        manifest = node.manifest
        if node.kind == "ConfigMap":
            config_maps[node.name] = dict(manifest.get("data") or {})
        elif node.kind == "Secret":
            secrets[node.name] = manifest
        elif node.kind == "ServiceAccount":
            accounts[node.name] = manifest
        elif node.kind == "Service":
            services.append(manifest)
        elif node.kind == "StatefulSet":
            workers += _statefulset_pods(manifest, accounts)
        elif node.kind == "Job":
            jobs.append(_job_plan(manifest, accounts))
        elif node.kind == "JobSet":
            # Run as the JobSet controller would run it: its child Jobs, named and annotated.
            jobs += [_job_plan(child, accounts) for child in child_jobs(manifest)]
        elif node.kind not in _PASSIVE_KINDS:
            raise UserError(
                f"local runs cannot run {node.key} yet (they run Jobs and StatefulSets); run "
                "this job kind on a cluster"
            )
    missing = sorted(set(success_jobs) - {job.name for job in jobs})
    if missing:
        raise UserError(f"the graph of {graph.job} has no Job named {missing[0]!r}")
    jobs = sorted(jobs, key=lambda job: job.name not in success_jobs)
    named = _with_service_names([pod for job in jobs for pod in job.pods] + workers, services)
    return ClusterPlan(
        job=graph.job,
        namespace=graph.namespace,
        jobs=[dataclasses.replace(job, pods=[named[pod.name] for pod in job.pods]) for job in jobs],
        workers=[named[pod.name] for pod in workers],
        config_maps=config_maps,
        secrets=secrets,
        grants=_grants(graph),
        success_jobs=tuple(success_jobs),
        success_any=success_any,
    )


def _job_plan(manifest: Manifest, accounts: dict[str, Manifest]) -> JobPlan:
    name = manifest["metadata"]["name"]
    spec = manifest["spec"]
    template = spec["template"]
    pod_spec = template["spec"]
    indexed = spec.get("completionMode") == "Indexed"
    completions = int(spec.get("completions", 1))
    if not indexed and (completions != 1 or int(spec.get("parallelism", 1)) != 1):
        raise UserError(
            f"local runs cannot run Job/{name}: a non-indexed Job must have completions and "
            "parallelism 1 (use completionMode Indexed for several pods)"
        )
    if indexed and int(spec.get("parallelism", completions)) != completions:
        raise UserError(
            f"local runs cannot run Job/{name}: an Indexed Job must run every index at once "
            f"(parallelism = completions = {completions})"
        )
    if "backoffLimitPerIndex" in spec:
        raise UserError(f"local runs cannot run Job/{name}: backoffLimitPerIndex is not supported")
    meta = template.get("metadata") or {}
    common = {
        "owner": f"Job/{name}",
        "template": template,
        "restart_policy": pod_spec.get("restartPolicy", "Never"),
        "service_account": _token_account(pod_spec, accounts),
    }
    if indexed:
        pods = [
            PodPlan(
                name=f"{name}-{index}",
                # The Job controller sets it, whatever the template says.
                hostname=f"{name}-{index}",
                subdomain=pod_spec.get("subdomain"),
                index=index,
                labels={**(meta.get("labels") or {}), COMPLETION_INDEX: str(index)},
                annotations={**(meta.get("annotations") or {}), COMPLETION_INDEX: str(index)},
                controller_env={COMPLETION_INDEX_ENV: str(index)},
                **common,
            )
            for index in range(completions)
        ]
    else:
        hostname = pod_spec.get("hostname") or name
        pods = [
            PodPlan(
                name=hostname,
                hostname=hostname,
                subdomain=pod_spec.get("subdomain"),
                labels=dict(meta.get("labels") or {}),
                annotations=dict(meta.get("annotations") or {}),
                **common,
            )
        ]
    return JobPlan(
        name=name,
        pods=pods,
        indexed=indexed,
        backoff_limit=int(spec.get("backoffLimit", DEFAULT_BACKOFF_LIMIT)),
        active_deadline_seconds=spec.get("activeDeadlineSeconds"),
        exit_code_rules=_exit_code_rules(name, spec.get("podFailurePolicy")),
        succeeded_indexes=_succeeded_indexes(name, spec.get("successPolicy")),
    )


def _exit_code_rules(job: str, policy: Manifest | None) -> tuple[ExitCodeRule, ...]:
    """podFailurePolicy's onExitCodes rules. onPodConditions rules never match locally: the
    runtime does not evict or preempt pods, so no pod gets a DisruptionTarget condition."""
    rules = []
    for position, rule in enumerate((policy or {}).get("rules") or []):
        on_codes = rule.get("onExitCodes")
        if on_codes is None:
            continue
        if rule["action"] not in _FAILURE_ACTIONS:
            raise UserError(
                f"local runs cannot run Job/{job}: podFailurePolicy.rules[{position}].action "
                f"{rule['action']!r} is not supported (use {', '.join(_FAILURE_ACTIONS)})"
            )
        rules.append(
            ExitCodeRule(
                position=position,
                action=rule["action"],
                container=on_codes.get("containerName"),
                operator=on_codes["operator"],
                values=frozenset(int(code) for code in on_codes["values"]),
            )
        )
    return tuple(rules)


def _succeeded_indexes(job: str, policy: Manifest | None) -> frozenset[int] | None:
    """successPolicy with ``succeededIndexes`` rules ("0", "0-2,5"); the first rule is used."""
    rules = (policy or {}).get("rules") or []
    if not rules:
        return None
    if len(rules) > 1 or "succeededCount" in rules[0] or "succeededIndexes" not in rules[0]:
        raise UserError(
            f"local runs cannot run Job/{job}: only a successPolicy with one succeededIndexes "
            "rule is supported"
        )
    indexes: set[int] = set()
    for part in str(rules[0]["succeededIndexes"]).split(","):
        first, _, last = part.partition("-")
        indexes.update(range(int(first), int(last or first) + 1))
    return frozenset(indexes)


def _statefulset_pods(manifest: Manifest, accounts: dict[str, Manifest]) -> list[PodPlan]:
    name = manifest["metadata"]["name"]
    spec = manifest["spec"]
    template = spec["template"]
    meta = template.get("metadata") or {}
    return [
        PodPlan(
            name=f"{name}-{index}",
            hostname=f"{name}-{index}",
            subdomain=spec.get("serviceName"),
            owner=f"StatefulSet/{name}",
            template=template,
            restart_policy="Always",
            service_account=_token_account(template["spec"], accounts),
            index=index,
            labels={
                **(meta.get("labels") or {}),
                POD_INDEX_LABEL: str(index),
                STATEFULSET_POD_NAME_LABEL: f"{name}-{index}",
            },
            annotations=dict(meta.get("annotations") or {}),
        )
        for index in range(int(spec.get("replicas", 1)))
    ]


def _with_service_names(pods: list[PodPlan], services: list[Manifest]) -> dict[str, PodPlan]:
    """Each pod, with the names of the Services that select it and no other pod."""
    names: dict[str, list[str]] = {pod.name: [] for pod in pods}
    for service in services:
        selector = (service.get("spec") or {}).get("selector") or {}
        selected = [
            pod
            for pod in pods
            if selector and all(pod.labels.get(key) == value for key, value in selector.items())
        ]
        if len(selected) == 1:
            names[selected[0].name].append(service["metadata"]["name"])
    return {
        pod.name: dataclasses.replace(pod, service_names=tuple(names[pod.name])) for pod in pods
    }


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
