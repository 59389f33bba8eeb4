"""The MPI graph (KEP-141's, shared by MPIJob): assets, RBAC, Service, StatefulSets, master Job.

The master pod runs the user's command (typically ``mpiexec ... python train.py``). Open MPI
starts its daemons on the workers through the generated rsh agent, which uses ``kubectl
exec``; workers only sleep as exec targets. An init container on the master waits until
every worker answers an exec round trip, so nothing else has to watch for readiness.

With the ssh transport (:mod:`trainjobs.kinds.mpi.ssh_assets`) the RBAC objects give way
to the job's ssh-auth Secret: workers run sshd, the rsh agent is ssh, and the waiter's round
trip goes over ssh, from the master's own image (which carries the ssh client mpiexec uses).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

from trainjobs.core import jobset
from trainjobs.core.gang import join, pod_group
from trainjobs.core.graph import Graph, GraphOptions, Manifest, Node
from trainjobs.core.labels import JOB_ROLE, REPLICA_TYPE, WORKER_SET, common_labels, metadata
from trainjobs.core.names import JobNames
from trainjobs.core.pod_template import default_field, main_container, replace_env, with_env
from trainjobs.kinds.mpi import assets, queued, ssh_assets
from trainjobs.kinds.mpi.plan import MpiPlan, WorkerGroup

ASSETS_VOLUME = "trainjobs-assets"
KUBECTL_VOLUME = "trainjobs-kubectl"
SSH_VOLUME = "trainjobs-ssh"
SSH_STATE_VOLUME = "trainjobs-ssh-state"
# An MPIJob operator's volume names (mpi-operator pkg/controller/mpi_job_controller.go
# configVolumeName and sshAuthVolume; training-operator's configVolumeName): a user's template
# may mount them, e.g. in an init container that reads the hostfile.
CONFIG_VOLUME = "mpi-job-config"
SSH_AUTH_VOLUME = "ssh-auth"

# Workers that give no command of their own are exec targets (KEP-141): they sleep until told
# to stop, and exit 0 on SIGTERM at once (a plain `sleep` as PID 1 would ignore SIGTERM and
# wait out the grace period). The trap also ends the background sleep, which would otherwise
# outlive the shell wherever the pod has no PID namespace of its own to take it down.
WORKER_COMMAND = [
    "sh",
    "-c",
    "trap 'kill $! 2>/dev/null; wait $! 2>/dev/null; exit 0' TERM INT; "
    "while :; do sleep 3600 & wait $!; done",
]

# Open MPI (4.x) settings shared by master and workers: keep pod FQDNs as given, and keep
# TCP traffic off loopback and the docker bridge some nodes still have.
MPI_ENV = [
    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "t"},
    {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,docker0"},
]

# The init containers run kubectl and a POSIX shell script; they need nothing else.
_INIT_SECURITY_CONTEXT = {
    "runAsNonRoot": True,
    "runAsUser": 65534,
    "allowPrivilegeEscalation": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}
_INIT_RESOURCES = {
    "requests": {"cpu": "10m", "memory": "32Mi"},
    "limits": {"memory": "128Mi"},
}


def build_graph(plan: MpiPlan, options: GraphOptions | None = None) -> Graph:
    """The whole ChainerJob as plain manifests, in dependency order.

    Each node depends directly on the tier before it (ConfigMap -> ServiceAccount and Role ->
    RoleBinding -> Service -> worker StatefulSets -> master Job); order is transitive, both
    for creation and for Pulumi's reverse-order deletion. Listing every earlier node instead
    would order nothing more and cost Pulumi a third more time resolving dependencies.
    """
    options = options or GraphOptions()
    names, namespace, kind = plan.names, plan.namespace, plan.flavour.kind
    graph = Graph(job=names.job, kind=kind, namespace=namespace)
    ssh = uses_ssh(plan, options) and bool(plan.workers)

    def labels(component: str) -> dict[str, str]:
        # Kueue's labels go on a queued job's JobSet alone: a Job or Pod carrying a queue
        # name would be admitted on its own.
        return common_labels(names.job, kind, component, jobset.without_kueue_labels(plan.labels))

    config_map = graph.add(
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": metadata(names.assets, namespace, labels("assets")),
            "data": ssh_assets.asset_files(plan) if ssh else assets.asset_files(plan),
        }
    )
    gang = plan.flavour.gang
    if gang is not None:
        # Before the pods: a pod that names its group before the group exists is not gang
        # scheduled.
        config_map = graph.add(pod_group(gang, names.job, namespace, labels("gang")), config_map)
    if not plan.workers:
        # A single-pod job execs nowhere: no RBAC, no Service, no workers.
        launcher = _master_job(plan, options, labels("master"))
        if plan.flavour.queued:
            launcher = _queued(plan, labels, launcher, [])
        graph.add(launcher, config_map)
        return graph

    if ssh:
        # Nothing calls the API server: the key pair replaces the RBAC objects.
        access = graph.add(ssh_assets.secret(plan, labels("launcher")), config_map)
    else:
        access = _rbac(graph, plan, config_map, labels("launcher"))
    service = graph.add(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": metadata(names.service, namespace, labels("network")),
            "spec": {
                # Headless: DNS records per pod (<pod>.<job>.<ns>.svc), no virtual IP.
                "clusterIP": "None",
                # Records must exist before readiness: MPI connects while pods start.
                "publishNotReadyAddresses": True,
                "selector": {"training.kubeflow.org/job-name": names.job},
            },
        },
        access,
    )
    if plan.flavour.queued:
        statefulsets = [
            (_worker_statefulset(plan, group, labels("worker"), ssh), group.replicas)
            for group in plan.workers
        ]
        launcher = _master_job(plan, options, labels("master"))
        graph.add(_queued(plan, labels, launcher, statefulsets), service)
        return graph
    workers = [
        graph.add(_worker_statefulset(plan, group, labels("worker"), ssh), service)
        for group in plan.workers
    ]
    graph.add(_master_job(plan, options, labels("master")), *workers)
    return graph


def _queued(
    plan: MpiPlan,
    labels: Callable[[str], dict[str, str]],
    launcher: Manifest,
    workers: list[tuple[Manifest, int]],
) -> Manifest:
    """The JobSet of a Kueue-queued job: the only object carrying Kueue's labels."""
    jobset_labels = {**labels("jobset"), **jobset.kueue_labels(plan.labels)}
    names = plan.names
    return queued.as_jobset(
        names.job, plan.namespace, jobset_labels, launcher, workers, names.service
    )


