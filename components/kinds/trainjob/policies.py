"""A runtime's MLPolicy, enforced on the JobSet template as Trainer's plugins enforce it.

Each replicated Job is a pod set whose pod count becomes the Job's ``parallelism`` and
``completions``: the trainer's (the Job labelled ``trainer.kubeflow.org/trainjob-ancestor-step:
trainer``) is ``numNodes``, the TrainJob's or else the policy's. The trainer's ``node``
container then gets, after the template's own env and the TrainJob's ``trainer.env``:

- **torch** (``plugins/torch/torch.go``): ``PET_NNODES``, ``PET_NPROC_PER_NODE``,
  ``PET_NODE_RANK`` (the pod's completion index), ``PET_MASTER_ADDR``
  (``<trainjob>-node-0-0.<trainjob>``: the first pod's stable DNS name) and
  ``PET_MASTER_PORT`` (29500), which torchrun reads as its defaults; and port 29500.
  ``numProcPerNode``: the TrainJob's, else ``auto``: with no GPU in the node's resources
  (the TrainJob's ``resourcesPerNode``, else the runtime's), the node's CPU requests (limits
  when no requests), at least 1; ``cpu`` (before v2.2) counts CPUs whatever the GPUs. A
  bare ``tune run`` command, which Trainer completes for torchtune, is refused;
- **jax** (``plugins/jax/jax.go``): ``JAX_NUM_PROCESSES``, ``JAX_PROCESS_ID``,
  ``JAX_COORDINATOR_ADDRESS``;
- **xgboost** (``plugins/xgboost/xgboost.go``): ``DMLC_TRACKER_URI``, ``DMLC_TRACKER_PORT``,
  ``DMLC_TASK_ID``, ``DMLC_NUM_WORKER`` (nodes times GPUs per node, at least 1 per node);
- **mpi** (``plugins/mpi/mpi.go``): the ``node`` pod set is ``numNodes`` pods (one fewer with
  ``runLauncherAsNode``: the launcher is a node too); every node and launcher mounts the
  ssh-auth Secret ``<trainjob>-mpi-ssh-auth`` at ``sshAuthMountPath``; the launcher mounts the
  hostfile ConfigMap ``<trainjob>-mpi-hostfile`` at ``/etc/mpi`` and gets Open MPI's
  ``OMPI_MCA_*`` env (hostfile, FQDN host names, default slots, rsh args). The hostfile lists
  every node pod's DNS name with ``slots=numProcPerNode``.

Sources: kubeflow/trainer v2.3.0 (commit 658725bdae5c7e3a0854d93ac6ff492e109a22ab) and v2.1.0
for string ``numProcPerNode``; ``pkg/constants/constants.go`` for names and ports.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

from trainjobs.core import quantity
from trainjobs.core.errors import Problem
from trainjobs.core.graph import Manifest
from trainjobs.core.pod_template import default_field
from trainjobs.kinds.trainjob.spec import Trainer

ANCESTOR = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER = "trainer"
NODE = "node"
LAUNCHER = "launcher"
PORT = 29500
COMPLETION_INDEX = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
TORCH_ENV = (
    "PET_NNODES",
    "PET_NPROC_PER_NODE",
    "PET_NODE_RANK",
    "PET_MASTER_ADDR",
    "PET_MASTER_PORT",
)
XGBOOST_ENV = ("DMLC_TRACKER_URI", "DMLC_TRACKER_PORT", "DMLC_TASK_ID", "DMLC_NUM_WORKER")
MPI_ENV = (
    "OMPI_MCA_orte_default_hostfile",
    "OMPI_MCA_plm_rsh_args",
    "OMPI_MCA_orte_keep_fqdn_hostnames",
    "OMPI_MCA_orte_set_default_slots",
)
HOSTFILE_DIR = "/etc/mpi"
SSH_SECRET_SUFFIX = "-mpi-ssh-auth"
HOSTFILE_SUFFIX = "-mpi-hostfile"


@dataclass
class PodSet:
    """A replicated Job of the template and how many pods it runs."""

    job: Manifest
    count: int

    @property
    def name(self) -> str:
        return str(self.job["name"])

    @property
    def ancestor(self) -> str | None:
        return ((self.job["template"].get("metadata") or {}).get("labels") or {}).get(ANCESTOR)

    @property
    def pod(self) -> Manifest:
        return default_field(self.job["template"]["spec"]["template"], "spec", {})

    def container(self, name: str) -> Manifest | None:
        return next((c for c in self.pod.get("containers") or [] if c.get("name") == name), None)


@dataclass
class Enforced:
    """What the policy adds beside the JobSet: the MPI hostfile and the name of the Secret."""

    hostfile: str | None = None
    ssh_secret: str | None = None
    warnings: list[Problem] = field(default_factory=list)


def upsert(items: list[Manifest], new: list[Manifest], key: str = "name") -> None:
    """Trainer's ``apply.Upsert*``: an item of the same key is replaced in place, else added."""
    for item in new:
        at = next((i for i, old in enumerate(items) if old.get(key) == item[key]), None)
        if at is None:
            items.append(item)
        else:
            items[at] = item


