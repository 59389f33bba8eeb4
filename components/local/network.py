"""Local pod networks: a network namespace per pod on a private bridge, or plain loopback.

As root with iproute2, every pod gets what a CNI plugin gives it on a cluster: its own
network namespace, a veth pair into a per-run bridge and an address of its own, here from
198.18.0.0/15 (reserved for network tests, never routed): each run takes one /24 of it. The
bridge has no address on the host, so the host has no route into the pod network and pods
reach nothing but each other; two concurrent runs never see each other either.

Names resolve per namespace the way cluster DNS resolves them for a headless Service:
``/etc/netns/<netns>/hosts`` (which ``ip netns exec`` bind-mounts over ``/etc/hosts``) lists
``<pod>.<svc>.<ns>.svc.cluster.local`` and its shorter forms down to the bare ``<pod>``, plus
``<service>.<ns>.svc.cluster.local`` and its shorter forms for a Service that selects only
that pod, and ``resolv.conf`` carries the cluster's search path and no nameserver, so no lookup
leaves the pod.

Without root (or ``--network loopback``) pods share the host's network: processes on
loopback, pod names unresolved (Open MPI then uses the addresses its daemons report, which is
also what it does on a cluster).

Teardown deletes the host end of each veth explicitly: deleting a namespace only unmounts
its name and the kernel destroys it (and the veth pair) asynchronously, so a test that looks
right after ``ip netns del`` could still see the links.
"""

from __future__ import annotations

import ipaddress
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from trainjobs.core.errors import UserError
from trainjobs.local.files import inside
from trainjobs.local.ledger import Ledger, resource_kind

POD_SUBNETS = ipaddress.IPv4Network("198.18.0.0/15")
NETNS_CONFIG = Path("/etc/netns")
NETNS_RUN = Path("/run/netns")
PREFIX = "tj-"
"""Every bridge, veth and namespace a local run creates starts with this (tests look for it)."""
CLUSTER_DOMAIN = "cluster.local"
_MAX_PODS = 253

PodName = tuple[str, str, str | None, tuple[str, ...]]
"""A pod's name, hostname, subdomain and the Services that resolve to it alone."""


@dataclass(frozen=True)
class PodHost:
    """How one pod is reached: its address and the names that resolve to it."""

    pod: str
    hostname: str
    subdomain: str | None
    address: str
    netns: str | None
    services: tuple[str, ...] = ()
    """Services that select this pod alone: cluster DNS answers their names with its address."""

    def dns_names(self, namespace: str) -> list[str]:
        """Longest first, as Kubernetes writes a pod's own /etc/hosts line; Service names last."""
        names = [self.hostname]
        if self.subdomain:
            base = f"{self.hostname}.{self.subdomain}"
            names = [
                f"{base}.{namespace}.svc.{CLUSTER_DOMAIN}",
                f"{base}.{namespace}.svc",
                f"{base}.{namespace}",
                base,
                self.hostname,
            ]
        for service in self.services:
            for name in (
                f"{service}.{namespace}.svc.{CLUSTER_DOMAIN}",
                f"{service}.{namespace}.svc",
                f"{service}.{namespace}",
                service,
            ):
                if name not in names:
                    names.append(name)
        return names


