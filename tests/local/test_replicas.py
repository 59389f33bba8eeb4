"""`trainjobs run` of TFJob and PyTorchJob graphs: Indexed Jobs, parameter servers and the
Kubeflow outcome rules, on this machine.

End-to-end tests run the real command line in a subprocess with pods in network namespaces
(see tests/test_local_run.py for the harness) and check that nothing is left behind; the
local cluster plan (pod names, the index the downward API gives, Service names) is tested
directly.
"""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from components.kinds.registry import load_job, parse_job
from components.local import network
from components.local.cluster import plan_cluster
from tests.conftest import REPO
from tests.local.runs import Run, leaks

PYTORCH_EXAMPLE = REPO / "jobs" / "pytorch-mnist.yaml"
TF_EXAMPLE = REPO / "jobs" / "tf-mnist.yaml"

needs_pod_network = pytest.mark.skipif(
    network.netns_available() is not None,
    reason="needs root, iproute2 and util-linux (make system-deps)",
)

TF_CLUSTER = {
    "chief": ["tf-mnist-chief-0.tf-mnist.default.svc:2222"],
    "ps": ["tf-mnist-ps-0.tf-mnist.default.svc:2222"],
    "worker": [
        "tf-mnist-worker-0.tf-mnist.default.svc:2222",
        "tf-mnist-worker-1.tf-mnist.default.svc:2222",
    ],
}


SIGKILL_SELF = "python3 -c 'import os, signal; os.kill(os.getpid(), signal.SIGKILL)'"
"""As the OOM killer ends a container: exit code 137 (128 + SIGKILL)."""


