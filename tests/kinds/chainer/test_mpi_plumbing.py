"""The generated hostfile, rsh agent and kubectl calls work with real Open MPI.

The assets come from the real graph (``build_graph`` via ``registry.parse``, ConfigMap data)
and run unchanged: ``mpiexec`` from Debian's openmpi-bin reads the generated hostfile and
starts its daemons through the generated ``kubexec.sh``, which calls the kubectl stand-in,
which enters the worker pods. Each pod is a network namespace on a private bridge
(198.18.0.0/15) with its own hostname and /etc/hosts, so what a rank reports about its host
is what Open MPI really did.

The stand-in's own contract (exactly the calls the assets make, nothing else) is tested
directly against a hand-written registry, without root.
"""

from __future__ import annotations

import io
import ipaddress
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from trainjobs.kinds.registry import parse_job
from trainjobs.local import network
from trainjobs.local.files import read_log
from trainjobs.local.kubectl import POD_ENV, REGISTRY_ENV
from trainjobs.local.pods import pod_processes
from trainjobs.local.results import RunResult
from trainjobs.local.runtime import RunOptions
from trainjobs.local.start import run_job

KUBECTL = REPO / "components" / "local" / "kubectl.py"
JOB = "demo"
WORKERS = ["demo-worker-0", "demo-worker-1"]

needs_pod_network = pytest.mark.skipif(
    network.netns_available() is not None or shutil.which("mpiexec") is None,
    reason="needs root, iproute2, util-linux and Debian's openmpi-bin (make system-deps)",
)


def distributed_job(*master_command: str) -> dict[str, Any]:
    """A ChainerJob: a master running ``master_command`` and two workers."""
    container = {"image": "trainjobs/chainermn:7.8.1", "command": list(master_command)}
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": JOB},
        "spec": {
            "master": {"backoffLimit": 0, "template": {"spec": {"containers": [container]}}},
            "worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"image": "trainjobs/chainermn:7.8.1"}]}},
            },
        },
    }


def run_locally(document: dict[str, Any], run_dir: Path) -> tuple[RunResult, list[str]]:
    """Run the job in network namespaces; return the result and the master pod's log lines."""
    result = run_job(
        parse_job(document, "test"),
        RunOptions(run_dir=run_dir, network="netns", stream=io.StringIO()),
    )
    log = read_log(run_dir / "logs" / f"{JOB}-master.log")
    assert network.leftovers(result.run_id) == []
    assert pod_processes(str(run_dir / "pods.json")) == []
    return result, log


MPIEXEC = ("mpiexec", "--allow-run-as-root", "-n", "3")


@needs_pod_network
def test_mpiexec_places_ranks_in_hostfile_order_master_first(tmp_path: Path) -> None:
    report = 'echo "rank $OMPI_COMM_WORLD_RANK on $(uname -n)"'
    result, log = run_locally(distributed_job(*MPIEXEC, "sh", "-c", report), tmp_path / "run")

    assert result.outcome == "Succeeded", "\n".join([result.message, *log])
    assert sorted(line for line in log if line.startswith("rank ")) == [
        "rank 0 on demo-master",
        "rank 1 on demo-worker-0",
        "rank 2 on demo-worker-1",
    ]


@needs_pod_network
def test_ranks_in_different_pods_exchange_data_over_mpi(tmp_path: Path) -> None:
    # One write per line: with unbuffered output, print() writes each argument on its own, and
    # mpiexec would interleave the pieces of different ranks.
    program = (
        "import os; from mpi4py import MPI; world = MPI.COMM_WORLD; "
        "total = world.allreduce(world.rank + 1); "
        "os.write(1, f'rank {world.rank} of {world.size} on {MPI.Get_processor_name()} "
        "sum {total}\\n'.encode())"
    )
    result, log = run_locally(distributed_job(*MPIEXEC, "python3", "-c", program), tmp_path / "r")

    assert result.outcome == "Succeeded", "\n".join([result.message, *log])
    assert sorted(line for line in log if line.startswith("rank ")) == [
        "rank 0 of 3 on demo-master sum 6",
        "rank 1 of 3 on demo-worker-0 sum 6",
        "rank 2 of 3 on demo-worker-1 sum 6",
    ]


def tree_job(workers: int, *extra_env: dict[str, str]) -> dict[str, Any]:
    """An allreduce over the master and ``workers`` workers, with Open MPI's routing tree
    shrunk to 2 children per daemon: past 2 hosts, Open MPI 4 would launch daemons from
    daemons (as it does past 64 hosts by default)."""
    program = (
        "import os; from mpi4py import MPI; world = MPI.COMM_WORLD; "
        "os.write(1, f'rank {world.rank} sum {world.allreduce(1)}\\n'.encode())"
    )
    ranks = str(workers + 1)
    document = distributed_job(
        "mpiexec", "--allow-run-as-root", "-n", ranks, "python3", "-c", program
    )
    document["spec"]["worker"]["replicas"] = workers
    container = document["spec"]["master"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "OMPI_MCA_routed_radix", "value": "2"}, *extra_env]
    return document


