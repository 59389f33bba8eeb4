"""`trainjobs run --runtime container`: every pod a real pod of the job's own images.

End-to-end through the real command line (exit codes and signals are real) on the engine this
machine has (podman as root in CI, after `make container-images` built the CPU images). Every
run is checked against the engine's own listings (`podman ps -a`, `podman pod ls`, `podman
network ls`): nothing of it may be left, after success, failure, SIGINT, or SIGKILL followed
by `trainjobs clean` or the next run.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.local.runs import Run, final_accuracy, sigkill_run_at
from trainjobs.engines.engine import OWNER_LABEL, RUN_LABEL
from trainjobs.engines.owners import owner_token
from trainjobs.engines.registry import available_engines

ENGINES = available_engines()
# Most tests run a single pod of the first image built; those of other images say which.
pytestmark = pytest.mark.needs_images("trainjobs/chainer:7.8.1")
CHAINERMN = pytest.mark.needs_images("trainjobs/chainermn:7.8.1")
ENGINE = ENGINES[0] if ENGINES else None
CONTAINER = ("--runtime", "container")


def engine_objects(label: str) -> list[str]:
    """What the engine's own listings show with ``label`` (pods, containers, networks)."""
    assert ENGINE is not None
    found = []
    for kind, args in (
        ("pod", ["pod", "ls", "--format", "{{.Name}}"]),
        ("container", ["ps", "--all", "--format", "{{.Names}}"]),
        ("network", ["network", "ls", "--format", "{{.Name}}"]),
    ):
        if ENGINE.name == "docker" and kind == "pod":
            continue
        listed = subprocess.run(
            [ENGINE.executable, *args, f"--filter=label={label}"],
            capture_output=True,
            text=True,
            env=ENGINE.env,
            check=True,
        ).stdout.split()
        found += [f"{kind} {name}" for name in listed]
    return found


def left_by(run: Run) -> list[str]:
    return engine_objects(f"{RUN_LABEL}={run.summary['runId']}")


def write_job(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def single_pod(name: str, image: str, command: list[str] | None, **pod: Any) -> dict[str, Any]:
    """A PyTorchJob with one Master pod: the smallest job that runs one container."""
    container: dict[str, Any] = {"name": "pytorch", "image": image}
    if command is not None:
        container["command"] = command
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": {"backoffLimit": 0},
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "Never",
                    "template": {"spec": {"containers": [container], **pod}},
                }
            },
        },
    }


# -- the three distributed examples, unchanged ---------------------------------------------------


@pytest.fixture(scope="module")
def chainermn_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    job = REPO / "jobs" / "chainermn-mnist.yaml"
    return Run(job, tmp_path_factory.mktemp("chainermn") / "run", *CONTAINER)


@CHAINERMN
def test_chainermn_example_trains_in_containers_to_at_least_95_percent(chainermn_run: Run):
    assert chainermn_run.exit_code == 0
    assert (chainermn_run.summary["outcome"], chainermn_run.summary["network"]) == (
        "Succeeded",
        ENGINE.name if ENGINE else "",
    )
    assert final_accuracy(chainermn_run) >= 0.95
    # Three ranks, two of them started in the workers' containers through kubexec.sh.
    assert (
        "[chainermn-mnist-master] training on 3 rank(s) (naive communicator): digits, "
        "1437 training and 360 validation samples"
    ) in chainermn_run.lines


@CHAINERMN
def test_the_master_waits_for_its_workers_through_the_kubectl_stand_in(chainermn_run: Run):
    log = chainermn_run.pod_log("chainermn-mnist-master")

    assert log[:2] == [
        "cluster_waiter: chainermn-mnist-worker-0 is ready",
        "cluster_waiter: chainermn-mnist-worker-1 is ready",
    ]
    assert log[2].startswith("cluster_waiter: all 2 workers ready after ")


@CHAINERMN
def test_a_chainermn_run_leaves_no_pod_container_or_network(chainermn_run: Run):
    assert left_by(chainermn_run) == []


@CHAINERMN
def test_the_kubectl_calls_are_counted_by_the_api_stand_in(chainermn_run: Run):
    calls = chainermn_run.summary["apiCalls"]
    # The waiter's exec per worker and mpiexec's per worker daemon answer (2 workers: 4);
    # the waiter reads a worker's phase only after an exec it did not answer, to say why.
    assert set(calls) <= {"get pods", "create pods/exec"}
    assert calls["create pods/exec"] - calls.get("get pods", 0) == 4


