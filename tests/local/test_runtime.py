"""`trainjobs run`: a job's graph executed on this machine with Kubernetes Job semantics.

End-to-end tests run the real command line in a subprocess (as a user would, so exit codes
and signals are real) with pods in network namespaces; every one of them checks that the
run leaves no process, namespace, veth or bridge behind. The pure parts (the local cluster
plan, path mapping, image declarations) are tested directly.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.local.runs import (
    Run,
    final_accuracy,
    leaks,
    needs_open_mpi,
    needs_pod_network,
    without_launcher_race,
)
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.images import catalogue
from trainjobs.images.declarations import Image
from trainjobs.kinds.registry import load_job, parse_job
from trainjobs.local import network
from trainjobs.local.cluster import plan_cluster
from trainjobs.local.containers import Mapping, PathMap, expand_variables
from trainjobs.local.kubectl import POD_ENV, REGISTRY_ENV

DISTRIBUTED = REPO / "jobs" / "chainermn-mnist.yaml"
SINGLE = REPO / "jobs" / "chainer-mnist.yaml"
LONG_TRAINING = ["--epochs", "100000"]


def test_launcher_race_filter_drops_only_that_warning() -> None:
    # Both forms as a busy CI machine printed them: streamed with the pod prefix, and in the log.
    race = "[chainermn-mnist-master:25874] plm:rsh: Warning: setpgid(25880,25880) failed in parent"
    lines = [
        f"[chainermn-mnist-master] {race} with errno=Permission denied(13)",
        f"{race} with errno=Permission denied(13)",
        f"{race} with errno=No such process(3)",
        "training on 3 rank(s)",
    ]

    assert without_launcher_race(lines) == lines[2:]


def write_job(path: Path, source: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of an example job, edited for a test."""
    document = yaml.safe_load(source.read_text(encoding="utf-8"))
    edit(document)
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def master_container(document: dict[str, Any]) -> dict[str, Any]:
    container: dict[str, Any] = document["spec"]["master"]["template"]["spec"]["containers"][0]
    return container


def kill_pod(run_dir: Path, pod: str) -> None:
    """SIGKILL every process of a local pod, as when its node or the OOM killer takes it."""
    registry = f"\0{REGISTRY_ENV}={run_dir.resolve() / 'pods.json'}\0".encode()
    member = f"\0{POD_ENV}={pod}\0".encode()
    for entry in Path("/proc").iterdir():
        try:
            environ = b"\0" + (entry / "environ").read_bytes()
        except OSError:
            continue
        if entry.name.isdigit() and registry in environ and member in environ:
            os.kill(int(entry.name), signal.SIGKILL)


# -- the examples ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def distributed_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The README's main job, unchanged: jobs/chainermn-mnist.yaml, master + 2 workers."""
    if network.netns_available() is not None or shutil.which("mpiexec") is None:
        pytest.skip("needs root, iproute2, util-linux and openmpi-bin (make system-deps)")
    return Run(DISTRIBUTED, tmp_path_factory.mktemp("distributed") / "run")


def test_distributed_example_succeeds_and_exits_0(distributed_run: Run) -> None:
    summary = distributed_run.summary

    assert distributed_run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["retries"]) == (
        "Succeeded",
        "Completed",
        0,
    )
    assert summary["network"] == "netns"
    assert distributed_run.lines[-5:-3] == [
        "[trainjobs] === chainermn-mnist: Succeeded (Completed) ===",
        "[trainjobs] message:  pod chainermn-mnist-master succeeded",
    ]


def test_distributed_example_trains_over_three_ranks_to_at_least_90_percent(
    distributed_run: Run,
) -> None:
    lines = without_launcher_race(distributed_run.lines)
    master = [line for line in lines if line.startswith("[chainermn-mnist-master]")]

    assert master[3] == (
        "[chainermn-mnist-master] training on 3 rank(s) (naive communicator): digits, "
        "1437 training and 360 validation samples"
    )
    assert final_accuracy(distributed_run) >= 0.90


