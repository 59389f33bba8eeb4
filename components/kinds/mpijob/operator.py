"""What each MPIJob operator adds to the pods: env, labels, and the files it writes.

Three operators ran MPIJobs, each its own way:

- ``kubeflow.org/v1alpha2``: mpi-operator 0.2 (``pkg/controllers/v1alpha2/mpi_job_controller.go``,
  last in mpi-operator's history before its removal): kubectl exec, ``mpiDistribution``;
- ``kubeflow.org/v1``: training-operator 1.x (``pkg/controller.v1/mpi/mpijob_controller.go``,
  v1.9.0): kubectl exec, Open MPI's and Intel MPI's rsh agents, ``discover_hosts.sh``;
- ``kubeflow.org/v2beta1``: mpi-operator 0.4+ (``pkg/controller/mpi_job_controller.go``,
  v0.8): ssh with a key per job, ``mpiImplementation`` OpenMPI, Intel or MPICH.

Each function here follows the named controller; the files are mounted where it mounts them
(``/etc/mpi``), so commands that read ``/etc/mpi/hostfile`` run unchanged.
"""

from __future__ import annotations

from typing import Any

from trainjobs.core.labels import JOB_NAME, JOB_ROLE, REPLICA_INDEX, REPLICA_TYPE

CONFIG_MOUNT = "/etc/mpi"
HOSTFILE = f"{CONFIG_MOUNT}/hostfile"
KUBEXEC = f"{CONFIG_MOUNT}/kubexec.sh"
OPERATOR_NAME = "training.kubeflow.org/operator-name"

OPEN_MPI = "OpenMPI"
INTEL = "Intel"
MPICH = "MPICH"
IMPLEMENTATIONS = (OPEN_MPI, INTEL, MPICH)
"""v2beta1's ``mpiImplementation`` values (``validMPIImplementations``)."""
DISTRIBUTIONS = {"OpenMPI": OPEN_MPI, "IntelMPI": INTEL, "MPICH": MPICH}
"""v1alpha2's ``mpiDistribution`` values, and the implementation each names."""

LAUNCHER_POD_REPLACEMENT = "Failed"
"""``newLauncherJob``: a new launcher pod only once the last has failed, not while it is still
terminating (kubernetes#115844, where terminating pods were replaced)."""

Env = list[dict[str, Any]]

