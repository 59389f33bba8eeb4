"""Pods' hosts files answer reverse lookups of their peers' addresses in both forms a socket
reports them, so PyTorch's c10d store (a dual-stack listener) can name its clients."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from trainjobs.local.network import PodHost, hosts_file

HOSTS = [
    PodHost("demo-master-0", "demo-master-0", None, "198.18.0.1", "tj-x-demo-master-0"),
    PodHost("demo-worker-0", "demo-worker-0", None, "198.18.0.2", "tj-x-demo-worker-0"),
]

LOOKUPS = """
import socket
for address in ("198.18.0.2", "::ffff:198.18.0.2"):
    print(socket.getnameinfo((address, 0), socket.NI_NAMEREQD)[0])
print(sorted({info[4][0] for info in socket.getaddrinfo("demo-worker-0", 0)}))
"""


def test_the_hosts_file_names_each_pods_ipv4_mapped_address_by_its_pod_record():
    assert hosts_file(HOSTS, "default").splitlines()[-2:] == [
        "::ffff:198.18.0.1\t198-18-0-1.default.pod.cluster.local",
        "::ffff:198.18.0.2\t198-18-0-2.default.pod.cluster.local",
    ]


@pytest.mark.skipif(
    os.geteuid() != 0 or shutil.which("unshare") is None,
    reason="needs root and util-linux's unshare to put a hosts file in place",
)
def test_both_address_forms_resolve_and_the_pod_name_still_gives_only_ipv4(tmp_path: Path):
    hosts = tmp_path / "hosts"
    hosts.write_text(hosts_file(HOSTS, "default"))
    resolv = tmp_path / "resolv.conf"
    resolv.write_text("# no nameserver, as in a local pod\n")
    script = (
        f"mount --bind {hosts} /etc/hosts && mount --bind {resolv} /etc/resolv.conf && "
        f'exec {sys.executable} -c "$0"'
    )
    completed = subprocess.run(
        ["unshare", "-m", "sh", "-c", script, LOOKUPS], capture_output=True, text=True, check=True
    )
    assert completed.stdout.splitlines() == [
        "demo-worker-0",
        "198-18-0-2.default.pod.cluster.local",
        "['198.18.0.2']",
    ]