def reserved_env_problems(policy: Manifest, trainer: Trainer | None) -> list[Problem]:
    """The plugins' ``Validate``: a TrainJob may not set the env its policy sets."""
    if trainer is None:
        return []
    names = [str(item.get("name")) for item in trainer.env]
    if "torch" in policy:
        taken = sorted({n for n in names if n in TORCH_ENV})
        if taken:
            return [_reserved(trainer, taken)]
    if "mpi" in policy:
        taken = sorted({n for n in names if n in MPI_ENV})
        if taken:
            return [_reserved(trainer, taken)]
    if "xgboost" in policy:
        return [
            Problem(f"spec.trainer.env[{i}]", f"{n} is reserved for the XGBoost runtime")
            for i, n in enumerate(names)
            if n in XGBOOST_ENV
        ]
    return []


TUNE_ENTRYPOINT = ["tune", "run"]
"""``constants.TorchTuneEntrypoint``: a TrainJob command Trainer's torch plugin completes."""


def tune_run_problems(policy: Manifest, trainer: Trainer | None) -> list[Problem]:
    """Under a torch policy Trainer appends the rendezvous endpoint, recipe, config and the
    runtime's paths to a bare ``tune run`` (``plugins/torch/torch.go`` EnforceMLPolicy,
    ``torchtune.go`` getRecipeAndConfig); that is not reproduced here, so it is refused."""
    if "torch" not in policy or trainer is None or trainer.command != TUNE_ENTRYPOINT:
        return []
    return [
        Problem(
            "spec.trainer.command",
            f"{TUNE_ENTRYPOINT} is Trainer's torchtune entrypoint, which its torch plugin "
            "completes (the rendezvous endpoint, the recipe and --config it picks from "
            "numNodes, numProcPerNode, the GPUs and args, the runtime's output and checkpoint "
            "paths); trainjobs does not reproduce that: give the whole command, e.g. "
            "['tune', 'run', 'full_finetune_distributed', '--config', 'llama3_2/1B_full', ...]",
        )
    ]


def _reserved(trainer: Trainer, taken: list[str]) -> Problem:
    return Problem(
        "spec.trainer.env",
        f"must not have reserved envs, invalid envs configured: [{' '.join(taken)}]",
    )


def node_resources(pod_sets: list[PodSet], trainer: Trainer | None) -> Manifest:
    """The trainer node's resources: the TrainJob's ``resourcesPerNode``, else the runtime's
    (``runtime.ExtractResourcePerNodeFromRuntime``)."""
    if trainer is not None and trainer.resources_per_node is not None:
        return trainer.resources_per_node
    for pod_set in pod_sets:
        if pod_set.name == NODE or pod_set.ancestor == TRAINER:
            container = pod_set.container(NODE)
            if container is not None and container.get("resources") is not None:
                return dict(container["resources"])
    return {}


def gpus(resources: Manifest) -> int:
    """``runtime.GetNumGPUPerNode``: the first resource named like a GPU, requests first."""
    for section in ("requests", "limits"):
        for name, amount in (resources.get(section) or {}).items():
            if "gpu" in str(name).lower():
                count = math.ceil(quantity.parse(amount))
                if count:
                    return count
                break
    return 0