# Cleared on a launcher that is not a worker, so that it never takes a GPU (every operator).
_NO_GPU: Env = [
    {"name": "NVIDIA_VISIBLE_DEVICES", "value": ""},
    {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": ""},
]


def v2beta1_launcher_env(implementation: str, slots: int, launcher_is_worker: bool) -> Env:
    """``newLauncherPodTemplate``: the role, the implementation's env, its slots, no GPU."""
    env: Env = [{"name": "K_MPI_JOB_ROLE", "value": "launcher"}]
    if implementation == OPEN_MPI:
        env += [
            {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
            {"name": "OMPI_MCA_orte_default_hostfile", "value": HOSTFILE},
            {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
            {"name": "OMPI_MCA_orte_set_default_slots", "value": str(slots)},
        ]
    elif implementation == INTEL:
        env += [
            {"name": "I_MPI_HYDRA_HOST_FILE", "value": HOSTFILE},
            {"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
            {"name": "I_MPI_PERHOST", "value": str(slots)},
        ]
    else:
        env += [
            {"name": "HYDRA_HOST_FILE", "value": HOSTFILE},
            {"name": "HYDRA_LAUNCH_EXTRA_ARGS", "value": "-o ConnectionAttempts=10"},
        ]
    # The operator's NVIDIA variables carry no value (an empty EnvVar).
    return env if launcher_is_worker else env + [{"name": e["name"]} for e in _NO_GPU]


def v2beta1_worker_env() -> Env:
    """``newWorker``."""
    return [{"name": "K_MPI_JOB_ROLE", "value": "worker"}]


def v2beta1_worker_dns_search(job: str, namespace: str) -> str:
    """``newWorker``: Intel MPI's and MPICH's Hydra proxies connect back to the launcher by its
    short host name (mpi-operator #612), so every worker searches the job's Service domain.
    The operator appends it whatever the implementation, after the template's own searches."""
    return f"{job}.{namespace}.svc.cluster.local"


def v2beta1_host_network_dns(template: dict[str, Any]) -> None:
    """``newWorker`` and ``newLauncherPodTemplate``: a pod on the host's network still
    resolves the job's pod names through cluster DNS (``ClusterFirstWithHostNet``, whatever
    ``dnsPolicy`` the template gave)."""
    pod = template.get("spec") or {}
    if pod.get("hostNetwork") is True:
        pod["dnsPolicy"] = "ClusterFirstWithHostNet"


def v1_launcher_env(user_env: list[Any], gpu_launcher: bool) -> Env:
    """``newLauncher`` (training-operator): Open MPI's agent and hostfile, no GPU unless the
    launcher asks for one, and Intel MPI's rsh bootstrap unless the user set it."""
    env: Env = [
        {"name": "OMPI_MCA_plm_rsh_agent", "value": KUBEXEC},
        {"name": "OMPI_MCA_orte_default_hostfile", "value": HOSTFILE},
    ]
    if not gpu_launcher:
        env += _NO_GPU
    names = {item.get("name") for item in user_env if isinstance(item, dict)}
    if "I_MPI_HYDRA_BOOTSTRAP" not in names:
        env.append({"name": "I_MPI_HYDRA_BOOTSTRAP", "value": "rsh"})
    if "I_MPI_HYDRA_BOOTSTRAP_EXEC" not in names:
        env.append({"name": "I_MPI_HYDRA_BOOTSTRAP_EXEC", "value": KUBEXEC})
    return env


def v1alpha2_launcher_env(implementation: str) -> Env:
    """``newLauncher`` (mpi-operator 0.2): the distribution's agent and hostfile variables."""
    agent, hostfile = {
        OPEN_MPI: ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile"),
        INTEL: ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "I_MPI_HYDRA_HOST_FILE"),
        MPICH: ("HYDRA_LAUNCHER_EXEC", "HYDRA_HOST_FILE"),
    }[implementation]
    return [{"name": agent, "value": KUBEXEC}, {"name": hostfile, "value": HOSTFILE}, *_NO_GPU]


def labels(version: str, job: str, role: str, launcher_is_worker: bool) -> dict[str, str]:
    """The operator's labels on a launcher (``role`` launcher) or worker pod.

    trainjobs' own ``replica-type`` (launcher, worker) is kept beside them.
    """
    if version == "v1alpha2":
        # labelGroupName, labelMPIJobName, labelMPIRoleType
        return {
            REPLICA_TYPE: role,
            "group-name": "kubeflow.org",
            "mpi-job-name": job,
            "mpi-job-role": role,
        }
    if version == "v1":
        # GenLabels (common/job_controller.go) and defaultReplicaLabels; the launcher is the
        # master role (IsMasterRole).
        found = {OPERATOR_NAME: "mpijob-controller", JOB_NAME: job, REPLICA_TYPE: role}
        if role == "launcher":
            found[JOB_ROLE] = "master"
        return found
    found = {REPLICA_TYPE: role, OPERATOR_NAME: "mpi-operator", JOB_NAME: job, JOB_ROLE: role}
    if role == "launcher" and launcher_is_worker:
        found[REPLICA_INDEX] = "0"
    return found


def v2beta1_discover_hosts(hosts: list[str]) -> str:
    """``updateDiscoverHostsInConfigMap`` (mpi-operator): one ``echo HOST`` per host. The
    operator lists the workers that are running at the time; here every worker is listed."""
    return "#!/bin/sh\n" + "".join(f"echo {host}\n" for host in hosts)


def v1_discover_hosts(launcher: str | None, workers: list[str], slots: int) -> str:
    """``updateDiscoverHostsInConfigMap`` (training-operator): ``echo POD:SLOTS`` lines, the
    launcher's (GPU launcher) followed by an empty line, and no final newline."""
    script = "#!/bin/sh"
    if launcher is not None:
        script += f"\necho {launcher}:{slots}\n"
    return script + "".join(f"\necho {pod}:{slots}" for pod in workers)
