"""Container engines: finding one, the adapters' command lines, labels, owners, settings.

The podman adapter is exercised for real where podman answers (as root in CI). Docker has no
daemon on these machines, so its adapter is checked by the command lines it produces and by
what it refuses before calling docker.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.engines import owners, settings
from trainjobs.engines.docker import Docker
from trainjobs.engines.engine import (
    OWNER_LABEL,
    RUN_LABEL,
    BuildRequest,
    ContainerRequest,
    EngineError,
    EngineUnavailable,
    Mount,
    PodRequest,
)
from trainjobs.engines.podman import Podman
from trainjobs.engines.registry import available_engines, find_engine

REQUEST = ContainerRequest(
    name="tj-1-pod-main",
    pod="tj-1-pod",
    image="trainjobs/chainermn:7.8.1",
    entrypoint=("mpiexec", "-n", "3"),
    args=("python3", "/train_mnist.py"),
    env_file=Path("/run/dir/pods/pod/env/main.env"),
    mounts=(Mount(Path("/run/dir/network/hosts"), "/etc/hosts", read_only=True),),
    workdir="/work",
    user="65534:65534",
    read_only_root=True,
    capabilities=("CHOWN", "KILL"),
    labels={RUN_LABEL: "1"},
)


def test_podman_runs_a_pods_container_attached_removed_and_never_pulled():
    assert Podman("/usr/bin/podman").run_command(REQUEST) == [
        "/usr/bin/podman",
        "run",
        "--rm",
        "--pull=never",
        "--pod=tj-1-pod",
        "--name=tj-1-pod-main",
        "--env-file=/run/dir/pods/pod/env/main.env",
        "--mount=type=bind,source=/run/dir/network/hosts,target=/etc/hosts,ro",
        "--workdir=/work",
        "--user=65534:65534",
        "--read-only",
        "--cap-drop=all",
        "--cap-add=CHOWN",
        "--cap-add=KILL",
        "--security-opt=no-new-privileges",
        "--label=io.trainjobs.run=1",
        '--entrypoint=["mpiexec", "-n", "3"]',
        "--",
        "trainjobs/chainermn:7.8.1",
        "python3",
        "/train_mnist.py",
    ]


def test_docker_joins_the_pods_infra_container_instead_of_a_pod():
    command = Docker("/usr/bin/docker").run_command(REQUEST)

    assert command[:6] == [
        "/usr/bin/docker",
        "run",
        "--rm",
        "--pull=never",
        "--network=container:tj-1-pod",
        "--ipc=container:tj-1-pod",
    ]
    assert "--label=io.trainjobs.pod=tj-1-pod" in command
    assert "--pod=tj-1-pod" not in command


def test_a_container_without_command_keeps_the_images_entrypoint():
    request = ContainerRequest(
        name="c", pod="p", image="img:1", entrypoint=None, args=(), env_file=Path("/e")
    )
    assert Podman("podman").run_command(request)[-5:] == [
        "--env-file=/e",
        "--cap-drop=all",
        "--security-opt=no-new-privileges",
        "--",
        "img:1",
    ]


def test_docker_refuses_build_settings_that_mount_local_directories():
    request = BuildRequest(
        dockerfile=Path("images/pytorch-cpu/Dockerfile"),
        context=Path("images"),
        tag="trainjobs/pytorch:2.13.0-cpu",
        volumes={Path("/opt/wheels"): "/run/build/pip-0"},
    )
    with pytest.raises(UserError) as raised:
        Docker("docker").build(request, print)
    assert str(raised.value) == (
        "docker cannot mount the local directories the build settings name (/opt/wheels) into "
        "a build: serve them over HTTP (an index URL) or build with podman"
    )


needs_docker_without_daemon = pytest.mark.skipif(
    shutil.which("docker") is None or Docker.usable(shutil.which("docker") or "docker"),
    reason="needs a docker client without a daemon",
)


@needs_docker_without_daemon
def test_a_docker_client_without_its_daemon_is_not_an_engine():
    with pytest.raises(EngineUnavailable) as raised:
        find_engine("docker")
    assert str(raised.value) == (
        "--engine docker: docker is not installed or does not answer here; install podman (as "
        "root: `make engine`, which also writes this project's engine settings) or start docker"
    )


@needs_docker_without_daemon
def test_a_container_run_without_its_engine_is_an_environment_failure(capsys):
    job = str(REPO / "jobs" / "chainermn-mnist.yaml")
    assert main(["run", job, "--runtime", "container", "--engine", "docker"]) == 1
    assert capsys.readouterr().err == (
        "error: --engine docker: docker is not installed or does not answer here; install "
        "podman (as root: `make engine`, which also writes this project's engine settings) or "
        "start docker\n"
    )


def test_an_engine_is_chosen_only_for_container_runs(capsys: pytest.CaptureFixture):
    assert main(["run", str(REPO / "jobs" / "chainermn-mnist.yaml"), "--engine", "podman"]) == 2
    assert capsys.readouterr().err == "error: --engine: only with --runtime container\n"


def test_an_unknown_engine_is_refused():
    with pytest.raises(UserError) as raised:
        find_engine("lxc")
    assert str(raised.value) == "--engine 'lxc': choose one of podman, docker"


# -- owners --------------------------------------------------------------------------------------


def test_this_process_owns_its_token_while_it_lives():
    assert owners.owner_alive(owners.owner_token())


def test_a_finished_process_owns_nothing():
    finished = subprocess.Popen(["true"])
    token = owners.owner_token(finished.pid)
    finished.wait()
    assert not owners.owner_alive(token)


def test_a_token_of_another_boot_owns_nothing():
    rest = owners.owner_token().partition(":")[2]
    assert not owners.owner_alive(f"00000000-0000-0000-0000-000000000000:{rest}")
    assert not owners.owner_alive("garbage")


def test_a_token_whose_pid_is_no_ascii_number_owns_nothing():
    boot = owners.owner_token().partition(":")[0]
    assert not owners.owner_alive(f"{boot}:\u00b2:1")


# -- the project's engine settings ---------------------------------------------------------------


def test_containers_conf_sets_runc_cgroupfs_and_ulimits_below_the_hard_limits(tmp_path: Path):
    path = settings.write_containers_conf(tmp_path / "containers.conf")
    text = path.read_text()

    assert 'default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]' in text
    assert 'runtime = "runc"' in text
    assert 'cgroup_manager = "cgroupfs"' in text


def test_engine_commands_read_the_projects_containers_conf_when_it_exists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("CONTAINERS_CONF", raising=False)
    conf = tmp_path / "containers.conf"
    assert "CONTAINERS_CONF" not in settings.engine_environment(conf)
    settings.write_containers_conf(conf)
    assert settings.engine_environment(conf)["CONTAINERS_CONF"] == str(conf)
    monkeypatch.setenv("CONTAINERS_CONF", "/elsewhere.conf")
    assert settings.engine_environment(conf)["CONTAINERS_CONF"] == "/elsewhere.conf"


# -- podman, for real ----------------------------------------------------------------------------

PODMAN = [engine for engine in available_engines() if engine.name == "podman"]


@pytest.mark.skipif(not PODMAN, reason="needs podman (as root: make engine)")
def test_podman_pods_and_networks_carry_their_labels_until_removed():
    engine = PODMAN[0]
    labels = {RUN_LABEL: "engine-test", OWNER_LABEL: owners.owner_token()}
    engine.create_network("tj-engine-test", "198.18.253.0/24", "198.18.253.1", labels)
    try:
        request = PodRequest(
            "tj-engine-test-pod", "pod-0", "tj-engine-test", "198.18.253.2", labels
        )
        infra = engine.create_pod(request)
        started = owners.start_time(infra)
        assert started is not None
        found = {(item.kind, item.name) for item in engine.labelled(f"{RUN_LABEL}=engine-test")}
        assert ("pod", "tj-engine-test-pod") in found
        assert ("network", "tj-engine-test") in found
        inspected = json.loads(engine.call("network", "inspect", "tj-engine-test"))[0]
        assert (inspected["internal"], inspected["dns_enabled"]) == (True, False)
    finally:
        engine.remove_pods(["tj-engine-test-pod"])
        engine.remove_networks(["tj-engine-test"])
    assert engine.labelled(f"{RUN_LABEL}=engine-test") == []
    assert owners.start_time(infra) != started  # the infra process ended with its pod


@pytest.mark.skipif(not PODMAN, reason="needs podman (as root: make engine)")
def test_podman_removes_every_named_pod_even_when_one_is_already_gone():
    # podman 4 given one missing name among several removes none of them and exits 0.
    engine = PODMAN[0]
    labels = {RUN_LABEL: "engine-rm-test", OWNER_LABEL: owners.owner_token()}
    engine.create_network("tj-engine-rm", "198.18.252.0/24", "198.18.252.1", labels)
    try:
        for index in (2, 3):
            engine.create_pod(
                PodRequest(
                    f"tj-engine-rm-{index}",
                    f"pod-{index}",
                    "tj-engine-rm",
                    f"198.18.252.{index}",
                    labels,
                )
            )
        engine.remove_pods(["tj-engine-rm-2", "tj-engine-rm-gone", "tj-engine-rm-3"])
        assert [item.kind for item in engine.labelled(f"{RUN_LABEL}=engine-rm-test")] == ["network"]
    finally:
        engine.remove_pods(["tj-engine-rm-2", "tj-engine-rm-3"])
        engine.remove_networks(["tj-engine-rm"])


def test_a_failed_streamed_command_names_its_last_line_said(tmp_path: Path):
    script = tmp_path / "engine"
    script.write_text(
        "#!/bin/sh\necho 'pushing layer 1'\necho 'denied: requested access'\necho\nexit 3\n"
    )
    script.chmod(0o755)
    shown: list[str] = []

    with pytest.raises(EngineError) as raised:
        Podman(str(script)).stream(["push", "x"], shown.append)

    assert shown == ["pushing layer 1", "denied: requested access", ""]
    assert str(raised.value) == "`podman push` failed (exit 3): denied: requested access"