def uses_ssh(plan: MpiPlan, options: GraphOptions) -> bool:
    """The kind's own transport (an MPIJob's operator decides it), else the stack's."""
    return (plan.flavour.transport or options.mpi_transport) == "ssh"


def _rbac(graph: Graph, plan: MpiPlan, config_map: Node, labels: dict[str, str]) -> Node:
    """The master's ServiceAccount, its Role and their RoleBinding (the kubectl transport)."""
    names, namespace = plan.names, plan.namespace
    account = graph.add(
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": metadata(names.launcher, namespace, labels),
            # Only the master pod opts in to a token; nothing else using this account gets one.
            "automountServiceAccountToken": False,
        },
        config_map,
    )
    role = graph.add(_role(plan, labels), config_map)
    return graph.add(
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": metadata(names.role_binding, namespace, labels),
            "subjects": [
                {"kind": "ServiceAccount", "name": names.launcher, "namespace": namespace}
            ],
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": names.role,
            },
        },
        account,
        role,
    )


def _role(plan: MpiPlan, labels: dict[str, str]) -> Manifest:
    """Read this job's worker pods one by one and exec into them; nothing else.

    Exactly what the assets do: the cluster waiter's ``kubectl get pod NAME`` (a GET) and
    ``kubectl exec`` from the waiter and the rsh agent. Every rule names its pods in
    ``resourceNames`` (an empty list would mean *all* pods). No ``list``: RBAC matches
    ``resourceNames`` against a list only when it selects one name (``fieldSelector
    metadata.name=``), which nothing here sends (kubernetes ``RequestInfoFactory``), so it
    would grant nothing the assets use. ``pods/exec`` needs ``get`` as well as ``create``:
    kubectl 1.30+ execs over WebSocket, an HTTP GET that API servers before 1.35 authorize
    as ``get``; 1.35+ require ``create``.
    """
    pods = sorted(plan.worker_pods)
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": metadata(plan.names.role, plan.namespace, labels),
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["pods"],
                "verbs": ["get"],
                "resourceNames": pods,
            },
            {
                "apiGroups": [""],
                "resources": ["pods/exec"],
                "verbs": ["create", "get"],
                "resourceNames": pods,
            },
        ],
    }


def _pod_labels(template: Manifest, labels: dict[str, str], extra: dict[str, str]) -> None:
    meta = default_field(template, "metadata", {})
    meta["labels"] = {**(meta.get("labels") or {}), **labels, **extra}


