"""What a kind on the MPI graph decides: ChainerJob (KEP-141) or one of Kubeflow's MPIJobs.

The graph (a launcher Job, worker pods, a hostfile, MPI daemons started over kubectl exec or
ssh) is one for both kinds; they differ in names, in the hostfile's lines, in the env and
labels their operator sets, and in where the operator mounts its files. A ChainerJob plan
mostly takes the defaults below; an MPIJob plan carries its operator's choices
(:mod:`trainjobs.kinds.mpijob.operator`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from trainjobs.core.gang import Gang


@dataclass(frozen=True)
class MpiFlavour:
    kind: str
    """The kind's name, as the scripts' comments and the ssh settings name the job."""
    transport: str | None = None
    """The transport the kind always uses (an MPIJob's operator decides it); None: the
    stack's ``mpiTransport``."""
    hydra_hostfile: bool = False
    """``host:slots`` lines (Intel MPI's and MPICH's Hydra) instead of Open MPI's
    ``host slots=N``."""
    local_launcher: bool = False
    """The hostfile names the launcher by its bare hostname, so Open MPI sees that the first
    host is the one it runs on (ChainerJob's master holds rank 0); else by its DNS name, as
    mpi-operator writes it."""
    launcher_in_hostfile: bool = True
    """The launcher's own pod is the hostfile's first host (ChainerJob's master holds rank 0;
    an MPIJob's launcher only with runLauncherAsWorker, or v1's GPU launcher)."""
    config_mount: str | None = None
    """A second mount of the job's ConfigMap, where the operator mounts its files
    (``/etc/mpi``): scripts that read ``/etc/mpi/hostfile`` keep working."""
    discover_hosts: str | None = None
    """``discover_hosts.sh`` (Horovod's elastic host discovery), as the operator writes it."""
    launcher_env: tuple[dict[str, Any], ...] = ()
    """The operator's env on the launcher's first container: its values win over the user's."""
    worker_env: tuple[dict[str, Any], ...] = ()
    launcher_labels: Mapping[str, str] = field(default_factory=dict)
    """The operator's labels on the launcher pod (over trainjobs' own)."""
    worker_labels: Mapping[str, str] = field(default_factory=dict)
    worker_dns_search: str | None = None
    """A DNS search domain the operator appends to each worker's ``dnsConfig``."""
    launcher_restart: str = "Never"
    """The launcher pod's restartPolicy when its template gives none."""
    launcher_pod_replacement: str | None = None
    """The launcher Job's ``podReplacementPolicy``, where the operator sets one."""
    ssh_auth_mount_path: str | None = None
    """v2beta1's ``sshAuthMountPath``: the job's key pair mounted there as the operator mounts
    it (``id_rsa``, ``id_rsa.pub``, ``authorized_keys``), for images whose own sshd and ssh
    client read it."""
    suspend: bool = False
    """``runPolicy.suspend``: the launcher Job is suspended and the workers are at 0."""
    ttl_seconds_after_finished: int | None = None
    gang: Gang | None = None
    """The PodGroup every pod joins, when a gang scheduler places the job."""
    queued: bool = False
    """Kueue queues the job (an MPIJob v2beta1): it is one JobSet whose replicated Jobs
    ``launcher`` and ``worker`` make the pods (:mod:`trainjobs.kinds.mpi.queued`)."""