def tf_job(name: str, replicas: dict[str, tuple[int, str]], **run_policy: int) -> dict[str, Any]:
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
                    "template": {
                        "spec": {
                            "containers": [
                                {"image": "trainjobs/tf-check:1", "command": ["sh", "-c", script]}
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


def printed_tf_configs(run: Run, pod: str) -> list[dict[str, Any]]:
    prefix = "TF_CONFIG: "
    return [json.loads(line[len(prefix) :]) for line in run.pod_log(pod) if line.startswith(prefix)]


# -- the PyTorchJob example ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def pytorch_run(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """jobs/pytorch-mnist.yaml unchanged: a master and one worker, gloo on CPU."""
    if network.netns_available() is not None:
        pytest.skip("needs root, iproute2 and util-linux (make system-deps)")
    return Run(PYTORCH_EXAMPLE, tmp_path_factory.mktemp("pytorch") / "run")


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
        "[trainjobs] message:  Job pytorch-mnist-master: pod pytorch-mnist-master-0 succeeded",
    ]


def test_pytorch_example_trains_over_two_ranks_to_at_least_90_percent(pytorch_run: Run) -> None:
    master = pytorch_run.pod_log("pytorch-mnist-master-0")
    accuracy = [line for line in master if line.startswith("final validation accuracy: ")]

    assert (
        "training on 2 rank(s) (gloo backend): digits, 1437 training and 360 validation samples"
    ) in master
    assert len(accuracy) == 1
    assert float(accuracy[0].rpartition(" ")[2]) >= 0.90


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


def test_tf_example_succeeds_when_the_chief_does(tf_run: Run) -> None:
    summary = tf_run.summary

    assert tf_run.exit_code == 0
    assert (summary["outcome"], summary["reason"], summary["message"]) == (
        "Succeeded",
        "Completed",
        "Job tf-mnist-chief: pod tf-mnist-chief-0 succeeded",
    )


@pytest.mark.parametrize(
    ("pod", "task_type", "index"),
    [
        ("tf-mnist-chief-0", "chief", 0),
        ("tf-mnist-worker-0", "worker", 0),
        ("tf-mnist-worker-1", "worker", 1),
        ("tf-mnist-ps-0", "ps", 0),
    ],
)
def test_every_tf_process_printed_the_tf_config_of_its_replica(
    tf_run: Run, pod: str, task_type: str, index: int
) -> None:
    assert printed_tf_configs(tf_run, pod) == [
        {"cluster": TF_CLUSTER, "task": {"type": task_type, "index": index}, "environment": "cloud"}
    ]


def test_tf_chief_reaches_every_task_by_its_tf_config_dns_name(tf_run: Run) -> None:
    assert tf_run.pod_log("tf-mnist-chief-0")[1:] == [
        "TF_CONFIG verified: chief 0 at tf-mnist-chief-0.tf-mnist.default.svc:2222",
        "reached all 3 other task(s) at their TF_CONFIG addresses",
    ]


def test_tf_parameter_server_serves_until_the_job_ends_then_stops_on_sigterm(tf_run: Run) -> None:
    assert tf_run.pod_log("tf-mnist-ps-0")[1:] == [
        "TF_CONFIG verified: ps 0 at tf-mnist-ps-0.tf-mnist.default.svc:2222",
        'serving {"index": 0, "type": "ps"} on port 2222',
        "stopping: SIGTERM",
    ]
    assert (
        "[trainjobs] stopping the pods of Job tf-mnist-chief, tf-mnist-worker and scaling "
        "StatefulSet tf-mnist-ps to 0"
    ) in tf_run.lines


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
        "Job permanent-worker: Container tensorflow for pod default/permanent-worker-0 failed "
        "with exit code 1 matching FailJob rule at index 0"
    )
    assert summary["jobs"]["permanent-worker"] == {
        "condition": "Failed",
        "reason": "PodFailurePolicy",
        "attempts": 1,
        "retries": 0,
        "succeededIndexes": [],
    }
    assert summary["jobs"]["permanent-chief"]["condition"] == "Active"
    assert run.pod_log("permanent-worker-0") == ["worker failing"]
    assert leaks(run) == []


@needs_pod_network
def test_exit_code_137_is_retried_with_a_new_pod_and_the_job_then_succeeds(
    tmp_path: Path,
) -> None:
    marker = tmp_path / "killed-once"
    # No chief: worker 0 decides (successPolicy); it is SIGKILLed on its first attempt only.
    script = (
        'case "$TRAINJOBS_REPLICA_INDEX" in\n'
        f"  0) if mkdir {marker} 2>/dev/null; then echo first attempt; exec {SIGKILL_SELF}; fi\n"
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
        "pod flaky-worker-0 succeeded (successPolicy)",
    )
    assert (
        "[trainjobs] pod flaky-worker-0 failed: container tensorflow exited with code 137; "
        "creating a new pod (restartPolicy Never, retry 1 of backoffLimit 2)"
    ) in run.lines
    assert run.pod_log("flaky-worker-0") == ["first attempt", "second attempt"]
    assert summary["jobs"]["flaky-worker"] == {
        "condition": "Complete",
        "reason": "Completed",
        "attempts": 3,
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
        "Job late-chief: Job was active longer than specified deadline (1s), during attempt 1",
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


def test_indexed_jobs_are_refused_on_the_loopback_network(tmp_path: Path) -> None:
    run = Run(TF_EXAMPLE, tmp_path / "run", "--network", "loopback")

    assert run.exit_code == 2
    assert run.stderr == (
        "error: Job/tf-mnist-chief is an Indexed Job: its pods reach each other by their DNS "
        "names (TF_CONFIG, MASTER_ADDR) and need hostnames of their own, which only pod network "
        "namespaces give, and they are not used here (--network loopback was asked for); run it "
        "as root with iproute2 and util-linux (make system-deps)\n"
    )
    assert not (tmp_path / "run").exists()


# -- the local cluster plan -------------------------------------------------------------------


def test_each_index_of_an_indexed_job_is_a_pod_named_and_labelled_as_the_job_controller_does() -> (
    None
):
    job = load_job(TF_EXAMPLE)
    plan = plan_cluster(job.graph, job.completion_job)

    assert [
        (pod.name, pod.hostname, pod.subdomain, pod.owner, pod.restart_policy) for pod in plan.pods
    ] == [
        ("tf-mnist-chief-0", "tf-mnist-chief-0", "tf-mnist", "Job/tf-mnist-chief", "Never"),
        ("tf-mnist-worker-0", "tf-mnist-worker-0", "tf-mnist", "Job/tf-mnist-worker", "Never"),
        ("tf-mnist-worker-1", "tf-mnist-worker-1", "tf-mnist", "Job/tf-mnist-worker", "Never"),
        ("tf-mnist-ps-0", "tf-mnist-ps-0", "tf-mnist", "StatefulSet/tf-mnist-ps", "Always"),
    ]
    worker = plan.pods[2]
    assert worker.annotations["batch.kubernetes.io/job-completion-index"] == "1"
    assert worker.labels["batch.kubernetes.io/job-completion-index"] == "1"
    assert worker.controller_env == {"JOB_COMPLETION_INDEX": "1"}
    assert plan.pods[3].labels["apps.kubernetes.io/pod-index"] == "0"


def test_the_completion_job_comes_first_with_its_exit_code_rules() -> None:
    job = load_job(TF_EXAMPLE)
    plan = plan_cluster(job.graph, job.completion_job)
    chief = plan.jobs[0]
    rule = chief.exit_code_rules[0]

    assert [job_plan.name for job_plan in plan.jobs] == ["tf-mnist-chief", "tf-mnist-worker"]
    assert (chief.indexed, chief.backoff_limit, chief.active_deadline_seconds) == (True, 2, 3600)
    assert (rule.action, rule.container, rule.operator) == ("FailJob", "tensorflow", "In")
    assert (rule.matches("tensorflow", 1), rule.matches("tensorflow", 127)) == (True, True)
    assert (rule.matches("tensorflow", 137), rule.matches("sidecar", 1)) == (False, False)


def test_a_worker_job_that_decides_completes_on_its_success_policy_indexes() -> None:
    document = tf_job("workers", {"Worker": (3, "true")})
    job = parse_job(document, "test")

    assert plan_cluster(job.graph, job.completion_job).jobs[0].succeeded_indexes == {0}


def test_the_pytorch_master_service_name_resolves_to_the_master_pod_alone() -> None:
    job = load_job(PYTORCH_EXAMPLE)
    plan = plan_cluster(job.graph, job.completion_job)
    hosts = network.LoopbackNetwork(
        [(pod.name, pod.hostname, pod.subdomain, pod.service_names) for pod in plan.pods]
    ).hosts

    assert [pod.service_names for pod in plan.pods] == [("pytorch-mnist-master-0",), ()]
    assert hosts[0].dns_names("default") == [
        "pytorch-mnist-master-0.pytorch-mnist.default.svc.cluster.local",
        "pytorch-mnist-master-0.pytorch-mnist.default.svc",
        "pytorch-mnist-master-0.pytorch-mnist.default",
        "pytorch-mnist-master-0.pytorch-mnist",
        "pytorch-mnist-master-0",
        "pytorch-mnist-master-0.default.svc.cluster.local",
        "pytorch-mnist-master-0.default.svc",
        "pytorch-mnist-master-0.default",
    ]