def cpus(resources: Manifest) -> int:
    """``getNumCPUPerNode``: CPU requests (limits when none), rounded up; 0 when neither."""
    request = (resources.get("requests") or {}).get("cpu")
    limit = (resources.get("limits") or {}).get("cpu")
    chosen = request if request not in (None, 0, "0") else limit
    return math.ceil(quantity.parse(chosen)) if chosen is not None else 0


def enforce(
    policy: Manifest, pod_sets: list[PodSet], trainer: Trainer | None, job: str, subdomain: str
) -> Enforced:
    """Set the pod counts, env, ports and volumes ``policy`` asks for."""
    trainer_set = next((p for p in pod_sets if p.ancestor == TRAINER), None)
    num_nodes = trainer.num_nodes if trainer is not None else None
    if "mpi" in policy:
        return _mpi(policy, pod_sets, trainer, job, subdomain)
    if trainer_set is None:
        return Enforced()
    if num_nodes is not None:
        trainer_set.count = num_nodes
    master = f"{job}-{NODE}-0-0.{job}"
    rank = {"fieldRef": {"fieldPath": COMPLETION_INDEX}}
    resources = node_resources(pod_sets, trainer)
    pet: list[Manifest] = [
        {"name": "PET_NNODES", "value": str(trainer_set.count)},
        {"name": "PET_NPROC_PER_NODE", "value": _procs(trainer, policy, resources)},
        {"name": "PET_NODE_RANK", "valueFrom": rank},
        {"name": "PET_MASTER_ADDR", "value": master},
        {"name": "PET_MASTER_PORT", "value": str(PORT)},
    ]
    if "torch" in policy:
        # With or without spec.trainer, as Trainer injects into the targets.
        for target in _injected(policy, pod_sets):
            upsert(default_field(target, "env", []), copy.deepcopy(pet))
    container = trainer_set.container(NODE) if trainer is not None else None
    if container is None:
        return Enforced()
    env = default_field(container, "env", [])
    if "torch" in policy:
        upsert(env, [dict(item) for item in trainer.env] if trainer is not None else [])
        upsert(env, pet)
    elif "jax" in policy:
        upsert(
            env,
            [
                {"name": "JAX_NUM_PROCESSES", "value": str(trainer_set.count)},
                {"name": "JAX_PROCESS_ID", "valueFrom": rank},
                {"name": "JAX_COORDINATOR_ADDRESS", "value": f"{master}:{PORT}"},
            ],
        )
    elif "xgboost" in policy:
        workers = trainer_set.count * max(1, gpus(resources))
        upsert(
            env,
            [
                {"name": "DMLC_TRACKER_URI", "value": master},
                {"name": "DMLC_TRACKER_PORT", "value": str(PORT)},
                {"name": "DMLC_TASK_ID", "valueFrom": rank},
                {"name": "DMLC_NUM_WORKER", "value": str(workers)},
            ],
        )
    else:
        return Enforced()
    upsert(default_field(container, "ports", []), [{"containerPort": PORT}], key="containerPort")
    return Enforced()


def _targets(policy: Manifest) -> list[tuple[str, str]]:
    """``mlPolicy.torch.envInjection``'s (replicated Job, container) pairs, in order."""
    injection = (policy.get("torch") or {}).get("envInjection") or {}
    return [
        (str(target.get("jobName")), str(name))
        for target in injection.get("targets") or []
        for name in target.get("containerNames") or []
    ]


def _target(pod_sets: list[PodSet], job: str, name: str) -> Manifest | None:
    """``Info.FindContainerByPodSetName``: the pod set's container of that name, else its init
    container of that name."""
    pod_set = next((p for p in pod_sets if p.name == job), None)
    if pod_set is None:
        return None
    for group in ("containers", "initContainers"):
        for container in pod_set.pod.get(group) or []:
            if container.get("name") == name:
                return container
    return None


def _injected(policy: Manifest, pod_sets: list[PodSet]) -> list[Manifest]:
    """The containers envInjection names: they get the same PET_* env as the node container,
    the master's address included (``plugins/torch/torch.go``, EnforceMLPolicy)."""
    found = [_target(pod_sets, job, name) for job, name in _targets(policy)]
    return [container for container in found if container is not None]