def _worker_statefulset(
    plan: MpiPlan, group: WorkerGroup, labels: dict[str, str], ssh: bool
) -> Manifest:
    selector = {
        "training.kubeflow.org/job-name": plan.names.job,
        REPLICA_TYPE: "worker",
        WORKER_SET: group.statefulset,
    }
    template = copy.deepcopy(group.template)
    _pod_labels(template, labels, {**selector, **plan.flavour.worker_labels})
    pod = template["spec"]
    # Workers never call the API server; don't hand them a token.
    pod["automountServiceAccountToken"] = False
    # A StatefulSet allows only Always (the spec may say otherwise: see the spec's warning).
    if "restartPolicy" in pod:
        pod["restartPolicy"] = "Always"
    container = main_container(template, group.container)
    if not group.own_command:
        # A worker with a command of its own must start sshd itself (as with mpi-operator).
        container["command"] = ["sh", ssh_assets.SSHD] if ssh else list(WORKER_COMMAND)
    if ssh:
        state = {"name": ssh_assets.SSH_STATE_DIR_ENV, "value": ssh_assets.SSH_STATE_DIR}
        with_env(container, [*_ssh_env(), state, *MPI_ENV])
        volumes = [
            _assets_volume(plan),
            _ssh_volume(plan, _run_as_user(template, container)),
            # In memory, and private to the pod: the environment ssh sessions start from.
            {"name": SSH_STATE_VOLUME, "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
        ]
        mounts = [
            _assets_mount(),
            _ssh_mount(),
            {"name": SSH_STATE_VOLUME, "mountPath": ssh_assets.SSH_STATE_DIR},
        ]
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), *mounts]
        pod["volumes"] = [*(pod.get("volumes") or []), *volumes]
    else:
        with_env(container, MPI_ENV)
        # Each daemon Open MPI starts here checks that the rsh agent it was handed exists (the
        # rsh launcher's component query in orte/mca/plm/rsh/plm_rsh_component.c), though with
        # no tree spawn it never runs it: the assets are mounted here too, read-only, as
        # chainer-operator mounted them on its workers (newWorkerSet in its mpi backend).
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), _assets_mount()]
        pod["volumes"] = [*(pod.get("volumes") or []), _assets_volume(plan)]
    _operator_additions(plan, template, container, list(plan.flavour.worker_env), ssh)
    if plan.flavour.worker_dns_search is not None:
        dns = default_field(pod, "dnsConfig", {})
        dns["searches"] = [*(dns.get("searches") or []), plan.flavour.worker_dns_search]
    if plan.flavour.gang is not None:
        join(plan.flavour.gang, plan.names.job, "worker", template)
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": metadata(group.statefulset, plan.namespace, labels),
        "spec": {
            "serviceName": plan.names.service,
            # A suspended job's workers wait at 0; a run restores the declared size.
            "replicas": 0 if plan.flavour.suspend else group.replicas,
            # Start all workers at once; ordered start-up buys nothing for exec targets.
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": selector},
            "template": template,
        },
    }


def _operator_additions(
    plan: MpiPlan,
    template: Manifest,
    container: Manifest,
    env: list[Manifest],
    ssh: bool,
) -> None:
    """What an MPIJob's operator adds to a pod: its env (its values win), its files where it
    mounts them, and, with ssh, the job's key pair where the image's own ssh looks for it."""
    flavour = plan.flavour
    replace_env(container, env)
    pod = template["spec"]
    ssh_mount = flavour.ssh_auth_mount_path if ssh else None
    volumes = operator_volumes(plan.names, flavour.config_mount, ssh_mount)
    mounts: list[Manifest] = []
    if flavour.config_mount is not None:
        mounts.append({"name": CONFIG_VOLUME, "mountPath": flavour.config_mount, "readOnly": True})
    if ssh_mount is not None:
        mounts.append({"name": SSH_AUTH_VOLUME, "mountPath": ssh_mount})
    if volumes:
        pod["volumes"] = [*(pod.get("volumes") or []), *volumes]
        container["volumeMounts"] = [*(container.get("volumeMounts") or []), *mounts]