@needs_pod_network
def test_every_mpi_daemon_is_launched_from_the_master_past_the_routing_radix(tmp_path: Path):
    result, log = run_locally(tree_job(4), tmp_path / "run")

    assert result.outcome == "Succeeded", "\n".join([result.message, *log])
    assert sorted(line for line in log if line.startswith("rank ")) == [
        f"rank {rank} sum 5" for rank in range(5)
    ]


@needs_pod_network
def test_a_tree_launch_fails_because_workers_have_no_way_to_exec(tmp_path: Path) -> None:
    """Why the master sets plm_rsh_no_tree_spawn: undone, daemons in worker pods must start
    the next ones with the rsh agent, and worker pods have no kubectl credentials."""
    tree = {"name": "OMPI_MCA_plm_rsh_no_tree_spawn", "value": "0"}
    result, log = run_locally(tree_job(4, tree), tmp_path / "run")

    assert result.outcome == "Failed"
    assert not [line for line in log if line.startswith("rank ")]


@needs_pod_network
def test_pod_names_resolve_in_every_cluster_dns_form(tmp_path: Path) -> None:
    names = [
        "demo-worker-1",
        "demo-worker-1.demo",
        "demo-worker-1.demo.default",
        "demo-worker-1.demo.default.svc",
        "demo-worker-1.demo.default.svc.cluster.local",
    ]
    lookup = "for name in " + " ".join(names) + '; do echo "$name $(getent hosts $name)"; done'
    result, log = run_locally(distributed_job("sh", "-c", lookup), tmp_path / "run")

    assert result.outcome == "Succeeded", "\n".join([result.message, *log])
    addresses = {line.split()[0]: line.split()[1] for line in log if line.startswith("demo-")}
    assert sorted(addresses) == sorted(names)
    assert len(set(addresses.values())) == 1
    assert ipaddress.ip_address(addresses[names[0]]) in network.POD_SUBNETS


@needs_pod_network
def test_rsh_agent_runs_the_command_in_the_named_worker_pod(tmp_path: Path) -> None:
    # Open MPI may hand the agent a fully qualified name; the pod is its first label.
    agent = ("sh", "/etc/trainjobs/kubexec.sh", "demo-worker-1.demo.default.svc", "uname -n")
    result, log = run_locally(distributed_job(*agent), tmp_path / "run")

    assert result.outcome == "Succeeded", "\n".join([result.message, *log])
    assert log[-1] == "demo-worker-1"


@needs_pod_network
def test_rsh_agent_refuses_a_host_that_is_not_a_pod_of_the_job(tmp_path: Path) -> None:
    agent = ("sh", "/etc/trainjobs/kubexec.sh", "intruder", "uname -n")
    result, log = run_locally(distributed_job(*agent), tmp_path / "run")

    assert (result.outcome, result.reason) == ("Failed", "BackoffLimitExceeded")
    assert log[-1] == "kubexec.sh: 'intruder' is not a pod of job demo"
    assert result.message.endswith("last: container chainer exited with code 2")


@needs_pod_network
def test_the_jobs_role_does_not_allow_exec_into_the_master_itself(tmp_path: Path) -> None:
    exec_master = ("/opt/trainjobs/bin/kubectl", "exec", "demo-master", "-c", "chainer", "--")
    result, log = run_locally(distributed_job(*exec_master, "true"), tmp_path / "run")

    assert result.outcome == "Failed"
    assert log[-1] == (
        'Error from server (Forbidden): pods "demo-master" is forbidden: User '
        '"system:serviceaccount:default:demo-launcher" cannot create resource "pods/exec" in '
        'API group "" in the namespace "default"'
    )


# -- the kubectl stand-in's contract, against a registry written here (no root needed) --------


@pytest.fixture
def registry(tmp_path: Path) -> Path:
    """Two pods in the host's namespaces: a running worker and a finished one."""
    workdir = tmp_path / "worker-0"
    workdir.mkdir()
    container = {
        "running": True,
        "env": {"PATH": os.environ["PATH"], "WHO": "the worker container"},
        "workingDir": str(workdir),
    }
    path = tmp_path / "pods.json"
    registry = {
        "namespace": "default",
        "nsenter": "nsenter",
        "pods": {
            "demo-master": {
                "phase": "Running",
                "serviceAccount": "demo-launcher",
                "sandbox": None,
                "containers": {},
            },
            "demo-worker-0": {
                "phase": "Running",
                "serviceAccount": None,
                "sandbox": None,
                "containers": {"chainer": container},
            },
            "demo-worker-1": {
                "phase": "Succeeded",
                "serviceAccount": None,
                "sandbox": None,
                "containers": {"chainer": {**container, "running": False}},
            },
        },
        "grants": {
            "demo-launcher": [
                [verb, resource, pod]
                for pod in [*WORKERS, "demo-worker-2"]
                for verb, resource in (("get", "pods"), ("create", "pods/exec"))
            ]
        },
    }
    path.write_text(json.dumps(registry), encoding="utf-8")
    return path


