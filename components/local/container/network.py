"""A container run's network: a private engine network, a fixed address per pod, its hosts file.

Each run gets its own engine network ``tj-<run id>``, ``--internal`` (no route beyond this
machine) with its own /24 of 198.18.0.0/15; the engine gives the host bridge the gateway
address ``.1`` (so, unlike the process runtime's pods, containers reach services listening on
all of the host's addresses) and pods take the next addresses. Names resolve as in the process
runtime, from the same hosts file and ``resolv.conf``
(:func:`trainjobs.local.network.hosts_file`), bind-mounted over every container's own, so the
cluster-DNS forms (``<pod>.<subdomain>.<ns>.svc``, Service names) are the same and the
engine's DNS is not used.
"""

from __future__ import annotations

from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import RUN_LABEL, Engine
from trainjobs.local.ledger import Ledger
from trainjobs.local.network import POD_SUBNETS, PodHost, PodName, hosts_file, resolv_conf

NETWORK_PREFIX = "tj-"
_MAX_PODS = 252


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
        self.subnet = list(POD_SUBNETS.subnets(new_prefix=24))[int(run_id, 16) % 512]
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
        self.engine.create_network(self.name, str(self.subnet), str(self.gateway), self.labels)

    def down(self) -> list[str]:
        """Remove every pod and container of the run, then the network; what is left."""
        label = f"{RUN_LABEL}={self.run_id}"
        found = self.engine.labelled(label)
        self.engine.remove_pods([item.name for item in found if item.kind == "pod"])
        self.engine.remove_networks([self.name])
        return sorted(f"{item.kind} {item.name}" for item in self.engine.labelled(label))
