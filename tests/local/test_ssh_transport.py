"""`trainjobs run --mpi-transport ssh`: a real sshd per worker pod, a key pair per run.

The generated assets run unchanged: each worker pod runs Debian's sshd through ``sshd.sh`` in
its own network namespace, the master's cluster waiter and ``mpiexec`` reach the workers by
their Service DNS names through ``sshexec.sh``, and Open MPI starts daemons past its routing
radix (64 by default) from other daemons (tree spawn), over ssh too.
"""

from __future__ import annotations

import io
import shutil
import stat
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.local.runs import Run, final_accuracy, leaks, needs_pod_network
from trainjobs.core.errors import EnvironmentFailure, UserError
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import parse_job
from trainjobs.local import ssh as local_ssh
from trainjobs.local.files import read_log
from trainjobs.local.runtime import RunOptions
from trainjobs.local.start import run_job

EXAMPLE = REPO / "jobs" / "chainermn-mnist.yaml"
IMAGE = "trainjobs/chainermn:7.8.1"

needs_sshd = pytest.mark.skipif(
    shutil.which("ssh") is None or not Path("/usr/sbin/sshd").exists(),
    reason="needs Debian's openssh-server and openssh-client (make system-deps)",
)


def chainer_job(name: str, workers: int, master_command: list[str]) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": name},
        "spec": {
            "master": {
                "backoffLimit": 0,
                "template": {"spec": {"containers": [{"image": IMAGE, "command": master_command}]}},
            },
            "worker": {
                "replicas": workers,
                "template": {"spec": {"containers": [{"image": IMAGE}]}},
            },
        },
    }


def sshd_processes(run_dir: Path) -> list[str]:
    """sshd processes started for this run (their command line names its assets)."""
    found = subprocess.run(["pgrep", "-af", "sshd"], capture_output=True, text=True).stdout
    return [line for line in found.splitlines() if str(run_dir) in line]


def key_files(run_dir: Path) -> list[str]:
    names = ("ssh-privatekey", "ssh-publickey", "known_hosts", "id_ed25519", "id_ed25519.pub")
    return sorted(str(path) for path in run_dir.rglob("*") if path.name in names)