def operator_volumes(
    names: JobNames, config_mount: str | None, ssh_auth_mount_path: str | None
) -> list[Manifest]:
    """The volumes an MPIJob's operator adds to its pods, under its names: the job's
    ConfigMap for its files (mounted at ``config_mount``), and the job's key pair (mounted at
    ``ssh_auth_mount_path``, with ssh), as mpi-operator's setupSSHOnPod mounts it: owner-only
    files under /root/.ssh, the Secret's default mode elsewhere."""
    found: list[Manifest] = []
    if config_mount is not None:
        config_map = {"name": names.assets, "defaultMode": 0o555}
        found.append({"name": CONFIG_VOLUME, "configMap": config_map})
    if ssh_auth_mount_path is not None:
        secret: Manifest = {
            "secretName": names.ssh_secret,
            "items": [
                {"key": ssh_assets.PRIVATE_KEY, "path": "id_rsa"},
                {"key": ssh_assets.PUBLIC_KEY, "path": "id_rsa.pub"},
                {"key": ssh_assets.PUBLIC_KEY, "path": "authorized_keys"},
            ],
        }
        if ssh_auth_mount_path == "/root/.ssh":
            secret["defaultMode"] = 0o600
        found.append({"name": SSH_AUTH_VOLUME, "secret": secret})
    return found


def _ssh_env() -> list[Manifest]:
    """Master and workers alike: daemons that start other daemons (tree spawn) use the agent."""
    return [
        {"name": "OMPI_MCA_plm_rsh_agent", "value": ssh_assets.SSHEXEC},
        {"name": ssh_assets.SSH_DIR_ENV, "value": ssh_assets.SSH_DIR},
    ]


def _assets_volume(plan: MpiPlan) -> Manifest:
    return {"name": ASSETS_VOLUME, "configMap": {"name": plan.names.assets, "defaultMode": 0o555}}


def _assets_mount() -> Manifest:
    return {"name": ASSETS_VOLUME, "mountPath": assets.ASSETS_DIR, "readOnly": True}


def _ssh_volume(plan: MpiPlan, user: int | None) -> Manifest:
    """The job's key pair. For root, owner-only: ssh and sshd refuse a private key that others
    may read when they own it. For another user, readable by all: the files stay root's, and
    ssh accepts a key its user does not own (openssh ``sshkey_perm_ok``), as mpi-operator's
    non-root examples rely on for the same key at ``sshAuthMountPath`` (mode 0644)."""
    mode = 0o444 if user else 0o400
    return {
        "name": SSH_VOLUME,
        "secret": {"secretName": plan.names.ssh_secret, "defaultMode": mode},
    }


def _run_as_user(template: Manifest, container: Manifest) -> int | None:
    """The user the main container runs as, where the spec says (container, then pod)."""
    for context in (container.get("securityContext"), template["spec"].get("securityContext")):
        if isinstance(context, dict) and isinstance(context.get("runAsUser"), int):
            return int(context["runAsUser"])
    return None


def _ssh_mount() -> Manifest:
    return {"name": SSH_VOLUME, "mountPath": ssh_assets.SSH_DIR, "readOnly": True}


def _master_job(plan: MpiPlan, options: GraphOptions, labels: dict[str, str]) -> Manifest:
    names, flavour = plan.names, plan.flavour
    ssh = uses_ssh(plan, options)
    template = copy.deepcopy(plan.master.template)
    roles = {REPLICA_TYPE: "master", JOB_ROLE: "master", **flavour.launcher_labels}
    _pod_labels(template, labels, roles)
    pod = template["spec"]
    default_field(pod, "restartPolicy", flavour.launcher_restart)
    # The hostfile names the master by this hostname, so Open MPI recognises it as local.
    pod["hostname"] = names.master
    container = main_container(template, plan.master.container)
    env = [{"name": "OMPI_MCA_orte_default_hostfile", "value": assets.HOSTFILE}]
    volumes = [_assets_volume(plan)]
    mounts = [_assets_mount()]
    if plan.workers and ssh:
        pod["subdomain"] = names.service
        # ssh needs no API access: no token at all.
        pod["automountServiceAccountToken"] = False
        env += [*_ssh_env(), *MPI_ENV]
        user = _run_as_user(template, container)
        volumes.append(_ssh_volume(plan, user))
        mounts.append(_ssh_mount())
        waiter = _ssh_waiter(container["image"], options, user)
        pod["initContainers"] = [*(pod.get("initContainers") or []), waiter]
    elif plan.workers:
        pod["subdomain"] = names.service
        pod["serviceAccountName"] = names.launcher
        pod["automountServiceAccountToken"] = True
        env += [
            {"name": "OMPI_MCA_plm_rsh_agent", "value": assets.KUBEXEC},
            # The master starts every worker's daemon itself. Open MPI 4 otherwise has daemons
            # start further daemons with the same agent (tree spawn, past routed_radix hosts:
            # remote_spawn in orte/mca/plm/rsh/plm_rsh_module.c), and a worker has no kubectl
            # or token; each daemon also checks that the agent exists (plm_rsh_component.c).
            {"name": "OMPI_MCA_plm_rsh_no_tree_spawn", "value": "1"},
            # Without tree spawn Open MPI daemonizes each daemon and ends its exec session;
            # kept attached, a daemon stays the exec stream it was started by, as with tree
            # spawn (the --daemonize condition in plm_rsh_module.c's setup_launch).
            {"name": "OMPI_MCA_orte_leave_session_attached", "value": "1"},
            {"name": "TRAINJOBS_KUBECTL", "value": assets.KUBECTL},
            *MPI_ENV,
        ]
        volumes.append({"name": KUBECTL_VOLUME, "emptyDir": {}})
        mounts.append({"name": KUBECTL_VOLUME, "mountPath": assets.KUBECTL_DIR, "readOnly": True})
        pod["initContainers"] = [*(pod.get("initContainers") or []), *_init_containers(options)]
    else:
        pod["automountServiceAccountToken"] = False
    with_env(container, env)
    container["volumeMounts"] = [*(container.get("volumeMounts") or []), *mounts]
    pod["volumes"] = [*(pod.get("volumes") or []), *volumes]
    _operator_additions(
        plan, template, container, list(flavour.launcher_env), ssh and bool(plan.workers)
    )
    if flavour.gang is not None:
        join(flavour.gang, names.job, "launcher", template)

    spec: Manifest = {"template": template}
    if plan.master.backoff_limit is not None:
        spec["backoffLimit"] = plan.master.backoff_limit
    if plan.master.active_deadline_seconds is not None:
        spec["activeDeadlineSeconds"] = plan.master.active_deadline_seconds
    if flavour.ttl_seconds_after_finished is not None:
        spec["ttlSecondsAfterFinished"] = flavour.ttl_seconds_after_finished
    if flavour.suspend:
        spec["suspend"] = True
    if flavour.launcher_pod_replacement is not None:
        spec["podReplacementPolicy"] = flavour.launcher_pod_replacement
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": metadata(names.master, plan.namespace, labels),
        "spec": spec,
    }