def kubectl(
    registry: Path, *args: str, caller: str = "demo-master", stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ["PATH"], REGISTRY_ENV: str(registry), POD_ENV: caller}
    return subprocess.run(
        [str(KUBECTL), *args], input=stdin, capture_output=True, text=True, env=env, check=False
    )


def test_get_pod_phase_prints_the_phase_without_a_newline(registry: Path) -> None:
    answer = kubectl(registry, "get", "pod", "demo-worker-0", "-o", "jsonpath={.status.phase}")

    assert (answer.returncode, answer.stdout) == (0, "Running")


def test_get_of_a_granted_pod_that_does_not_exist_is_not_found(registry: Path) -> None:
    answer = kubectl(registry, "get", "pod", "demo-worker-2", "-o", "jsonpath={.status.phase}")

    assert answer.returncode == 1
    assert answer.stderr.strip() == 'Error from server (NotFound): pods "demo-worker-2" not found'


def test_get_of_a_pod_the_role_does_not_name_is_forbidden(registry: Path) -> None:
    answer = kubectl(registry, "get", "pod", "demo-worker-9", "-o", "jsonpath={.status.phase}")

    assert answer.returncode == 1
    assert answer.stderr.strip() == (
        'Error from server (Forbidden): pods "demo-worker-9" is forbidden: User '
        '"system:serviceaccount:default:demo-launcher" cannot get resource "pods" in API group '
        '"" in the namespace "default"'
    )


def test_exec_runs_with_the_target_containers_env_and_working_directory(
    registry: Path, tmp_path: Path
) -> None:
    answer = kubectl(
        registry, "exec", "demo-worker-0", "-c", "chainer", "--", "sh", "-c", "echo $WHO; pwd"
    )

    assert (answer.returncode, answer.stdout) == (0, f"the worker container\n{tmp_path}/worker-0\n")


def test_exec_forwards_stdin_only_with_dash_i(registry: Path) -> None:
    command = ("demo-worker-0", "-c", "chainer", "--", "cat")

    assert kubectl(registry, "exec", "-i", *command, stdin="hello").stdout == "hello"
    assert kubectl(registry, "exec", *command, stdin="hello").stdout == ""


def test_exec_into_a_completed_pod_is_refused(registry: Path) -> None:
    answer = kubectl(registry, "exec", "demo-worker-1", "-c", "chainer", "--", "true")

    assert answer.returncode == 1
    assert answer.stderr.strip() == (
        "error: cannot exec into a container in a completed pod; current phase is Succeeded"
    )


def test_exec_into_an_unknown_container_is_refused(registry: Path) -> None:
    answer = kubectl(registry, "exec", "demo-worker-0", "-c", "sidecar", "--", "true")

    assert answer.returncode == 1
    assert answer.stderr.strip() == (
        'error: unable to upgrade connection: container not found ("sidecar")'
    )


def test_a_pod_without_a_service_account_token_has_no_credentials(registry: Path) -> None:
    answer = kubectl(
        registry, "exec", "demo-worker-0", "-c", "chainer", "--", "true", caller="demo-worker-1"
    )

    assert answer.returncode == 1
    assert "has no service account token mounted" in answer.stderr


@pytest.mark.parametrize(
    "call",
    [
        ("get", "pods"),
        ("get", "pod", "demo-worker-0"),
        ("get", "pod", "demo-worker-0", "-o", "yaml"),
        ("exec", "demo-worker-0", "--", "true"),
        ("exec", "--stdin", "demo-worker-0", "-c", "chainer", "--", "true"),
        ("logs", "demo-worker-0"),
        ("delete", "pod", "demo-worker-0"),
    ],
)
def test_any_other_call_fails_naming_the_calls_that_are_implemented(
    registry: Path, call: tuple[str, ...]
) -> None:
    answer = kubectl(registry, *call)

    assert answer.returncode == 2
    assert answer.stderr.strip() == (
        f"kubectl (trainjobs local stand-in): unsupported call 'kubectl {' '.join(call)}': "
        "only these calls are implemented: 'get pod POD -o jsonpath={.status.phase}' and "
        "'exec [-i] POD -c CONTAINER -- COMMAND...'"
    )