def test_cluster_waiter_runs_before_the_master_command(distributed_run: Run) -> None:
    log = without_launcher_race(distributed_run.pod_log("chainermn-mnist-master"))

    assert log[:2] == [
        "cluster_waiter: chainermn-mnist-worker-0 is ready",
        "cluster_waiter: chainermn-mnist-worker-1 is ready",
    ]
    assert log[2].startswith("cluster_waiter: all 2 workers ready after ")
    assert log[3].startswith("training on 3 rank(s)")


def test_each_pods_output_is_kept_in_its_log_without_the_prefix(distributed_run: Run) -> None:
    prefix = "[chainermn-mnist-master] "
    streamed = [line[len(prefix) :] for line in distributed_run.lines if line.startswith(prefix)]

    assert distributed_run.pod_log("chainermn-mnist-master") == streamed
    assert sorted(p.name for p in (distributed_run.run_dir / "logs").iterdir()) == [
        "chainermn-mnist-master.log"
    ]


def test_distributed_example_leaves_nothing_behind(distributed_run: Run) -> None:
    assert leaks(distributed_run) == []
    assert distributed_run.summary["leftovers"] == []


@needs_open_mpi
def test_single_pod_example_trains_without_mpi_workers(tmp_path: Path) -> None:
    run = Run(SINGLE, tmp_path / "run")

    assert (run.exit_code, run.summary["outcome"]) == (0, "Succeeded")
    assert run.lines[2] == (
        "[chainer-mnist-master] training on 1 rank(s) (no communicator): digits, "
        "1437 training and 360 validation samples"
    )
    assert leaks(run) == []


@needs_open_mpi
def test_without_network_namespaces_pods_are_processes_on_loopback(tmp_path: Path) -> None:
    run = Run(DISTRIBUTED, tmp_path / "run", "--network", "loopback")

    assert (run.exit_code, run.summary["outcome"], run.summary["network"]) == (
        0,
        "Succeeded",
        "loopback",
    )
    assert final_accuracy(run) >= 0.90
    assert leaks(run) == []


# -- Job semantics ----------------------------------------------------------------------------


