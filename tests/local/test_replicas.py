"""`trainjobs run` of TFJob and PyTorchJob graphs: a Job (or a StatefulSet) per replica and
the Kubeflow outcome rules, on this machine.

End-to-end tests run the real command line in a subprocess with pods in network namespaces
(see tests/local/runs.py for the harness) and check that nothing is left behind; the local
cluster plan (pod names, Service names) is tested directly.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.local.runs import Run, leaks
from trainjobs.kinds.registry import load_job, parse_job
from trainjobs.local import network
from trainjobs.local.cluster import plan_cluster
from trainjobs.local.kubectl import REGISTRY_ENV

PYTORCH_EXAMPLE = REPO / "jobs" / "pytorch-mnist.yaml"
TF_EXAMPLE = REPO / "jobs" / "tf-mnist.yaml"
SHELL_IMAGE = "trainjobs/chainer:7.8.1"
"""Any declared image runs shell scripts; this one runs on the core install alone."""
frameworks = pytest.mark.frameworks
"""Runs the PyTorch or TensorFlow example or image: `make test-frameworks` runs these."""

needs_pod_network = pytest.mark.skipif(
    network.netns_available() is not None,
    reason="needs root, iproute2 and util-linux (make system-deps)",
)

SIGKILL_SELF = "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'"
"""As the OOM killer ends a container: exit code 137 (128 + SIGKILL)."""


def tf_job(
    name: str, replicas: dict[str, tuple[int, str]], restart: str = "ExitCode", **run_policy: int
) -> dict[str, Any]:
    """A TFJob whose replica types each run a shell script: type -> (replicas, script)."""
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": name},
        "spec": {
            "runPolicy": run_policy,
            "tfReplicaSpecs": {
                kind: {
                    "replicas": count,
                    "restartPolicy": restart,
                    "template": {
                        "spec": {
                            "containers": [
                                {
                                    "name": "tensorflow",
                                    "image": SHELL_IMAGE,
                                    "command": ["sh", "-c", script],
                                }
                            ]
                        }
                    },
                }
                for kind, (count, script) in replicas.items()
            },
        },
    }


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


# -- the PyTorchJob example ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def pytorch_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """jobs/pytorch-mnist.yaml unchanged: a master and one worker, gloo on CPU."""
    if network.netns_available() is not None:
        pytest.skip("needs root, iproute2 and util-linux (make system-deps)")
    return Run(PYTORCH_EXAMPLE, tmp_path_factory.mktemp("pytorch") / "run")


@frameworks
def test_pytorch_example_succeeds_and_exits_0(pytorch_run: Run) -> None:
    summary = pytorch_run.summary

    assert pytorch_run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["retries"]) == (
        "Succeeded",
        "Completed",
        0,
    )
    assert pytorch_run.lines[-5:-3] == [
        "[trainjobs] === pytorch-mnist: Succeeded (Completed) ===",
        "[trainjobs] message:  Job pytorch-mnist-master-0: pod pytorch-mnist-master-0 succeeded",
    ]
    # Attempts and retries are the master's, whose backoffLimit they count against (as a
    # Job's own status counts its pods); each Job's are under "jobs".
    assert "[trainjobs] retries:  0 (attempts 1, backoffLimit 2)" in pytorch_run.lines
    assert (summary["attempts"], summary["jobs"]["pytorch-mnist-worker-0"]["attempts"]) == (1, 1)


@frameworks
def test_pytorch_pods_resolve_each_others_addresses_so_c10d_does_not_warn(
    pytorch_run: Run,
) -> None:
    logs = sorted((pytorch_run.run_dir / "logs").glob("*.log"))
    assert [log.name for log in logs] == ["pytorch-mnist-master-0.log"]  # the worker says nothing
    assert not [line for line in pytorch_run.pod_log("pytorch-mnist-master-0") if "[c10d]" in line]


@frameworks
def test_pytorch_example_trains_over_two_ranks_to_at_least_90_percent(pytorch_run: Run) -> None:
    master = pytorch_run.pod_log("pytorch-mnist-master-0")
    accuracy = [line for line in master if line.startswith("final validation accuracy: ")]

    assert (
        "training on 2 rank(s) (gloo backend): digits, 1437 training and 360 validation samples"
    ) in master
    assert len(accuracy) == 1
    assert float(accuracy[0].rpartition(" ")[2]) >= 0.90


@frameworks
def test_pytorch_example_leaves_nothing_behind(pytorch_run: Run) -> None:
    assert leaks(pytorch_run) == []
    assert pytorch_run.summary["leftovers"] == []


# -- the TFJob example ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tf_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """jobs/tf-mnist.yaml unchanged: a chief, two workers and a parameter server."""
    if network.netns_available() is not None:
        pytest.skip("needs root, iproute2 and util-linux (make system-deps)")
    return Run(TF_EXAMPLE, tmp_path_factory.mktemp("tf") / "run")


@frameworks
def test_tf_example_succeeds_when_the_chief_does(tf_run: Run) -> None:
    summary = tf_run.summary

    assert tf_run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["message"]) == (
        "Succeeded",
        "Completed",
        "Job tf-mnist-chief-0: pod tf-mnist-chief-0 succeeded",
    )


@frameworks
def test_tf_example_trains_with_parameter_servers_to_at_least_90_percent(tf_run: Run) -> None:
    chief = tf_run.pod_log("tf-mnist-chief-0")
    accuracy = [line for line in chief if line.startswith("final validation accuracy: ")]

    assert "chief: training with 2 worker(s) and 1 parameter server(s)" in chief
    assert len(accuracy) == 1
    assert float(accuracy[0].rpartition(" ")[2]) >= 0.90


@frameworks
@pytest.mark.parametrize(
    ("pod", "task"),
    [
        ("tf-mnist-worker-0", "worker 0"),
        ("tf-mnist-worker-1", "worker 1"),
        ("tf-mnist-ps-0", "ps 0"),
    ],
)
def test_tf_servers_serve_the_task_their_tf_config_names(tf_run: Run, pod: str, task: str) -> None:
    address = f"{pod}.default.svc:2222"
    assert f"serving {task} at grpc://{address}" in tf_run.pod_log(pod)


@frameworks
def test_tf_servers_are_stopped_when_the_chief_succeeds(tf_run: Run) -> None:
    assert (
        "[trainjobs] stopping the pods of Job tf-mnist-chief-0, tf-mnist-worker-0, "
        "tf-mnist-worker-1, tf-mnist-ps-0"
    ) in tf_run.lines
    assert {name: job["condition"] for name, job in tf_run.summary["jobs"].items()} == {
        "tf-mnist-chief-0": "Complete",
        "tf-mnist-worker-0": "Active",
        "tf-mnist-worker-1": "Active",
        "tf-mnist-ps-0": "Active",
    }


@frameworks
def test_tf_example_leaves_nothing_behind(tf_run: Run) -> None:
    assert leaks(tf_run) == []
    assert tf_run.summary["leftovers"] == []


# -- Kubeflow's outcome rules -------------------------------------------------------------------


@needs_pod_network
def test_exit_code_1_in_a_worker_fails_the_whole_job_at_once_without_retry(
    tmp_path: Path,
) -> None:
    document = tf_job(
        "permanent",
        {
            "Chief": (1, "echo chief running; exec sleep 600"),
            "Worker": (1, "echo worker failing; exit 1"),
        },
        backoffLimit=3,
    )

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    summary = run.summary
    assert run.exit_code == 1
    assert (summary["outcome"], summary["reason"], summary["retries"]) == (
        "Failed",
        "PodFailurePolicy",
        0,
    )
    assert summary["message"] == (
        "Job permanent-worker-0: Container tensorflow for pod default/permanent-worker-0 failed "
        "with exit code 1 matching FailJob rule at index 0"
    )
    assert summary["jobs"]["permanent-worker-0"] == {
        "condition": "Failed",
        "reason": "PodFailurePolicy",
        "attempts": 1,
        "retries": 0,
        "succeededIndexes": [],
    }
    assert summary["jobs"]["permanent-chief-0"]["condition"] == "Active"
    assert run.pod_log("permanent-worker-0") == ["worker failing"]
    assert leaks(run) == []


@needs_pod_network
def test_exit_code_137_is_retried_with_a_new_pod_and_the_job_then_succeeds(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "killed-once"
    # No chief: worker 0 decides; it is SIGKILLed on its first attempt only.
    script = (
        'case "$HOSTNAME" in\n'
        f"  *-worker-0) if mkdir {marker} 2>/dev/null; then echo first attempt; "
        f"exec {SIGKILL_SELF}; fi\n"
        "     echo second attempt ;;\n"
        "  *) exec sleep 600 ;;\n"
        "esac"
    )
    document = tf_job("flaky", {"Worker": (2, script)}, backoffLimit=2)

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    summary = run.summary
    assert run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["message"]) == (
        "Succeeded",
        "Completed",
        "Job flaky-worker-0: pod flaky-worker-0 succeeded",
    )
    assert (
        "[trainjobs] pod flaky-worker-0 failed: container tensorflow exited with code 137; "
        "creating a new pod (restartPolicy Never, retry 1 of backoffLimit 2)"
    ) in run.lines
    assert run.pod_log("flaky-worker-0") == ["first attempt", "second attempt"]
    assert summary["jobs"]["flaky-worker-0"] == {
        "condition": "Complete",
        "reason": "Completed",
        "attempts": 2,
        "retries": 1,
        "succeededIndexes": [0],
    }
    assert leaks(run) == []


@needs_pod_network
def test_active_deadline_fails_a_tf_job_whose_chief_never_ends(tmp_path: Path) -> None:
    document = tf_job(
        "late",
        {"Chief": (1, "exec sleep 600"), "Worker": (1, "exec sleep 600")},
        activeDeadlineSeconds=1,
    )

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"], run.summary["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "Job late-chief-0: Job was active longer than specified deadline (1s), during attempt 1",
    )
    assert "[trainjobs] activeDeadlineSeconds (1s) exceeded: stopping pod late-chief-0" in run.lines
    assert leaks(run) == []


@needs_pod_network
def test_interrupting_a_tf_job_stops_every_pod_and_cleans_up(tmp_path: Path) -> None:
    document = tf_job(
        "stopped",
        {
            "Chief": (1, "echo chief running; exec sleep 600"),
            "Worker": (2, "exec sleep 600"),
            "PS": (1, "exec sleep 600"),
        },
    )

    def interrupt_once_the_chief_runs(line: str, process: subprocess.Popen[str]) -> None:
        if line.startswith("[stopped-chief-0] chief running"):
            process.send_signal(signal.SIGINT)

    run = Run(
        write(tmp_path / "job.yaml", document),
        tmp_path / "run",
        on_line=interrupt_once_the_chief_runs,
    )

    assert run.exit_code == 130
    assert (run.summary["outcome"], run.summary["reason"]) == ("Interrupted", "SIGINT")
    assert leaks(run) == []


@needs_pod_network
def test_restart_policy_never_fails_the_job_on_the_first_failure(tmp_path: Path) -> None:
    document = tf_job(
        "once",
        {"Chief": (1, "exec sleep 600"), "Worker": (1, f"exec {SIGKILL_SELF}")},
        restart="Never",
    )

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"], run.summary["message"]) == (
        "Failed",
        "BackoffLimitExceeded",
        "Job once-worker-0: Job has reached the specified backoff limit (0): pod once-worker-0 "
        "failed 1 time(s); last: container tensorflow exited with code 137",
    )
    assert leaks(run) == []


@needs_pod_network  # elsewhere the fix named is to install iproute2, or to run as root
@frameworks
def test_replicas_reached_by_their_service_names_are_refused_on_the_loopback_network(
    tmp_path: Path,
) -> None:
    run = Run(TF_EXAMPLE, tmp_path / "run", "--network", "loopback")

    assert run.exit_code == 2
    assert run.stderr == (
        "error: pod tf-mnist-chief-0 is reached by its Service's DNS name (TF_CONFIG, "
        "MASTER_ADDR), which needs an address of its own, which only pod network namespaces "
        "give, and they are not used here (--network loopback was asked for); leave out "
        "--network loopback (they are the default here)\n"
    )
    assert not (tmp_path / "run").exists()


# -- the local cluster plan -------------------------------------------------------------------


def test_each_replica_is_one_pod_named_after_its_job_and_resolved_by_its_service() -> None:
    job = load_job(TF_EXAMPLE)
    plan = plan_cluster(job.graph, job.success_jobs)

    assert [(pod.name, pod.owner, pod.restart_policy, pod.service_names) for pod in plan.pods] == [
        ("tf-mnist-chief-0", "Job/tf-mnist-chief-0", "OnFailure", ("tf-mnist-chief-0",)),
        ("tf-mnist-worker-0", "Job/tf-mnist-worker-0", "OnFailure", ("tf-mnist-worker-0",)),
        ("tf-mnist-worker-1", "Job/tf-mnist-worker-1", "OnFailure", ("tf-mnist-worker-1",)),
        ("tf-mnist-ps-0", "Job/tf-mnist-ps-0", "OnFailure", ("tf-mnist-ps-0",)),
    ]


def test_the_jobs_that_decide_come_first_with_their_exit_code_rules() -> None:
    job = parse_job(tf_job("rules", {"Chief": (1, "true"), "Worker": (1, "true")}), "test")
    plan = plan_cluster(job.graph, job.success_jobs)
    chief = plan.jobs[0]
    rule = chief.exit_code_rules[0]

    assert [job_plan.name for job_plan in plan.jobs] == ["rules-chief-0", "rules-worker-0"]
    assert (rule.action, rule.container, rule.operator) == ("FailJob", "tensorflow", "In")
    assert (rule.matches("tensorflow", 1), rule.matches("tensorflow", 127)) == (True, True)
    assert (rule.matches("tensorflow", 137), rule.matches("sidecar", 1)) == (False, False)


def test_an_always_replica_is_a_long_running_statefulset_pod() -> None:
    document = tf_job("serve", {"Chief": (1, "true"), "PS": (1, "exec sleep 600")})
    document["spec"]["tfReplicaSpecs"]["PS"]["restartPolicy"] = "Always"
    job = parse_job(document, "test")
    plan = plan_cluster(job.graph, job.success_jobs)
    assert [(pod.name, pod.owner) for pod in plan.workers] == [
        ("serve-ps-0-0", "StatefulSet/serve-ps-0")
    ]


def test_the_pytorch_master_service_name_resolves_to_the_master_pod_alone() -> None:
    job = load_job(PYTORCH_EXAMPLE)
    plan = plan_cluster(job.graph, job.success_jobs)
    hosts = network.LoopbackNetwork(
        [(pod.name, pod.hostname, pod.subdomain, pod.service_names) for pod in plan.pods]
    ).hosts

    assert [pod.service_names for pod in plan.pods] == [
        ("pytorch-mnist-master-0",),
        ("pytorch-mnist-worker-0",),
    ]
    assert hosts[0].dns_names("default") == [
        "pytorch-mnist-master-0",
        "pytorch-mnist-master-0.default.svc.cluster.local",
        "pytorch-mnist-master-0.default.svc",
        "pytorch-mnist-master-0.default",
    ]


@needs_pod_network
def test_clean_pod_policy_none_says_which_pods_a_cluster_would_leave_running(
    tmp_path: Path,
) -> None:
    document = tf_job("keep", {"Chief": (1, "echo done"), "PS": (1, "exec sleep 600")})
    assert "cleanPodPolicy" not in document["spec"]["runPolicy"]  # v1's default: None

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    assert run.exit_code == 0
    assert (
        "[trainjobs] cleanPodPolicy None: on a cluster pod(s) keep-ps-0 would keep running after "
        "the job ends; a local run stops them as it exits"
    ) in run.lines
    assert leaks(run) == []


def test_a_gang_that_cannot_be_placed_whole_starts_no_pod(tmp_path: Path) -> None:
    document = tf_job("held", {"Chief": (1, "echo started"), "Worker": (2, "echo started")})
    document["spec"]["runPolicy"]["schedulingPolicy"] = {"minAvailable": 3}
    worker = document["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["schedulerName"] = "volcano"
    worker["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"], run.summary["message"]) == (
        "Failed",
        "Unschedulable",
        "the job's PodGroup needs 3 pods placed together and only 1 can be placed here (the "
        "local node offers no GPUs, which held-worker-0, held-worker-1 request); no pod was "
        "started, as a gang scheduler holds them all",
    )
    assert not [line for line in run.lines if line.endswith("] started")]
    assert leaks(run) == []


# -- torchrun (elastic) -------------------------------------------------------------------------

ELASTIC_EXAMPLE = REPO / "jobs" / "pytorch-elastic.yaml"


def container_processes(run_dir: Path, pod: str, program: str) -> list[int]:
    """Processes of a local pod's container whose command line names ``program`` (of this
    run only: other runs on the machine may run a pod of the same name)."""
    registry = f"\0{REGISTRY_ENV}={run_dir.resolve() / 'pods.json'}\0".encode()
    found = []
    for entry in Path("/proc").iterdir():
        try:
            environ = b"\0" + (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        member = f"\0TRAINJOBS_LOCAL_POD={pod}\0".encode() in environ and registry in environ
        if member and program.encode() in cmdline:
            found.append(int(entry.name))
    return found


@needs_pod_network
@frameworks
def test_the_torchrun_example_trains_over_two_nodes(tmp_path: Path) -> None:
    run = Run(ELASTIC_EXAMPLE, tmp_path / "run")

    assert run.exit_code == 0
    assert (run.summary["outcome"], run.summary["reason"]) == ("Succeeded", "Completed")
    final = [line for line in run.pod_log("pytorch-elastic-worker-0") if line.startswith("final")]
    # Rank 0 reports once per run of the worker group; torchrun restarts the whole group
    # when a rank dies (rarely, gloo aborts a rank as the group is torn down), and the
    # group trains again from the start.
    assert final and all(float(line.rpartition(" ")[2]) >= 0.90 for line in final)
    assert (
        "training on 2 rank(s) (gloo backend): digits, 1437 training and 360 validation samples"
        in run.pod_log("pytorch-elastic-worker-0")
    )
    assert leaks(run) == []


@needs_pod_network
@frameworks
def test_a_torchrun_node_killed_mid_run_is_restarted_and_rejoins_the_group(tmp_path: Path) -> None:
    document = yaml.safe_load(ELASTIC_EXAMPLE.read_text())
    worker = document["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]
    # Enough epochs for the kill at epoch 3 to land mid-run; the group then trains them again.
    worker["containers"][0]["args"] = ["--epochs", "12"]
    # torch's c10d store waits read_timeout (default 60 s) for a peer that died; a node that
    # rejoins may wait it out once, so keep it short here.
    document["spec"]["elasticPolicy"]["rdzvConf"] = [{"key": "read_timeout", "value": "10"}]
    killed: list[int] = []

    def kill_worker_1_at_epoch_3(line: str, process: subprocess.Popen[str]) -> None:
        if not killed and line.startswith("[pytorch-elastic-worker-0] epoch 3/12"):
            killed.extend(
                container_processes(tmp_path / "run", "pytorch-elastic-worker-1", "torchrun")
            )
            for pid in killed:
                os.kill(pid, signal.SIGKILL)

    run = Run(
        write(tmp_path / "job.yaml", document), tmp_path / "run", on_line=kill_worker_1_at_epoch_3
    )

    assert len(killed) == 1
    assert run.exit_code == 0
    assert (
        "[trainjobs] pod pytorch-elastic-worker-1: container pytorch exited with code 137; "
        "restarting the container in place (restartPolicy OnFailure, retry 1 of backoffLimit 6)"
    ) in run.lines
    log = run.pod_log("pytorch-elastic-worker-0")
    # The group trained again from its first epoch after the node came back.
    assert len([line for line in log if line.startswith("epoch 1/12: loss")]) >= 2
    final = [line for line in log if line.startswith("final validation accuracy: ")]
    assert len(final) == 1 and float(final[0].rpartition(" ")[2]) >= 0.90
    # torch 2.13's c10d rendezvous may need the rejoining node to start once more (its first
    # join can wait out the store's read timeout); the job still ends well within limits.
    assert 1 <= run.summary["jobs"]["pytorch-elastic-worker-1"]["retries"] <= 2
    assert leaks(run) == []


@needs_pod_network
def test_a_kueue_queued_job_runs_its_jobset_as_the_jobset_controller_would(tmp_path: Path) -> None:
    script = 'echo "TF_CONFIG=$TF_CONFIG"'
    document = tf_job("queued", {"Chief": (1, script), "Worker": (2, script)})
    document["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "user-queue"}
    unqueued = parse_job(tf_job("queued", {"Chief": (1, script), "Worker": (2, script)}), "x")

    run = Run(write(tmp_path / "job.yaml", document), tmp_path / "run")

    assert run.exit_code == 0
    assert run.lines[1] == (
        "[trainjobs] JobSet queued: on a cluster Kueue admits it whole from queue user-queue; "
        "here its Jobs start as the JobSet controller creates them"
    )
    for pod in ("queued-chief-0", "queued-worker-0", "queued-worker-1"):
        env = unqueued.graph.get(f"Job/{pod}").manifest["spec"]["template"]["spec"]
        (tf_config,) = [e["value"] for e in env["containers"][0]["env"] if e["name"] == "TF_CONFIG"]
        assert run.pod_log(pod) == [f"TF_CONFIG={tf_config}"]
    assert leaks(run) == []
