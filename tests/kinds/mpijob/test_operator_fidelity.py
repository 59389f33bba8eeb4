"""MPIJob v2beta1 pods as mpi-operator v0.8.2 makes them (``pkg/controller/mpi_job_controller.go``):
what its ``newWorker`` and ``newLauncherJob`` add beyond the user's templates."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kinds.mpijob.test_spec import launcher, mpijob, objects, validate
from trainjobs.kinds.mpi.ssh_assets import SSH_DIR_ENV, secret_files


def worker_pod(found: dict[str, Any]) -> dict[str, Any]:
    return found["StatefulSet/pi-worker"]["spec"]["template"]["spec"]


def test_workers_search_the_jobs_service_domain_for_hydras_short_launcher_name():
    found = objects(mpijob("v2beta1", mpiImplementation="Intel"))

    assert worker_pod(found)["dnsConfig"] == {"searches": ["pi.default.svc.cluster.local"]}


def test_the_jobs_search_domain_follows_the_workers_own_dns_config():
    document = mpijob("v2beta1", mpiImplementation="MPICH")
    worker = document["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["dnsConfig"] = {
        "searches": ["corp.example"],
        "options": [{"name": "ndots", "value": "2"}],
    }

    assert worker_pod(objects(document))["dnsConfig"] == {
        "searches": ["corp.example", "pi.default.svc.cluster.local"],
        "options": [{"name": "ndots", "value": "2"}],
    }


def test_only_v2beta1_workers_get_the_search_domain():
    assert "dnsConfig" not in worker_pod(objects(mpijob("v1")))


def test_the_launcher_job_replaces_only_failed_pods_as_newLauncherJob_asks():
    found = objects(mpijob("v2beta1"))

    assert found["Job/pi-launcher"]["spec"]["podReplacementPolicy"] == "Failed"


def test_training_operators_launcher_job_keeps_the_default_replacement():
    assert "podReplacementPolicy" not in objects(mpijob("v1"))["Job/pi-launcher"]["spec"]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def image_sshd(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A worker's own sshd, as ``/usr/sbin/sshd -De`` runs in mpi-operator's images: the
    image's host key (not the job's), the job's key authorized. ``ssh`` on PATH reaches it
    whatever host it is given (pod names do not resolve here)."""
    for tool in ("ssh", "ssh-keygen", "sshd"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            pytest.skip(f"{tool} is not installed")
    keys = tmp_path / "keys"
    keys.mkdir()
    for name in ("host", "job"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / name)],
            check=True,
        )
    public = (tmp_path / "job.pub").read_text()
    for name, content in secret_files(
        "trainjobs-pi", (tmp_path / "job").read_text(), public
    ).items():
        (keys / name).write_text(content)
        (keys / name).chmod(0o600)
    port = _free_port()
    Path("/run/sshd").mkdir(exist_ok=True)
    sshd = subprocess.Popen(
        [
            "/usr/sbin/sshd",
            "-D",
            "-e",
            "-f",
            "/dev/null",
            "-o",
            f"Port={port}",
            "-o",
            "ListenAddress=127.0.0.1",
            "-o",
            f"HostKey={tmp_path / 'host'}",
            "-o",
            f"AuthorizedKeysFile={tmp_path / 'job.pub'}",
            "-o",
            "StrictModes=no",
            "-o",
            "PidFile=none",
            "-o",
            "UsePAM=no",
        ],
        stderr=subprocess.DEVNULL,
    )
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    wrapper = bin_dir / "ssh"
    wrapper.write_text(
        f'#!/bin/sh\nexec {shutil.which("ssh")} -o HostName=127.0.0.1 -o Port={port} "$@"\n'
    )
    wrapper.chmod(0o755)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        time.sleep(0.05)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", SSH_DIR_ENV: str(keys)}
    try:
        yield tmp_path, env
    finally:
        sshd.terminate()
        sshd.wait(timeout=10)


