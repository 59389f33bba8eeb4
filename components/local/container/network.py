"""A container run's network: a private engine network, a fixed address per pod, its hosts file.

Each run gets its own engine network ``tj-<run id>``, ``--internal`` (no route beyond this
machine) with its own /24 of 198.18.0.0/15: the first one, from the run id's on, that no
engine network holds (the engine refuses a subnet already used). The pods' addresses are
known from then on (a pod's env may hold its IP), so the choice and the network's creation
are made under one lock, which concurrent runs take in turn: two of them cannot pick the same
free /24. As root the lock is the machine's (``/run/trainjobs``), since every root run shares
the engine's networks whatever its run records' directory; otherwise it is in the state
directory (a rootless engine's networks are its user's). The engine gives the host bridge the
gateway address ``.1`` (so, unlike the process runtime's pods, containers reach services
listening on all of the host's addresses) and pods take the next addresses. Names resolve as
in the process runtime, from the same hosts file and ``resolv.conf``
(:func:`trainjobs.local.network.hosts_file`), bind-mounted over every container's own, so the
cluster-DNS forms (``<pod>.<subdomain>.<ns>.svc``, Service names) are the same and the
engine's DNS is not used.
"""

from __future__ import annotations

import fcntl
import ipaddress
import os
import stat
from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import RUN_LABEL, Engine, EngineError
from trainjobs.local.ledger import Ledger, state_directory
from trainjobs.local.network import POD_SUBNETS, PodHost, PodName, hosts_file, resolv_conf

NETWORK_PREFIX = "tj-"
_MAX_PODS = 252
LOCK_NAME = "container-subnets.lock"
"""Held from a run's choice of subnet to its network's creation."""
ROOT_LOCK_DIRECTORY = Path("/run/trainjobs")


def free_subnet(taken: list[str], run_id: str) -> ipaddress.IPv4Network:
    """The first /24 of :data:`POD_SUBNETS`, from the run id's on, that overlaps none of
    ``taken`` (the engine networks' subnets)."""
    used = [
        network
        for text in taken
        if isinstance(network := ipaddress.ip_network(text, strict=False), ipaddress.IPv4Network)
    ]
    candidates = list(POD_SUBNETS.subnets(new_prefix=24))
    start = int(run_id, 16) % len(candidates)
    for offset in range(len(candidates)):
        candidate = candidates[(start + offset) % len(candidates)]
        if not any(candidate.overlaps(network) for network in used):
            return candidate
    raise EngineError(
        f"every /24 of {POD_SUBNETS} is used by another engine network; remove some "
        "(`podman network ls`)"
    )


def _lock_directory() -> Path:
    """Where the subnet lock lives: the machine's for root, else the user's state directory."""
    if os.geteuid() != 0:
        return state_directory()
    ROOT_LOCK_DIRECTORY.mkdir(mode=0o700, exist_ok=True)
    status = ROOT_LOCK_DIRECTORY.lstat()
    if not stat.S_ISDIR(status.st_mode) or status.st_uid != 0 or status.st_mode & 0o022:
        raise EngineError(
            f"{ROOT_LOCK_DIRECTORY} must be a directory only root can write (it holds the "
            "lock container runs choose their subnets under); remove it and run again"
        )
    return ROOT_LOCK_DIRECTORY


class ContainerNetwork:
    """The run's engine network and the files that give pods their names."""

    def __init__(
        self,
        engine: Engine,
        run_id: str,
        namespace: str,
        pods: list[PodName],
        labels: dict[str, str],
        directory: Path,
    ) -> None:
        if len(pods) > _MAX_PODS:
            raise UserError(f"local runs support at most {_MAX_PODS} pods (got {len(pods)})")
        self.engine = engine
        self.run_id = run_id
        self.name = f"{NETWORK_PREFIX}{run_id}"
        self.mode = engine.name
        self.labels = labels
        self.namespace = namespace
        self._lock: int | None = os.open(
            _lock_directory() / LOCK_NAME,
            os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC,
            0o600,
        )
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX)
            self.subnet = free_subnet(engine.network_subnets(), run_id)
        except BaseException:
            self.release()
            raise
        addresses = list(self.subnet.hosts())
        self.gateway = addresses[0]
        self.hosts = [
            PodHost(pod, host, sub, str(addresses[index + 1]), None, services)
            for index, (pod, host, sub, services) in enumerate(pods)
        ]
        self.hosts_path = directory / "hosts"
        self.resolv_path = directory / "resolv.conf"

    def up(self, ledger: Ledger) -> None:
        """The hosts files, then the network, recorded in ``ledger`` before it exists."""
        self.hosts_path.parent.mkdir(parents=True, exist_ok=True)
        # Read by every container, whatever its user: world-readable, like a pod's /etc/hosts.
        self.hosts_path.parent.chmod(0o755)
        self.hosts_path.write_text(hosts_file(self.hosts, self.namespace), encoding="utf-8")
        self.resolv_path.write_text(resolv_conf(self.hosts, self.namespace), encoding="utf-8")
        for path in (self.hosts_path, self.resolv_path):
            path.chmod(0o644)
        ledger.record(
            "engine-network",
            engine=self.engine.name,
            executable=self.engine.executable,
            name=self.name,
            run=self.run_id,
        )
        try:
            self.engine.create_network(self.name, str(self.subnet), str(self.gateway), self.labels)
        finally:
            self.release()

    def release(self) -> None:
        """Let the next run choose its subnet (once this one's network exists, or never will)."""
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None

    def down(self) -> list[str]:
        """Remove every pod and container of the run, then the network; what is left."""
        self.release()
        label = f"{RUN_LABEL}={self.run_id}"
        found = self.engine.labelled(label)
        self.engine.remove_pods([item.name for item in found if item.kind == "pod"])
        self.engine.remove_networks([self.name])
        return sorted(f"{item.kind} {item.name}" for item in self.engine.labelled(label))