@needs_pod_network
def test_worker_killed_mid_run_fails_the_master_which_is_retried_per_backoff_limit(
    tmp_path: Path,
) -> None:
    def long_training_with_one_retry(document: dict[str, Any]) -> None:
        document["metadata"]["name"] = "killed"
        document["spec"]["master"]["backoffLimit"] = 1
        master_container(document)["command"] += LONG_TRAINING

    job = write_job(tmp_path / "job.yaml", DISTRIBUTED, long_training_with_one_retry)

    def kill_worker_once_training_runs(line: str, process: subprocess.Popen[str]) -> None:
        if line.startswith("[killed-master] epoch 1/"):
            kill_pod(tmp_path / "run", "killed-worker-1")

    run = Run(job, tmp_path / "run", on_line=kill_worker_once_training_runs)

    assert run.exit_code == 1
    summary = run.summary
    assert (summary["outcome"], summary["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert (summary["attempts"], summary["retries"]) == (2, 1)
    assert summary["message"].startswith(
        "Job has reached the specified backoff limit (1): pod killed-master failed 2 time(s); "
        "last: container chainer exited with code "
    )
    retry = [line for line in run.lines if "creating a new pod" in line]
    assert len(retry) == 1
    assert retry[0].endswith("(restartPolicy Never, retry 1 of backoffLimit 1)")
    assert leaks(run) == []


@needs_open_mpi
def test_restart_policy_on_failure_reruns_the_container_in_place_up_to_the_backoff_limit(
    tmp_path: Path,
) -> None:
    def failing_command(document: dict[str, Any]) -> None:
        document["metadata"]["name"] = "flaky"
        document["spec"]["master"]["backoffLimit"] = 2
        document["spec"]["master"]["template"]["spec"]["restartPolicy"] = "OnFailure"
        master_container(document)["command"] = ["sh", "-c", "echo started; exit 3"]

    run = Run(write_job(tmp_path / "job.yaml", SINGLE, failing_command), tmp_path / "run")

    assert run.exit_code == 1
    assert run.pod_log("flaky-master") == ["started", "started", "started"]
    assert (run.summary["attempts"], run.summary["retries"]) == (3, 2)
    assert run.summary["message"] == (
        "Job has reached the specified backoff limit (2): pod flaky-master failed 3 time(s); "
        "last: container chainer exited with code 3"
    )
    assert leaks(run) == []


@needs_pod_network
def test_active_deadline_stops_the_job_with_outcome_deadline_exceeded(tmp_path: Path) -> None:
    def short_deadline(document: dict[str, Any]) -> None:
        document["metadata"]["name"] = "late"
        document["spec"]["master"]["activeDeadlineSeconds"] = 2
        master_container(document)["command"] += LONG_TRAINING

    run = Run(write_job(tmp_path / "job.yaml", DISTRIBUTED, short_deadline), tmp_path / "run")

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"]) == ("Failed", "DeadlineExceeded")
    assert "[trainjobs] activeDeadlineSeconds (2s) exceeded: stopping pod late-master" in run.lines
    assert leaks(run) == []


@needs_pod_network
def test_waiter_fails_loudly_naming_the_worker_that_never_came_up(tmp_path: Path) -> None:
    def one_worker_set_needs_a_gpu(document: dict[str, Any]) -> None:
        document["metadata"]["name"] = "stuck"
        document["spec"]["master"]["backoffLimit"] = 0
        template = document["spec"].pop("worker")["template"]
        gpu_template = json.loads(json.dumps(template))
        gpu_template["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
        document["spec"]["workerSets"] = {
            "cpu": {"replicas": 1, "template": template},
            "gpu": {"replicas": 1, "template": gpu_template},
        }

    job = write_job(tmp_path / "job.yaml", DISTRIBUTED, one_worker_set_needs_a_gpu)
    run = Run(job, tmp_path / "run", "--wait-timeout", "1")

    assert run.exit_code == 1
    assert "[stuck-master] cluster_waiter: stuck-workerset-cpu-0 is ready" in run.lines
    assert (
        "[stuck-master] cluster_waiter: timed out after 1s; workers not ready: "
        "stuck-workerset-gpu-0(Pending)"
    ) in run.lines
    assert (run.summary["outcome"], run.summary["reason"]) == ("Failed", "BackoffLimitExceeded")
    assert run.summary["message"].endswith(
        "last: init container trainjobs-cluster-waiter exited with code 1"
    )
    assert leaks(run) == []


@needs_pod_network
@pytest.mark.parametrize(
    ("signum", "exit_code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)]
)
def test_interrupting_the_run_stops_every_pod_and_cleans_up(
    tmp_path: Path, signum: signal.Signals, exit_code: int
) -> None:
    def long_training(document: dict[str, Any]) -> None:
        master_container(document)["command"] += LONG_TRAINING

    def interrupt_once_training_runs(line: str, process: subprocess.Popen[str]) -> None:
        if line.startswith("[chainermn-mnist-master] first iteration"):
            process.send_signal(signum)

    job = write_job(tmp_path / "job.yaml", DISTRIBUTED, long_training)
    run = Run(job, tmp_path / "run", on_line=interrupt_once_training_runs)

    assert run.exit_code == exit_code
    assert (run.summary["outcome"], run.summary["reason"]) == ("Interrupted", signum.name)
    assert leaks(run) == []


# -- images and path mapping --------------------------------------------------------------------


def test_an_undeclared_image_is_refused_with_the_container_runtime_a_declaration_or_a_map(
    tmp_path: Path,
) -> None:
    def unknown_image(document: dict[str, Any]) -> None:
        master_container(document)["image"] = "example.com/mine:1"

    run = Run(write_job(tmp_path / "job.yaml", SINGLE, unknown_image), tmp_path / "run")

    assert run.exit_code == 2
    assert run.stderr == (
        "error: image 'example.com/mine:1' is not declared for process runs, which cannot look "
        "inside it: run the job with --runtime container (the image itself), declare the image "
        "in trainjobs-images.yaml beside the job (its in-image files and pinned Python "
        "packages), or run it as a declared image with --map-image example.com/mine:1=DECLARED "
        f"(declared: {', '.join(sorted(catalogue.IMAGES))})\n"
    )
    assert not (tmp_path / "run").exists()


def test_an_image_whose_pinned_package_is_not_installed_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    older = Image(
        reference="example.com/old-numpy:1",
        summary="the training script on an older NumPy",
        python_packages=("numpy==1.22.4",),
        files=catalogue.IMAGES["trainjobs/chainer:7.8.1"].files,
    )
    monkeypatch.setitem(catalogue.IMAGES, older.reference, older)

    def old_numpy(document: dict[str, Any]) -> None:
        master_container(document)["image"] = older.reference

    job = write_job(tmp_path / "job.yaml", SINGLE, old_numpy)
    assert main(["run", str(job), "--run-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        "error: image example.com/old-numpy:1 needs numpy==1.22.4 in the Python that runs its "
        f"containers locally ({Path(sys.executable).parent}), which has 1.23.5: run "
        "`make setup`\n"
    )
    assert not (tmp_path / "run").exists()


def test_the_image_check_reads_each_pinned_package_once_and_nothing_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reading every installed distribution's metadata once per container cost a third of a
    second before the first pod; the check looks up the pinned names alone, once each."""
    import importlib.metadata

    from trainjobs.local import image_packages

    asked: list[str | None] = []
    original = importlib.metadata.distributions

    def counted(**context: Any) -> Any:
        asked.append(context.get("name"))
        return original(**context)

    monkeypatch.setattr(importlib.metadata, "distributions", counted)
    job = load_job(DISTRIBUTED)
    image_packages.check_images(plan_cluster(job.graph, job.success_jobs, job.success_any), {})
    assert sorted(asked, key=str) == ["chainer", "mpi4py", "numpy", "scikit-learn", "scipy"]


def test_a_missing_extra_names_the_make_target_that_installs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytorch = catalogue.IMAGES["trainjobs/pytorch:2.13.0-cpu"]
    absent = pytorch.model_copy(update={"python_packages": ("absent-package==1.0",)})
    monkeypatch.setitem(catalogue.IMAGES, pytorch.reference, absent)

    def on_pytorch(document: dict[str, Any]) -> None:
        master_container(document)["image"] = pytorch.reference

    job = write_job(tmp_path / "job.yaml", SINGLE, on_pytorch)
    assert main(["run", str(job), "--run-dir", str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        "error: image trainjobs/pytorch:2.13.0-cpu needs absent-package==1.0 in the Python that "
        f"runs its containers locally ({Path(sys.executable).parent}), which does not have it: "
        "run `make setup-pytorch`\n"
    )


@needs_open_mpi
def test_map_image_runs_an_undeclared_image_as_a_declared_one(tmp_path: Path) -> None:
    def own_image_few_epochs(document: dict[str, Any]) -> None:
        master_container(document)["image"] = "example.com/mine:1"
        master_container(document)["command"] += ["--epochs", "2"]

    job = write_job(tmp_path / "job.yaml", SINGLE, own_image_few_epochs)
    run = Run(job, tmp_path / "run", "--map-image", "example.com/mine:1=trainjobs/chainer:7.8.1")

    assert (run.exit_code, run.summary["outcome"]) == (0, "Succeeded")


def test_every_declared_image_file_exists_in_the_repository() -> None:
    missing = [
        f"{image.reference}: {file.path} <- {file.source}"
        for image in catalogue.IMAGES.values()
        for file in image.files
        if not file.local_path.is_file()
    ]

    assert missing == []


def test_declared_python_packages_are_pinned_identically_in_requirements() -> None:
    # .venv is the core pins plus the extras' (`make setup-pytorch`, `setup-xgboost`, ...).
    files = {
        None: (
            "requirements.txt",
            "requirements-pytorch.txt",
            "requirements-xgboost.txt",
            "requirements-paddle.txt",
            "requirements-jax.txt",
        ),
        ".venv-tensorflow": ("requirements-tensorflow.txt",),
    }
    pins = {
        environment: {
            line.split()[0]
            for name in names
            for line in (REPO / name).read_text(encoding="utf-8").splitlines()
            if "==" in line and not line.startswith("#")
        }
        for environment, names in files.items()
    }
    missing = {
        f"{image.reference}: {pin}"
        for image in catalogue.IMAGES.values()
        for pin in image.python_packages
        if pin not in pins[image.local_environment]
    }
    assert missing == set()


def test_image_declarations_reject_loose_python_requirements() -> None:
    with pytest.raises(ValueError, match="pin every package exactly"):
        Image(reference="x:1", summary="x", python_packages=("chainer>=7",))


def test_resolve_follows_an_alias_to_a_declared_image() -> None:
    image = catalogue.resolve("mine:1", {"mine:1": "trainjobs/chainer:7.8.1"})

    assert image.reference == "trainjobs/chainer:7.8.1"


def test_an_alias_to_an_undeclared_image_is_refused() -> None:
    with pytest.raises(UserError, match=r"--map-image mine:1=other:2: 'other:2' is not declared"):
        catalogue.resolve("mine:1", {"mine:1": "other:2"})


PATHS = PathMap(
    [
        Mapping("/train_mnist.py", Path("/repo/images/scripts/train_mnist.py"), directory=False),
        Mapping("/etc/trainjobs", Path("/run/pod/volumes/assets"), directory=True),
    ]
)


@pytest.mark.parametrize(
    ("text", "rewritten"),
    [
        ("/train_mnist.py", "/repo/images/scripts/train_mnist.py"),
        ("/etc/trainjobs/hostfile", "/run/pod/volumes/assets/hostfile"),
        ("/etc/trainjobs", "/run/pod/volumes/assets"),
        ("--hostfile=/etc/trainjobs/hostfile", "--hostfile=/run/pod/volumes/assets/hostfile"),
        (
            "python3 /train_mnist.py --out x && cat '/etc/trainjobs/hostfile'",
            "python3 /repo/images/scripts/train_mnist.py --out x && "
            "cat '/run/pod/volumes/assets/hostfile'",
        ),
        ("/data/train_mnist.py", "/data/train_mnist.py"),
        ("/train_mnist.pyc", "/train_mnist.pyc"),
        ("/train_mnist.py/x", "/train_mnist.py/x"),
        ("/etc/trainjobs-old/hostfile", "/etc/trainjobs-old/hostfile"),
        ("/usr/bin/mpiexec", "/usr/bin/mpiexec"),
    ],
)
def test_in_image_paths_are_rewritten_only_where_they_are_whole_paths(
    text: str, rewritten: str
) -> None:
    assert PATHS.rewrite(text) == rewritten


def test_a_path_below_a_mounted_directory_maps_to_the_volume() -> None:
    assert PATHS.host("/etc/trainjobs/kubexec.sh") == Path("/run/pod/volumes/assets/kubexec.sh")
    assert PATHS.host("/etc/hosts") is None


def test_variables_in_commands_expand_like_kubernetes() -> None:
    env = {"RANKS": "3"}

    assert expand_variables("-n $(RANKS) $(UNSET) $$(RANKS)", env) == "-n 3 $(UNSET) $(RANKS)"


# -- the local cluster plan -------------------------------------------------------------------


def test_master_backoff_limit_defaults_to_kubernetes_six() -> None:
    document = yaml.safe_load(DISTRIBUTED.read_text(encoding="utf-8"))
    del document["spec"]["master"]["backoffLimit"]
    job = parse_job(document, "test")

    assert plan_cluster(job.graph, job.success_jobs).backoff_limit == 6


def test_local_pods_are_the_master_then_each_statefulset_replica() -> None:
    job = load_job(DISTRIBUTED)
    plan = plan_cluster(job.graph, job.success_jobs)

    assert [(pod.name, pod.subdomain, pod.restart_policy) for pod in plan.pods] == [
        ("chainermn-mnist-master", "chainermn-mnist", "Never"),
        ("chainermn-mnist-worker-0", "chainermn-mnist", "Always"),
        ("chainermn-mnist-worker-1", "chainermn-mnist", "Always"),
    ]
    assert [pod.service_account for pod in plan.pods] == ["chainermn-mnist-launcher", None, None]