def _ssh_waiter(image: str, options: GraphOptions, user: int | None) -> Manifest:
    """Wait until every worker's sshd answers, from the master's own image: it has the ssh
    client mpiexec uses. It runs as the master's user (the one the workers' sshd accepts; a
    non-root sshd accepts its own user alone)."""
    security: Manifest = {
        "allowPrivilegeEscalation": False,
        "readOnlyRootFilesystem": True,
        "capabilities": {"drop": ["ALL"]},
    }
    if user is not None:
        security["runAsUser"] = user
    return {
        "name": "trainjobs-cluster-waiter",
        "image": image,
        "command": ["sh", ssh_assets.CLUSTER_WAITER],
        "env": [
            {"name": ssh_assets.SSH_DIR_ENV, "value": ssh_assets.SSH_DIR},
            {"name": "TRAINJOBS_WAIT_TIMEOUT_SECONDS", "value": str(options.wait_timeout_seconds)},
        ],
        "volumeMounts": [_assets_mount(), _ssh_mount()],
        "securityContext": security,
        "resources": copy.deepcopy(_INIT_RESOURCES),
    }


def _init_containers(options: GraphOptions) -> list[Manifest]:
    """Deliver kubectl from a pinned image (never downloaded at run time), then wait for workers.

    The default image (registry.k8s.io/kubectl) carries kubectl at /bin/kubectl plus a shell
    and coreutils, so the same image both copies kubectl and runs the waiter.
    """
    return [
        {
            "name": "trainjobs-kubectl-delivery",
            "image": options.kubectl_image,
            "command": ["cp", "/bin/kubectl", assets.KUBECTL],
            "volumeMounts": [{"name": KUBECTL_VOLUME, "mountPath": assets.KUBECTL_DIR}],
            "securityContext": copy.deepcopy(_INIT_SECURITY_CONTEXT),
            "resources": copy.deepcopy(_INIT_RESOURCES),
        },
        {
            "name": "trainjobs-cluster-waiter",
            "image": options.kubectl_image,
            "command": ["sh", assets.CLUSTER_WAITER],
            "env": [
                {"name": "TRAINJOBS_KUBECTL", "value": "/bin/kubectl"},
                {
                    "name": "TRAINJOBS_WAIT_TIMEOUT_SECONDS",
                    "value": str(options.wait_timeout_seconds),
                },
            ],
            "volumeMounts": [
                {"name": ASSETS_VOLUME, "mountPath": assets.ASSETS_DIR, "readOnly": True}
            ],
            "securityContext": copy.deepcopy(_INIT_SECURITY_CONTEXT),
            "resources": copy.deepcopy(_INIT_RESOURCES),
        },
    ]