@CHAINERMN
def test_the_ssh_transport_runs_in_containers_with_the_images_own_sshd(tmp_path: Path):
    job = REPO / "jobs" / "chainermn-mnist.yaml"
    run = Run(job, tmp_path / "run", *CONTAINER, "--mpi-transport", "ssh")

    assert run.exit_code == 0
    assert final_accuracy(run) >= 0.95
    assert run.summary["apiCalls"] == {}
    assert not (tmp_path / "run" / "ssh").exists()
    assert left_by(run) == []


@CHAINERMN
def test_the_mpijob_example_trains_in_containers_over_ssh(tmp_path: Path):
    run = Run(REPO / "jobs" / "mpijob-chainermn.yaml", tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert final_accuracy(run) >= 0.95
    assert run.summary["apiCalls"] == {}
    assert left_by(run) == []


@CHAINERMN
def test_the_mpi_trainjob_example_trains_in_containers_over_ssh(tmp_path: Path):
    """Trainer's key files as it mounts them (id_rsa 0640) in real containers: the runtime's
    sshd and ssh use an owner-only copy, as root, and read no ~/.ssh config."""
    run = Run(REPO / "jobs" / "trainjob-mpi-chainermn.yaml", tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    launcher = "[trainjob-mpi-chainermn-launcher-0-0] final validation accuracy: "
    accuracy = [
        float(line.removeprefix(launcher)) for line in run.lines if line.startswith(launcher)
    ]
    assert len(accuracy) == 1 and accuracy[0] >= 0.95
    assert run.summary["apiCalls"] == {}
    assert left_by(run) == []


@pytest.mark.needs_images("trainjobs/pytorch:2.13.0-cpu", "trainjobs/tensorflow:2.20.0-cpu")
@pytest.mark.parametrize("example", ["pytorch-mnist", "tf-mnist"])
def test_pytorch_and_tensorflow_examples_train_in_containers(tmp_path: Path, example: str):
    run = Run(REPO / "jobs" / f"{example}.yaml", tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0
    assert run.summary["outcome"] == "Succeeded"
    chief = "master-0" if example == "pytorch-mnist" else "chief-0"
    accuracy = [
        float(line.rsplit(" ", 1)[1])
        for line in run.lines
        if line.startswith(f"[{example}-{chief}] final validation accuracy: ")
    ]
    assert len(accuracy) == 1 and accuracy[0] >= 0.95
    assert left_by(run) == []


@pytest.mark.needs_images("trainjobs/tensorflow:2.20.0-cpu")
def test_a_tensorflow_server_as_pid_1_exits_0_on_sigterm():
    """Deleting a TFJob's pods ends its parameter servers at once: as PID 1 a process gets
    no default SIGTERM action, and one that ignored it would be killed (137) only after its
    grace period."""
    assert ENGINE is not None
    name = "trainjobs-test-tf-server-sigterm"
    tf_config = {
        "cluster": {"ps": ["localhost:2222"]},
        "task": {"type": "ps", "index": 0},
    }
    engine = [ENGINE.executable]
    subprocess.run([*engine, "rm", "-f", name], env=ENGINE.env, capture_output=True)
    subprocess.run(
        [
            *engine,
            *("run", "-d", "--name", name, "--network", "none"),
            *("-e", f"TF_CONFIG={json.dumps(tf_config)}", "trainjobs/tensorflow:2.20.0-cpu"),
        ],
        env=ENGINE.env,
        capture_output=True,
        check=True,
    )
    try:
        for _ in range(600):
            logs = subprocess.run(
                [*engine, "logs", name], env=ENGINE.env, capture_output=True, text=True
            )
            if "serving ps 0" in logs.stdout + logs.stderr:
                break
            time.sleep(0.1)
        assert "serving ps 0 at grpc://localhost:2222" in logs.stdout + logs.stderr
        subprocess.run(
            [*engine, "stop", "--time", "60", name], env=ENGINE.env, capture_output=True, check=True
        )
        state = subprocess.run(
            [*engine, "inspect", "--format", "{{.State.ExitCode}}", name],
            env=ENGINE.env,
            capture_output=True,
            text=True,
            check=True,
        )
        assert state.stdout.strip() == "0"
    finally:
        subprocess.run([*engine, "rm", "-f", name], env=ENGINE.env, capture_output=True)


# -- the image's own files, and images trainjobs does not declare ------------------------------


def test_a_containers_python_and_packages_are_its_images(tmp_path: Path):
    probe = "import chainer, sys; print(sys.executable); print(chainer.__file__)"
    job = single_pod("probe", "trainjobs/chainer:7.8.1", ["python3", "-c", probe])
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0
    assert run.pod_log("probe-master-0") == [
        "/opt/venv/bin/python3",
        "/opt/venv/lib/python3.11/site-packages/chainer/__init__.py",
    ]


@pytest.fixture
def own_image(tmp_path: Path) -> Iterator[str]:
    """An image trainjobs knows nothing of, built here: its ENTRYPOINT prints its own file."""
    assert ENGINE is not None
    reference = "example.org/team/hello:1"
    context = tmp_path / "context"
    context.mkdir()
    (context / "hello.sh").write_text('echo "hello from $(cat /message) as rank $RANK"\n')
    (context / "message").write_text("my own image\n")
    (context / "Dockerfile").write_text(
        textwrap.dedent(
            """\
            FROM trainjobs/chainer:7.8.1
            COPY hello.sh message /
            ENTRYPOINT ["sh", "/hello.sh"]
            """
        )
    )
    subprocess.run(
        [ENGINE.executable, "build", "-q", "-t", reference, str(context)],
        env=ENGINE.env,
        check=True,
        capture_output=True,
    )
    yield reference
    ENGINE.remove_image(reference)


def test_an_undeclared_image_that_exists_locally_runs_its_own_entrypoint(
    tmp_path: Path, own_image: str
):
    job = single_pod("hello", own_image, None)
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0
    assert run.pod_log("hello-master-0") == ["hello from my own image as rank 0"]
    assert left_by(run) == []


def test_an_image_neither_local_nor_built_by_trainjobs_is_pulled_and_its_failure_reported(
    tmp_path: Path,
):
    """No registry is reachable here: the kubelet's reasons, the resolver's own words."""
    job = single_pod("absent", "example.org/team/absent:1", ["true"])
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert run.lines[0] == (
        "[trainjobs] pod absent-master-0 container pytorch: Pulling image "
        "'example.org/team/absent:1'"
    )
    assert run.stderr.startswith(
        "error: pod absent-master-0 container pytorch: ErrImagePull: Failed to pull image "
        "'example.org/team/absent:1': initializing source docker://example.org/team/absent:1: "
        "pinging container registry example.org: "
    )
    assert run.stderr.endswith(
        "; then ImagePullBackOff: Back-off pulling image 'example.org/team/absent:1' (a local "
        "run does not retry)\n"
    )
    assert len(run.stderr.splitlines()) == 1
    assert not (tmp_path / "run").exists()


# -- failure, signals and kills: nothing left --------------------------------------------------


def test_a_failed_job_exits_1_and_leaves_nothing(tmp_path: Path):
    job = single_pod("fails", "trainjobs/chainer:7.8.1", ["sh", "-c", "echo failing; exit 3"])
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert run.summary["message"] == (
        "Job has reached the specified backoff limit (0): pod fails-master-0 failed 1 time(s); "
        "last: container pytorch exited with code 3"
    )
    assert run.pod_log("fails-master-0") == ["failing"]
    assert left_by(run) == []


SLEEPER = ["sh", "-c", "echo started; exec sleep 600"]
QUICK_STOP = {"terminationGracePeriodSeconds": 1}
"""A sleeper is its container's PID 1, which ignores SIGTERM: the kubelet (and the runtime)
then waits out the grace period before SIGKILL. One second keeps such tests short."""


def test_sigint_stops_the_pods_and_leaves_nothing(tmp_path: Path):
    def interrupt(line: str, process: subprocess.Popen[str]) -> None:
        if line.startswith("[sleeper-master-0] started"):
            process.send_signal(signal.SIGINT)

    job = single_pod("sleeper", "trainjobs/chainer:7.8.1", SLEEPER, **QUICK_STOP)
    run = Run(
        write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER, on_line=interrupt
    )

    assert run.exit_code == 130
    assert (run.summary["outcome"], run.summary["reason"]) == ("Interrupted", "SIGINT")
    assert left_by(run) == []


def killed_run(tmp_path: Path) -> str:
    """Start a container run, SIGKILL it once its pod runs; the run's id."""
    tmp_path.mkdir(exist_ok=True)
    job = write_job(tmp_path / "job.yaml", single_pod("killed", "trainjobs/chainer:7.8.1", SLEEPER))
    sigkill_run_at(job, tmp_path / "run", "[killed-master-0] started", *CONTAINER)
    pods = json.loads((tmp_path / "run" / "pods.json").read_text())
    engine_pod = pods["pods"]["killed-master-0"]["enginePod"]
    return engine_pod.split("-")[1]


def test_what_a_sigkilled_run_left_is_removed_by_trainjobs_clean(tmp_path: Path):
    run_id = killed_run(tmp_path)
    engine = ENGINE.name if ENGINE else ""
    left = engine_objects(f"{RUN_LABEL}={run_id}")
    assert f"pod tj-{run_id}-killed-master-0" in left
    assert f"network tj-{run_id}" in left

    clean = subprocess.run(
        [sys.executable, "-m", "trainjobs.cli", "clean"], cwd=REPO, capture_output=True, text=True
    )

    assert clean.returncode == 0
    # One line, each object named once: the record's own clean-up removed them all (nothing
    # left for the sweep by owner label to find again).
    [report] = [line for line in clean.stdout.splitlines() if run_id in line]
    assert report.startswith(f"run {run_id} ")
    assert report.endswith(
        f"removed what it left: {engine} pod tj-{run_id}-killed-master-0, {engine} network "
        f"tj-{run_id}"
    )
    assert engine_objects(f"{RUN_LABEL}={run_id}") == []
    summary = json.loads((tmp_path / "run" / "summary.json").read_text())
    assert (summary["outcome"], summary["reason"]) == ("Interrupted", "Killed")


def test_what_a_sigkilled_run_left_is_removed_by_the_next_run(tmp_path: Path):
    run_id = killed_run(tmp_path / "first")
    assert engine_objects(f"{RUN_LABEL}={run_id}") != []

    job = single_pod("next", "trainjobs/chainer:7.8.1", ["true"])
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0
    removed = next(line for line in run.lines if line.startswith(f"[trainjobs] run {run_id} "))
    assert f"pod tj-{run_id}-killed-master-0" in removed
    assert engine_objects(f"{RUN_LABEL}={run_id}") == []
    assert left_by(run) == []


def test_engine_objects_no_record_lists_are_removed_by_their_dead_owner(tmp_path: Path):
    # After a reboot the records are gone (a tmpfs) but the engine keeps stopped networks.
    assert ENGINE is not None
    finished = subprocess.Popen(["true"])
    dead = {RUN_LABEL: "orphan", OWNER_LABEL: owner_token(finished.pid)}
    finished.wait()
    ENGINE.create_network("tj-test-orphan", "198.18.252.0/24", "198.18.252.1", dead)

    clean = subprocess.run(
        [sys.executable, "-m", "trainjobs.cli", "clean"], cwd=REPO, capture_output=True, text=True
    )

    assert clean.returncode == 0
    assert (
        f"{ENGINE.name}: removed what killed container runs left: network tj-test-orphan"
        in clean.stdout.splitlines()
    )
    assert engine_objects(f"{RUN_LABEL}=orphan") == []


def test_clean_leaves_the_objects_of_runs_still_going(tmp_path: Path):
    assert ENGINE is not None
    alive = {RUN_LABEL: "alive", OWNER_LABEL: owner_token()}  # this test's own process
    ENGINE.create_network("tj-test-alive", "198.18.254.0/24", "198.18.254.1", alive)
    try:
        clean = subprocess.run(
            [sys.executable, "-m", "trainjobs.cli", "clean"],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert clean.returncode == 0
        assert "tj-test-alive" not in clean.stdout
        assert engine_objects(f"{RUN_LABEL}=alive") == ["network tj-test-alive"]
    finally:
        ENGINE.remove_networks(["tj-test-alive"])