def hosts_file(hosts: list[PodHost], namespace: str) -> str:
    lines = ["127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
    lines += [f"{host.address}\t{' '.join(host.dns_names(namespace))}" for host in hosts]
    # A dual-stack listener (PyTorch's c10d store, gRPC) sees its IPv4 clients as IPv4-mapped
    # IPv6 addresses, which glibc looks up in the hosts file as written: without these lines
    # the reverse lookup falls through to DNS, which pods do not have, and c10d warns
    # "The hostname of the client socket cannot be retrieved" (torch/csrc/distributed/c10d/
    # socket.cpp, formatSockAddr). The name is the pod's A record in cluster DNS
    # (<address with dashes>.<namespace>.pod.<domain>), which nothing here looks up by name,
    # so lookups of the pod and Service names still answer with the IPv4 address alone.
    lines += [
        f"::ffff:{host.address}\t{host.address.replace('.', '-')}.{namespace}.pod.{CLUSTER_DOMAIN}"
        for host in hosts
    ]
    return "\n".join(lines) + "\n"


def resolv_conf(hosts: list[PodHost], namespace: str) -> str:
    subdomains = sorted({host.subdomain for host in hosts if host.subdomain})
    search = [f"{sub}.{namespace}.svc.{CLUSTER_DOMAIN}" for sub in subdomains]
    search += [f"{namespace}.svc.{CLUSTER_DOMAIN}", f"svc.{CLUSTER_DOMAIN}", CLUSTER_DOMAIN]
    header = "# trainjobs local pod network: names come from hosts, there is no nameserver"
    return f"{header}\nsearch {' '.join(search)}\n"


def netns_available() -> str | None:
    """Why network namespaces cannot be used here, or None if they can."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    missing = [tool for tool in ("ip", "nsenter", "unshare") if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (Debian: iproute2, util-linux)"
    return None


class Network(Protocol):
    """What a run needs of its pods' network: their hosts, set up and torn down."""

    mode: str
    hosts: list[PodHost]

    def up(self, ledger: Ledger) -> None:
        """Create it, recording in ``ledger`` what it is about to create first."""
        ...

    def down(self) -> list[str]:
        """Remove everything the network created; what could not be removed."""
        ...


class LoopbackNetwork:
    """Pods share the host's network namespace; every pod's address is 127.0.0.1."""

    mode = "loopback"

    def __init__(self, pods: list[PodName]) -> None:
        self.hosts = [
            PodHost(pod, host, sub, "127.0.0.1", None, services)
            for pod, host, sub, services in pods
        ]

    def up(self, ledger: Ledger) -> None:
        return None

    def down(self) -> list[str]:
        return []


class NamespaceNetwork:
    """A bridge ``tj-<id>``, and per pod a namespace ``tj-<id>-<pod>`` and veth ``tj-<id>-<n>``."""

    mode = "netns"

    def __init__(self, run_id: str, namespace: str, pods: list[PodName]):
        if len(pods) > _MAX_PODS:
            raise UserError(f"local runs support at most {_MAX_PODS} pods (got {len(pods)})")
        self.run_id = run_id
        self.namespace = namespace
        self.bridge = f"{PREFIX}{run_id}"
        subnet = list(POD_SUBNETS.subnets(new_prefix=24))[int(run_id, 16) % 512]
        addresses = list(subnet.hosts())
        self.prefix_length = subnet.prefixlen
        self.hosts = [
            PodHost(pod, host, sub, str(addresses[index]), f"{PREFIX}{run_id}-{pod}", services)
            for index, (pod, host, sub, services) in enumerate(pods)
        ]

    def veth(self, index: int) -> str:
        return f"{self.bridge}-{index}"

    def up(self, ledger: Ledger) -> None:
        """Create everything, recorded in ``ledger`` first; on any failure the caller's
        ``down()`` removes what exists (and a killed run's clean-up, what the ledger lists)."""
        ledger.record_all(
            [
                {"kind": "link", "name": self.bridge},
                *(
                    entry
                    for index, host in enumerate(self.hosts)
                    for entry in (
                        {"kind": "netns-config", "name": host.netns},
                        {"kind": "netns", "name": host.netns},
                        {"kind": "link", "name": self.veth(index)},
                    )
                ),
            ]
        )
        hosts = hosts_file(self.hosts, self.namespace)
        resolv = resolv_conf(self.hosts, self.namespace)
        commands = [f"link add {self.bridge} type bridge", f"link set {self.bridge} up"]
        for index, host in enumerate(self.hosts):
            assert host.netns is not None
            config = inside(NETNS_CONFIG, host.netns)
            config.mkdir(parents=True, exist_ok=True)
            (config / "hosts").write_text(hosts, encoding="utf-8")
            (config / "resolv.conf").write_text(resolv, encoding="utf-8")
            commands += [
                f"netns add {host.netns}",
                f"link add {self.veth(index)} type veth peer name eth0 netns {host.netns}",
                f"link set {self.veth(index)} master {self.bridge} up",
            ]
        _ip(commands)
        for host in self.hosts:
            _ip(
                [
                    "link set lo up",
                    f"addr add {host.address}/{self.prefix_length} dev eth0",
                    "link set eth0 up",
                ],
                netns=host.netns,
            )

    def down(self) -> list[str]:
        """Remove every link, namespace and config directory of this run; return failures."""
        commands = [f"link del {self.veth(index)}" for index in range(len(self.hosts))]
        commands += [f"netns del {host.netns}" for host in self.hosts]
        commands.append(f"link del {self.bridge}")
        # -force: go on past objects that were never created; leftovers are checked below.
        _ip(commands, force=True, check=False)
        for host in self.hosts:
            shutil.rmtree(NETNS_CONFIG / str(host.netns), ignore_errors=True)
        return leftovers(self.run_id)


def leftovers(run_id: str) -> list[str]:
    """Links, namespaces and config directories of run ``run_id`` that still exist."""
    prefix = f"{PREFIX}{run_id}"
    links = subprocess.run(
        ["ip", "-o", "link", "show"], capture_output=True, text=True, check=False
    ).stdout
    found = [
        f"link {name}"
        for line in links.splitlines()
        if (name := line.split(":")[1].strip().split("@")[0]) == prefix
        or name.startswith(f"{prefix}-")
    ]
    for directory, kind in ((NETNS_RUN, "netns"), (NETNS_CONFIG, "netns config")):
        if directory.is_dir():
            found += [
                f"{kind} {entry.name}"
                for entry in directory.iterdir()
                if entry.name.startswith(f"{prefix}-")
            ]
    return sorted(found)


@resource_kind("link")
def _remove_link(entry: dict[str, str]) -> list[str]:
    name = entry["name"]
    if not name.startswith(PREFIX) or not Path("/sys/class/net", name).exists():
        return []
    _ip([f"link del {name}"], check=False)
    return [f"link {name}"]


@resource_kind("netns")
def _remove_netns(entry: dict[str, str]) -> list[str]:
    name = entry["name"]
    if not name.startswith(PREFIX) or not (NETNS_RUN / name).exists():
        return []
    _ip([f"netns del {name}"], check=False)
    return [f"netns {name}"]


@resource_kind("netns-config")
def _remove_netns_config(entry: dict[str, str]) -> list[str]:
    name = entry["name"]
    config = NETNS_CONFIG / name
    if not name.startswith(PREFIX) or not config.is_dir():
        return []
    shutil.rmtree(config, ignore_errors=True)
    return [f"{config}"]


def _ip(commands: list[str], netns: str | None = None, force: bool = False, check: bool = True):
    """One ``ip -batch`` process for many commands: a local run starts in milliseconds."""
    argv = ["ip", *(["-n", netns] if netns else []), *(["-force"] if force else []), "-batch", "-"]
    result = subprocess.run(
        argv, input="\n".join(commands) + "\n", capture_output=True, text=True, check=False
    )
    if check and result.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed: {result.stderr.strip()}")