@pytest.fixture(scope="module")
def mpi_hello(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """bench/mpi_hello.c, compiled with Open MPI's mpicc."""
    binary = tmp_path_factory.mktemp("mpi") / "mpi_hello"
    subprocess.run(
        ["mpicc", "-O1", "-o", str(binary), str(REPO / "bench" / "mpi_hello.c")], check=True
    )
    return binary


@needs_sshd
@needs_pod_network
def test_the_chainermn_example_trains_over_ssh_and_leaves_nothing(tmp_path: Path) -> None:
    run_dir = tmp_path / "run"
    run = Run(EXAMPLE, run_dir, "--mpi-transport", "ssh")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert final_accuracy(run) >= 0.95
    master = run.pod_log("chainermn-mnist-master")
    # A round reports in the workers' order, but a worker whose sshd is up first is ready
    # a round earlier.
    assert sorted(master[:2]) == [
        "cluster_waiter: chainermn-mnist-worker-0 is ready",
        "cluster_waiter: chainermn-mnist-worker-1 is ready",
    ]
    assert master[2].startswith("cluster_waiter: all 2 workers ready after ")
    assert leaks(run) == []
    assert sshd_processes(run_dir) == []
    assert key_files(run_dir) == []
    assert not (run_dir / "ssh").exists()
    assert run.summary["apiCalls"] == {}
    assert run.summary["leftovers"] == []


@needs_sshd
@needs_pod_network
def test_a_trivial_mpi_program_launches_past_the_routing_radix_with_tree_spawn(
    tmp_path: Path, mpi_hello: Path
) -> None:
    # Open MPI's routing radix (64 by default) lowered to 2: the launch tree of 6 daemons is
    # the one 70 pods would make past 64, in seconds (bench/launch_cost.py runs 128 pods).
    command = ["mpiexec", "--allow-run-as-root", "--mca", "routed_radix", "2", "-n", "7"]
    document = chainer_job("wide", 6, [*command, str(mpi_hello)])
    result = run_job(
        parse_job(document, "test", options=GraphOptions(mpi_transport="ssh")),
        RunOptions(run_dir=tmp_path / "run", network="netns", stream=io.StringIO()),
    )
    log = read_log(tmp_path / "run" / "logs" / "wide-master.log")
    ranks = [line.split() for line in log if line.startswith("rank ")]

    assert result.outcome == "Succeeded", "\n".join([result.message, *log[-20:]])
    assert sorted(int(rank[1]) for rank in ranks) == list(range(7))
    assert {rank[5] for rank in ranks} == {"wide-master", *(f"wide-worker-{i}" for i in range(6))}
    launched_by = Counter(rank[7] for rank in ranks)
    # Rank 0 runs in the master itself; the master starts 2 daemons (routed_radix), and the
    # other 4 are started by those 2 daemons, 2 each, from their workers' addresses.
    assert launched_by.pop("-") == 1
    assert sorted(launched_by.values()) == [2, 2, 2]
    by_pod = {rank[5]: rank[7] for rank in ranks}
    assert by_pod["wide-worker-0"] == by_pod["wide-worker-1"]
    assert result.leftovers == []
    assert sshd_processes(tmp_path / "run") == []


@needs_sshd
@needs_pod_network
def test_the_waiter_names_the_workers_whose_sshd_does_not_answer(tmp_path: Path) -> None:
    document = chainer_job("demo", 2, ["true"])
    # Workers with a command of their own start no sshd.
    worker = document["spec"]["worker"]["template"]["spec"]["containers"][0]
    worker["command"] = ["sleep", "3600"]
    options = GraphOptions(mpi_transport="ssh", wait_timeout_seconds=2)
    result = run_job(
        parse_job(document, "test", options=options),
        RunOptions(run_dir=tmp_path / "run", network="netns", stream=io.StringIO()),
    )
    log = read_log(tmp_path / "run" / "logs" / "demo-master.log")

    assert (result.outcome, result.reason) == ("Failed", "BackoffLimitExceeded")
    assert log[-1] == (
        "cluster_waiter: timed out after 2s; workers not ready: "
        "demo-worker-0(ConnectionRefused) demo-worker-1(ConnectionRefused)"
    )
    assert result.leftovers == []


@needs_pod_network
def test_the_kubectl_stand_in_counts_the_api_calls_of_the_exec_transport(tmp_path: Path) -> None:
    document = chainer_job("demo", 2, ["mpiexec", "--allow-run-as-root", "-n", "3", "true"])
    result = run_job(
        parse_job(document, "test"),
        RunOptions(run_dir=tmp_path / "run", network="netns", stream=io.StringIO()),
    )

    assert result.outcome == "Succeeded", result.message
    # The waiter: an exec round trip per worker (a get only for one that does not answer);
    # mpiexec: one exec per worker.
    assert result.api_calls == {"create pods/exec": 4}


def test_ssh_runs_need_pod_network_namespaces(tmp_path: Path) -> None:
    document = chainer_job("demo", 2, ["true"])

    with pytest.raises(UserError) as raised:
        run_job(
            parse_job(document, "test", options=GraphOptions(mpi_transport="ssh")),
            RunOptions(run_dir=tmp_path / "run", network="loopback", stream=io.StringIO()),
        )

    assert str(raised.value) == (
        "--mpi-transport ssh: every worker's sshd listens on port 2222 at the pod's own "
        "address, which needs pod network namespaces (root, iproute2 and util-linux: make "
        "system-deps); use --mpi-transport kubectl here"
    )
    assert not (tmp_path / "run").exists()


@needs_sshd
def test_a_runs_key_pair_is_private_and_removed_with_it(tmp_path: Path) -> None:
    keys = local_ssh.RunKeys(tmp_path, "demo", "trainjobs-demo")
    generated = sorted(path.name for path in keys.directory.iterdir())
    private = keys.directory / "id_ed25519"
    mode = stat.S_IMODE(private.stat().st_mode)
    directory_mode = stat.S_IMODE(keys.directory.stat().st_mode)

    assert generated == ["id_ed25519", "id_ed25519.pub"]
    assert (oct(mode), oct(directory_mode)) == ("0o600", "0o700")
    assert keys.files["ssh-privatekey"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    assert keys.files["ssh-publickey"].startswith("ssh-ed25519 ")
    assert keys.files["known_hosts"] == f"trainjobs-demo {keys.files['ssh-publickey']}"
    assert keys.remove() == []
    assert list(tmp_path.iterdir()) == []


@needs_sshd
def test_each_run_gets_its_own_key(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    first = local_ssh.RunKeys(tmp_path / "a", "demo", "trainjobs-demo")
    second = local_ssh.RunKeys(tmp_path / "b", "demo", "trainjobs-demo")

    assert first.files["ssh-privatekey"] != second.files["ssh-privatekey"]


def test_a_key_pair_ssh_keygen_cannot_make_is_one_line_and_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    fake = bin_dir / "ssh-keygen"
    fake.write_text("#!/bin/sh\necho 'Saving key failed: No space left on device' >&2\nexit 1\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    (tmp_path / "run").mkdir()

    with pytest.raises(EnvironmentFailure) as raised:
        local_ssh.RunKeys(tmp_path / "run", "demo", "trainjobs-demo")

    assert str(raised.value) == (
        "ssh-keygen could not make the run's key pair: Saving key failed: No space left on device"
    )
    assert raised.value.exit_code == 1