def env_injection_problems(policy: Manifest, pod_sets: list[PodSet]) -> list[Problem]:
    """The torch plugin's ``Validate`` (``validateEnvInjectionTargets``): every target names a
    container or init container of the runtime's replicated Job."""
    if "torch" not in policy:
        return []
    return [
        Problem(
            "spec.runtimeRef",
            f'envInjection target podSet "{job}" container "{name}" not found in runtime '
            "template; name a container or init container of that replicated Job",
        )
        for job, name in _targets(policy)
        if _target(pod_sets, job, name) is None
    ]


def _procs(trainer: Trainer | None, policy: Manifest, resources: Manifest) -> str:
    """PET_NPROC_PER_NODE: the TrainJob's, else (v2.0 and v2.1) the runtime's torch policy's,
    else auto, resolved by the node's devices (v2.1.0 ``plugins/torch/torch.go``)."""
    wanted: Any = (policy.get("torch") or {}).get("numProcPerNode") or "auto"
    if trainer is not None and trainer.num_proc_per_node is not None:
        wanted = trainer.num_proc_per_node
    if wanted == "cpu" or (wanted == "auto" and gpus(resources) == 0):
        return str(max(1, cpus(resources)))
    return str(wanted)


def _mpi(
    policy: Manifest, pod_sets: list[PodSet], trainer: Trainer | None, job: str, subdomain: str
) -> Enforced:
    mpi = policy.get("mpi") or {}
    as_node = bool(mpi.get("runLauncherAsNode", False))
    node = next((p for p in pod_sets if p.name == NODE), None)
    if trainer is not None and trainer.num_nodes is not None and node is not None:
        node.count = max(trainer.num_nodes - 1, 1) if as_node else trainer.num_nodes
    slots = int(mpi.get("numProcPerNode", 1))
    if trainer is not None and isinstance(trainer.num_proc_per_node, int):
        slots = trainer.num_proc_per_node
    elif slots == 1 and gpus(node_resources(pod_sets, trainer)) > 1:
        slots = gpus(node_resources(pod_sets, trainer))
    secret = f"{job}{SSH_SECRET_SUFFIX}"
    hostfile_map = f"{job}{HOSTFILE_SUFFIX}"
    mount_path = str(mpi.get("sshAuthMountPath", "/root/.ssh"))
    for pod_set in pod_sets:
        if pod_set.name not in (NODE, LAUNCHER):
            continue
        volumes = default_field(pod_set.pod, "volumes", [])
        upsert(volumes, [_ssh_volume(secret)])
        if pod_set.name == LAUNCHER:
            upsert(volumes, [_hostfile_volume(hostfile_map)])
        container = pod_set.container(NODE)
        if container is None:
            continue
        mounts = default_field(container, "volumeMounts", [])
        upsert(mounts, [{"name": "mpi-ssh-auth", "mountPath": mount_path}])
        if pod_set.name == LAUNCHER:
            upsert(mounts, [{"name": "mpi-hostfile", "mountPath": HOSTFILE_DIR}])
            upsert(
                default_field(container, "env", []),
                [
                    {"name": "OMPI_MCA_orte_default_hostfile", "value": f"{HOSTFILE_DIR}/hostfile"},
                    {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                    {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
                    {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
                ],
            )
    lines = [
        f"{job}-{pod_set.name}-{replica}-{pod}.{subdomain} slots={slots}\n"
        for pod_set in pod_sets
        if pod_set.name == NODE or (as_node and pod_set.name == LAUNCHER)
        for replica in range(int(pod_set.job.get("replicas", 1)))
        for pod in range(pod_set.count)
    ]
    return Enforced(hostfile="".join(lines), ssh_secret=secret)


def _ssh_volume(secret: str) -> Manifest:
    items = [
        {"key": "ssh-privatekey", "path": "id_rsa", "mode": 0o640},
        {"key": "ssh-publickey", "path": "id_rsa.pub", "mode": 0o644},
        {"key": "ssh-publickey", "path": "authorized_keys", "mode": 0o644},
    ]
    return {
        "name": "mpi-ssh-auth",
        "secret": {"secretName": secret, "defaultMode": 0o400, "items": items},
    }


def _hostfile_volume(config_map: str) -> Manifest:
    return {
        "name": "mpi-hostfile",
        "configMap": {
            "name": config_map,
            "items": [{"key": "hostfile", "path": "hostfile", "mode": 0o444}],
        },
    }