def _sshexec(tmp_path: Path, env: dict[str, str], document: dict[str, Any]) -> tuple[int, str]:
    assets = tmp_path / "assets"
    assets.mkdir(exist_ok=True)
    for name, content in objects(document)["ConfigMap/pi-config"]["data"].items():
        (assets / name).write_text(content)
    result = subprocess.run(
        [
            "sh",
            str(assets / "sshexec.sh"),
            "-o",
            "ConnectionAttempts=10",
            "pi-worker-1.pi.default.svc",
            "echo",
            "reached",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    return result.returncode, result.stdout


def _with_worker_command(command: list[str]) -> dict[str, Any]:
    document = mpijob("v2beta1")
    worker = document["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["containers"][0]["command"] = command
    return document


def test_a_worker_running_its_own_sshd_is_reached_whatever_its_host_key(image_sshd):
    tmp_path, env = image_sshd

    assert _sshexec(tmp_path, env, _with_worker_command(["/usr/sbin/sshd", "-De"])) == (
        0,
        "reached\n",
    )


def test_a_worker_running_trainjobs_sshd_must_show_the_jobs_host_key(image_sshd):
    tmp_path, env = image_sshd

    assert _sshexec(tmp_path, env, mpijob("v2beta1")) == (255, "")


def test_the_cluster_waiter_finds_workers_running_their_own_sshd_ready(image_sshd):
    tmp_path, env = image_sshd
    assets = tmp_path / "assets"
    assets.mkdir()
    data = objects(_with_worker_command(["/usr/sbin/sshd", "-De"]))["ConfigMap/pi-config"]["data"]
    for name, content in data.items():
        (assets / name).write_text(content)

    result = subprocess.run(
        ["sh", str(assets / "cluster_waiter.sh")],
        capture_output=True,
        text=True,
        env={**env, "TRAINJOBS_WAIT_TIMEOUT_SECONDS": "20"},
        timeout=60,
    )

    assert result.returncode == 0, result.stdout + result.stderr
    assert "cluster_waiter: pi-worker-0 is ready\ncluster_waiter: pi-worker-1 is ready\n" in (
        result.stdout
    )


def test_the_users_templates_may_mount_the_volumes_the_operator_adds():
    document = mpijob("v2beta1")
    launcher_pod = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher_pod["initContainers"] = [
        {
            "name": "show-hostfile",
            "image": "busybox:1",
            "command": ["cat", "/etc/mpi/hostfile"],
            "volumeMounts": [
                {"name": "mpi-job-config", "mountPath": "/etc/mpi"},
                {"name": "ssh-auth", "mountPath": "/root/.ssh"},
            ],
        }
    ]

    found = objects(document)

    volumes = {v["name"]: v for v in launcher(found)["spec"]["volumes"]}
    assert volumes["mpi-job-config"] == {
        "name": "mpi-job-config",
        "configMap": {"name": "pi-config", "defaultMode": 0o555},
    }
    assert volumes["ssh-auth"]["secret"]["secretName"] == "pi-ssh"
    worker_volumes = [v["name"] for v in worker_pod(found)["volumes"]]
    assert "ssh-auth" in worker_volumes


def test_a_users_volume_named_like_the_operators_is_refused_as_a_duplicate(tmp_path):
    document = mpijob("v2beta1")
    launcher_pod = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    launcher_pod["volumes"] = [{"name": "ssh-auth", "emptyDir": {}}]

    result = validate(tmp_path, document)

    assert (result.returncode, result.stderr.splitlines()[1]) == (
        2,
        "  spec.mpiReplicaSpecs.Launcher.template.spec.volumes[0].name: Duplicate value: "
        '"ssh-auth": mpi-operator adds a volume of that name to the pod; rename yours',
    )


def test_host_network_pods_resolve_cluster_names_as_newWorker_and_the_launcher_set():
    document = mpijob("v2beta1")
    for replica in ("Launcher", "Worker"):
        pod = document["spec"]["mpiReplicaSpecs"][replica]["template"]["spec"]
        pod["hostNetwork"] = True
        pod["dnsPolicy"] = "Default"

    found = objects(document)

    assert launcher(found)["spec"]["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert worker_pod(found)["dnsPolicy"] == "ClusterFirstWithHostNet"
