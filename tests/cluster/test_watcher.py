"""The completion watcher against a local Kubernetes API fake, through the real client."""

from __future__ import annotations

import dataclasses
import json
import queue
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kubefake import FakeKube, running, running_fake, terminated, waiting
from trainjobs.cli import main as cli_main
from trainjobs.cluster.client import load_api_client
from trainjobs.cluster.errors import ClusterAccessError, ClusterUnreachable, RetryPolicy
from trainjobs.cluster.outcome import Outcome
from trainjobs.cluster.scaling import WorkerRef
from trainjobs.cluster.status import WORKER_FAILED
from trainjobs.cluster.supervisor import run_watch
from trainjobs.cluster.watch import JobWatchTimeout
from trainjobs.core.durations import format_duration, parse_duration
from trainjobs.core.errors import UserError

NS = "default"
JOB = "train-master"
STS = "train-workerset-worker"
WORKERS = (WorkerRef("StatefulSet", STS),)
FAST = RetryPolicy(initial_backoff=0.01, max_backoff=0.05, request_timeout=5.0, scale_attempts=3)


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    yield from running_fake()


@pytest.fixture
def api(kube: FakeKube) -> Iterator[Any]:
    client = kube.api_client()
    yield client
    client.close()


@pytest.fixture
def running_job(kube: FakeKube) -> FakeKube:
    """A started master Job and a worker StatefulSet with 2 replicas."""
    kube.add_job(JOB)
    kube.start_job(JOB)
    kube.add_statefulset(STS, replicas=2)
    return kube


class Watch:
    """`run_watch` on a daemon thread (a failing test must not hang the session), with
    everything it reported."""

    def __init__(self, kube: FakeKube, api: Any, **kwargs: Any) -> None:
        self.messages: queue.Queue[str] = queue.Queue()
        self.reported: list[str] = []
        self._result: queue.Queue[tuple[Outcome | None, BaseException | None]] = queue.Queue()
        kwargs = {"timeout_seconds": 10.0, "retry": FAST, "report": self._report, **kwargs}
        workers = kwargs.pop("workers", WORKERS)
        job_name = kwargs.pop("job_name", JOB)
        opened = kube.watches_opened
        threading.Thread(
            target=self._run, args=(api, job_name, workers, kwargs), daemon=True
        ).start()
        kube.wait_for_watches(opened + 1)

    def _run(self, api: Any, job_name: str, workers: Any, kwargs: dict[str, Any]) -> None:
        try:
            self._result.put((run_watch(api, NS, job_name, workers, **kwargs), None))
        except BaseException as error:
            self._result.put((None, error))

    def _report(self, message: str) -> None:
        self.reported.append(message)
        self.messages.put(message)

    def wait_for_message(self, match: Callable[[str], bool]) -> str:
        while True:
            message = self.messages.get(timeout=5)
            if match(message):
                return message

    def outcome(self) -> Outcome:
        outcome, error = self._result.get(timeout=10)
        if error is not None:
            raise error
        assert outcome is not None
        return outcome


# --- terminal outcomes -----------------------------------------------------------------------


def test_complete_job_scales_workers_to_zero_and_succeeds(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api)
    running_job.complete_job(JOB, succeeded=1)

    outcome = watch.outcome()

    assert running_job.replicas(STS) == 0
    outputs = outcome.to_outputs()
    assert {k: outputs[k] for k in ("phase", "reason", "succeeded", "failed")} == {
        "phase": "Succeeded",
        "reason": "CompletionsReached",
        "succeeded": 1,
        "failed": 0,
    }
    assert outputs["workers_scaled_down"] is True
    assert outputs["diagnosis"] is None


def test_an_evicted_worker_fails_nothing_the_launcher_decides(running_job: FakeKube, api: Any):
    """A decided difference from mpi-operator, whose ``updateMPIJobStatus`` fails a v2beta1
    job at once when a worker pod is Failed with reason Evicted ("1/2 workers are evicted"):
    here workers are a StatefulSet, which replaces the evicted pod under the same name, and
    the launcher's Job decides, its backoffLimit retrying mpirun against the replacement
    (docs/kinds/mpijob.md, "Who decides")."""
    running_job.add_pod(
        f"{STS}-1",
        job_name=STS,
        phase="Failed",
        containers=[terminated("worker", 137, "Error")],
        reason="Evicted",
        message="The node was low on resource: memory.",
    )
    watch = Watch(running_job, api)
    running_job.complete_job(JOB, succeeded=1)

    outcome = watch.outcome()

    assert (outcome.status.phase, outcome.status.reason) == ("Succeeded", "CompletionsReached")


def test_complete_condition_without_reason_reports_complete(running_job: FakeKube, api: Any):
    watch = Watch(running_job, api)
    running_job.complete_job(JOB, reason=None)

    assert watch.outcome().status.reason == "Complete"


def test_backoff_limit_exceeded_scales_workers_and_reports_exit_code_and_log_tail(
    running_job: FakeKube, api: Any
) -> None:
    running_job.add_pod(
        "train-master-x7k2p", job_name=JOB, containers=[terminated("chainer", 137, "OOMKilled")]
    )
    running_job.set_log("train-master-x7k2p", "chainer", "".join(f"epoch {i}\n" for i in range(30)))
    watch = Watch(running_job, api)
    running_job.fail_job(JOB, reason="BackoffLimitExceeded", failed=1)

    outcome = watch.outcome()

    assert running_job.replicas(STS) == 0
    assert (outcome.status.phase, outcome.status.reason) == ("Failed", "BackoffLimitExceeded")
    assert outcome.workers_scaled_down is True
    assert outcome.diagnosis is not None
    diagnosis = outcome.diagnosis.to_dict()
    assert diagnosis["failed_pods"] == [
        {
            "pod": "train-master-x7k2p",
            "phase": "Failed",
            "reason": None,
            "message": None,
            "containers": [
                {
                    "name": "chainer",
                    "init_container": False,
                    "exit_code": 137,
                    "reason": "OOMKilled",
                    "signal": None,
                    "message": None,
                    "restarts": 0,
                }
            ],
        }
    ]
    assert diagnosis["log_pod"] == "train-master-x7k2p"
    assert diagnosis["log_tail"] == [f"epoch {i}" for i in range(10, 30)]


def test_failure_message_names_pod_exit_code_and_ends_with_the_log_tail(
    running_job: FakeKube, api: Any
) -> None:
    running_job.add_pod(
        "train-master-x7k2p", job_name=JOB, containers=[terminated("chainer", 137, "OOMKilled")]
    )
    running_job.set_log("train-master-x7k2p", "chainer", "loading data\nKilled\n")
    watch = Watch(running_job, api)
    running_job.fail_job(JOB)

    lines = watch.outcome().describe().splitlines()

    assert lines[0].startswith(
        "job default/train-master Failed (BackoffLimitExceeded: Job has reached the specified "
        "backoff limit)"
    )
    assert lines[1:] == [
        f"workers stopped: StatefulSet/{STS}",
        "failed pods:",
        "  train-master-x7k2p (Failed): container chainer exited with code 137 (OOMKilled)",
        "last 2 log line(s) of train-master-x7k2p/chainer:",
        "  | loading data",
        "  | Killed",
    ]


def test_deadline_exceeded_scales_workers_to_zero(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api)
    running_job.fail_job(
        JOB, reason="DeadlineExceeded", message="Job was active longer than specified deadline"
    )

    outcome = watch.outcome()

    assert running_job.replicas(STS) == 0
    assert (outcome.status.phase, outcome.status.reason, outcome.status.message) == (
        "Failed",
        "DeadlineExceeded",
        "Job was active longer than specified deadline",
    )
    assert outcome.workers_scaled_down is True


def test_deleted_job_is_terminal_and_scales_workers_to_zero(running_job: FakeKube, api: Any):
    watch = Watch(running_job, api)
    running_job.delete("jobs", JOB)

    outcome = watch.outcome()

    assert running_job.replicas(STS) == 0
    assert (outcome.status.phase, outcome.status.reason, outcome.status.message) == (
        "Deleted",
        "Deleted",
        "Job default/train-master was deleted before it finished",
    )
    assert outcome.workers_scaled_down is True


def test_job_that_finished_before_the_watch_started_is_reported_at_once(
    running_job: FakeKube, api: Any
) -> None:
    running_job.complete_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.status.phase == "Succeeded"
    assert running_job.replicas(STS) == 0
    assert (
        running_job.count_requests("GET", f"/apis/batch/v1/namespaces/{NS}/jobs", watch=True) == 0
    )


def test_missing_job_is_reported_as_deleted(kube: FakeKube, api: Any) -> None:
    outcome = run_watch(api, NS, JOB, (), timeout_seconds=10, retry=FAST)

    assert (outcome.status.phase, outcome.status.message) == (
        "Deleted",
        "Job default/train-master no longer exists; it was deleted before it finished",
    )


def test_job_recreated_with_another_uid_counts_as_deleted(running_job: FakeKube, api: Any):
    old_uid = running_job.get("jobs", JOB)["metadata"]["uid"]
    running_job.delete("jobs", JOB)
    new_uid = running_job.add_job(JOB)["metadata"]["uid"]

    outcome = run_watch(api, NS, JOB, WORKERS, job_uid=old_uid, timeout_seconds=10, retry=FAST)

    assert (outcome.status.phase, outcome.status.message) == (
        "Deleted",
        f"Job default/train-master was replaced by another Job with the same name "
        f"(uid {new_uid}, expected {old_uid})",
    )
    assert running_job.replicas(STS) == 0


def test_a_worker_job_is_suspended_keeping_its_size(kube: FakeKube, api: Any) -> None:
    kube.add_job(JOB)
    kube.add_job("train-worker", parallelism=4, completion_mode="Indexed")
    kube.complete_job(JOB)

    outcome = run_watch(
        api, NS, JOB, [WorkerRef("Job", "train-worker")], timeout_seconds=10, retry=FAST
    )

    spec = kube.get("jobs", "train-worker")["spec"]
    assert (spec["suspend"], spec["parallelism"]) == (True, 4)
    assert [r.to_dict() for r in outcome.workers] == [
        {"kind": "Job", "name": "train-worker", "scaled_down": True, "detail": "suspended"}
    ]


def test_a_worker_that_no_longer_exists_counts_as_scaled_down(kube: FakeKube, api: Any) -> None:
    kube.add_job(JOB)
    kube.complete_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert [r.to_dict() for r in outcome.workers] == [
        {
            "kind": "StatefulSet",
            "name": STS,
            "scaled_down": True,
            "detail": "not found; nothing left to scale down",
        }
    ]


def test_scale_down_retries_a_500(running_job: FakeKube, api: Any) -> None:
    running_job.complete_job(JOB)
    running_job.fail_next(500, method="PATCH", count=2)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.workers_scaled_down is True
    assert running_job.replicas(STS) == 0


def test_scale_down_refused_is_reported_not_raised(running_job: FakeKube, api: Any) -> None:
    running_job.complete_job(JOB)
    running_job.fail_next(403, method="PATCH")

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.workers_scaled_down is False
    assert outcome.describe().splitlines()[1] == (
        f"workers NOT stopped: StatefulSet/{STS} (HTTP 403 Forbidden)"
    )
    assert running_job.replicas(STS) == 2


# --- faults ----------------------------------------------------------------------------------


def test_watch_dropped_mid_stream_relists_and_sees_the_completion(
    running_job: FakeKube, api: Any
) -> None:
    watch = Watch(running_job, api)
    running_job.drop_watches()
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert (
        running_job.count_requests("GET", f"/apis/batch/v1/namespaces/{NS}/jobs", watch=False) == 2
    )


def test_watch_500_is_retried(running_job: FakeKube, api: Any) -> None:
    running_job.fail_next(500, watch=True)
    watch = Watch(running_job, api)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert any("HTTP 500 Internal Server Error" in m for m in watch.reported)


def test_list_503_is_retried(running_job: FakeKube, api: Any) -> None:
    running_job.fail_next(503, method="GET", watch=False, count=3)
    watch = Watch(running_job, api)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert sum("HTTP 503 Service Unavailable" in m for m in watch.reported) == 3


def test_watch_error_event_410_relists_and_resumes(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api)
    opened = running_job.watches_opened
    running_job.expire_watches()
    running_job.wait_for_watches(opened + 1)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert "job default/train-master: watch expired (410 Gone); re-listing" in watch.reported


def test_watch_http_410_relists_and_resumes(running_job: FakeKube, api: Any) -> None:
    running_job.fail_next(410, watch=True)
    watch = Watch(running_job, api)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert "job default/train-master: watch expired (410 Gone); re-listing" in watch.reported


def test_watch_starting_with_an_error_event_410_relists_and_resumes(
    running_job: FakeKube, api: Any
) -> None:
    running_job.fail_next(410, watch=True, as_watch_event=True)
    watch = Watch(running_job, api)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"


def test_api_server_restart_keeping_state_resumes_the_watch(running_job: FakeKube, api: Any):
    watch = Watch(running_job, api)
    opened = running_job.watches_opened
    running_job.restart(keep_state=True)
    running_job.wait_for_watches(opened + 1)
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    assert running_job.replicas(STS) == 0


def test_api_server_down_is_retried_until_it_returns(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api)
    running_job.stop()
    watch.wait_for_message(lambda m: "Connection refused" in m)
    running_job.complete_job(JOB)
    running_job.start()

    assert watch.outcome().status.phase == "Succeeded"
    assert running_job.replicas(STS) == 0


def test_an_api_server_that_stops_answering_is_reported_unreachable_not_running(
    running_job: FakeKube, api: Any
) -> None:
    retry = dataclasses.replace(FAST, unreachable_seconds=0.3)
    watch = Watch(running_job, api, retry=retry)
    watch.wait_for_message(lambda m: m.endswith("elapsed"))
    url = running_job.url
    running_job.stop()

    with pytest.raises(ClusterUnreachable) as raised:
        watch.outcome()

    assert str(raised.value).startswith(f"the Kubernetes API at {url} stopped answering for 0.")
    assert "the job's state is unknown" in str(raised.value)
    assert running_job.patches == []  # nothing was stopped: the job may well be running


def test_api_server_restart_losing_state_reports_the_job_deleted(
    running_job: FakeKube, api: Any
) -> None:
    watch = Watch(running_job, api)
    running_job.restart(keep_state=False)

    outcome = watch.outcome()

    assert (outcome.status.phase, outcome.status.message) == (
        "Deleted",
        "Job default/train-master no longer exists; it was deleted before it finished",
    )
    assert outcome.workers_scaled_down is True


def test_the_fake_answers_a_watch_from_before_a_state_loss_with_410(
    running_job: FakeKube, api: Any
) -> None:
    """What the watcher's re-list protects against, as a real API server behaves."""
    from kubernetes import client, watch

    old_version = client.BatchV1Api(api).list_namespaced_job(NS).metadata.resource_version
    running_job.restart(keep_state=False)

    batch = client.BatchV1Api(api)
    stream = watch.Watch().stream(
        batch.list_namespaced_job, NS, resource_version=old_version, timeout_seconds=5
    )
    with pytest.raises(client.ApiException) as raised:
        next(stream)

    assert raised.value.status == 410


def test_forbidden_list_is_a_user_error_naming_the_permissions(running_job: FakeKube, api: Any):
    running_job.fail_next(403, method="GET", watch=False)

    with pytest.raises(ClusterAccessError) as raised:
        run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert str(raised.value) == (
        "the Kubernetes API refused to watch Job default/train-master (HTTP 403 Forbidden); "
        "the kubeconfig's identity needs, in namespace default: get/list/watch and patch on "
        "jobs, list and delete on pods, get on pods/log, patch on statefulsets/scale, list, get "
        "and patch on services and configmaps"
    )


# --- timeout and progress --------------------------------------------------------------------


def test_timeout_leaves_workers_running_and_says_how_to_resume(running_job: FakeKube, api: Any):
    with pytest.raises(JobWatchTimeout) as raised:
        run_watch(api, NS, JOB, WORKERS, timeout_seconds=0.3, retry=FAST)

    assert str(raised.value) == (
        "job default/train-master still running after 0.3s (Running: 1 active (1 ready), 0 succeeded, "
        "0 failed); workers left running; run `pulumi up` again to keep watching"
    )
    assert running_job.replicas(STS) == 2
    assert running_job.patches == []


def test_watching_again_after_a_timeout_picks_up_the_finished_job(
    running_job: FakeKube, api: Any
) -> None:
    with pytest.raises(JobWatchTimeout):
        run_watch(api, NS, JOB, WORKERS, timeout_seconds=0.2, retry=FAST)
    running_job.fail_job(JOB)  # while nobody watches

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert (outcome.status.phase, running_job.replicas(STS)) == ("Failed", 0)


def test_progress_is_reported_on_every_status_change(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api, clock=lambda: 0.0)  # a frozen clock: elapsed is 0s
    running_job.set_job_status(JOB, active=2, ready=1)
    watch.wait_for_message(lambda m: "2 active (1 ready)" in m)
    running_job.set_job_status(JOB, ready=2)
    watch.wait_for_message(lambda m: "2 active (2 ready)" in m)
    running_job.set_job_status(JOB, active=1, ready=1, failed=1)
    watch.wait_for_message(lambda m: "1 failed" in m)
    running_job.complete_job(JOB, succeeded=2)
    watch.outcome()

    prefix = "job default/train-master: "
    assert [m.removeprefix(prefix) for m in watch.reported if m.startswith(prefix)] == [
        "Running: 1 active (1 ready), 0 succeeded, 0 failed, 0s elapsed",
        "Running: 2 active (1 ready), 0 succeeded, 0 failed, 0s elapsed",
        "Running: 2 active (2 ready), 0 succeeded, 0 failed, 0s elapsed",
        "Running: 1 active (1 ready), 0 succeeded, 1 failed, 0s elapsed",
        "Succeeded: 0 active (0 ready), 2 succeeded, 1 failed, 0s elapsed",
    ]
    assert watch.reported[-1] == f"StatefulSet/{STS}: scaled to 0"


def test_progress_is_repeated_while_nothing_changes(running_job: FakeKube, api: Any) -> None:
    watch = Watch(running_job, api, progress_interval=0.05)
    prefix = "job default/train-master: Running: 1 active (1 ready), 0 succeeded, 0 failed, "
    repeated = [watch.wait_for_message(lambda m: m.startswith("job ")) for _ in range(3)]
    running_job.complete_job(JOB)

    assert [m.startswith(prefix) for m in repeated] == [True, True, True]
    assert watch.outcome().status.phase == "Succeeded"


# --- diagnosis -------------------------------------------------------------------------------


def test_failed_init_container_is_diagnosed_and_its_log_read(running_job: FakeKube, api: Any):
    running_job.add_pod(
        "train-master-abcde",
        job_name=JOB,
        phase="Failed",
        init_containers=[terminated("cluster-waiter", 1, "Error")],
        containers=[waiting("chainer", "PodInitializing")],
    )
    running_job.set_log("train-master-abcde", "cluster-waiter", "worker-1 not reachable\n")
    running_job.fail_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert outcome.diagnosis.render().splitlines() == [
        "failed pods:",
        "  train-master-abcde (Failed): init container cluster-waiter exited with code 1 (Error)",
        "last 1 log line(s) of train-master-abcde/cluster-waiter:",
        "  | worker-1 not reachable",
    ]


def test_restarted_container_failure_reads_the_previous_log(running_job: FakeKube, api: Any):
    crashed = terminated("chainer", 2, "Error", message="bad flag")
    running_job.add_pod(
        "train-master-abcde",
        job_name=JOB,
        phase="Running",
        containers=[running("chainer", last_terminated=crashed, restarts=1)],
    )
    running_job.set_log("train-master-abcde", "chainer", "usage: train.py\n", previous=True)
    running_job.fail_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert outcome.diagnosis.render().splitlines() == [
        "failed pods:",
        "  train-master-abcde (Running): container chainer exited with code 2 (Error): "
        "bad flag [1 restart(s)]",
        "last 1 log line(s) of train-master-abcde/chainer:",
        "  | usage: train.py",
    ]


def test_image_pull_failure_is_diagnosed(running_job: FakeKube, api: Any) -> None:
    running_job.add_pod(
        "train-master-abcde",
        job_name=JOB,
        phase="Pending",
        containers=[waiting("chainer", "ImagePullBackOff", "Back-off pulling image")],
    )
    running_job.fail_job(JOB, reason="DeadlineExceeded", message="deadline")

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert outcome.diagnosis.render().splitlines()[:2] == [
        "failed pods:",
        "  train-master-abcde (Pending): container chainer cannot run: ImagePullBackOff: "
        "Back-off pulling image",
    ]


def test_pods_with_only_the_legacy_job_name_label_are_diagnosed(running_job: FakeKube, api: Any):
    running_job.add_pod(
        "train-master-abcde",
        job_name=JOB,
        containers=[terminated("chainer", 1)],
        legacy_label_only=True,
    )
    running_job.fail_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert [p.pod for p in outcome.diagnosis.failed_pods] == ["train-master-abcde"]


def test_a_job_without_pods_left_is_diagnosed_with_a_note(running_job: FakeKube, api: Any):
    running_job.fail_job(JOB, reason="DeadlineExceeded", message="deadline")

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert outcome.diagnosis.to_dict()["notes"] == [
        "no pods of Job default/train-master are left to inspect"
    ]


def test_a_log_that_is_valid_json_is_kept_verbatim(running_job: FakeKube, api: Any) -> None:
    running_job.add_pod("train-master-abcde", job_name=JOB, containers=[terminated("chainer", 1)])
    running_job.set_log("train-master-abcde", "chainer", '{"loss": 1.5}\n')
    running_job.fail_job(JOB)

    outcome = run_watch(api, NS, JOB, WORKERS, timeout_seconds=10, retry=FAST)

    assert outcome.diagnosis is not None
    assert outcome.diagnosis.log_tail == ('{"loss": 1.5}',)


# --- durations and credentials ---------------------------------------------------------------


ACCEPTED = {"24h": 86400.0, "90m": 5400.0, "30s": 30.0, "1h30m": 5400.0, "3600": 3600.0, "0.5": 0.5}


@pytest.mark.parametrize(("text", "seconds"), [*ACCEPTED.items(), (120, 120.0)])
def test_parse_duration_accepts(text: str | int, seconds: float) -> None:
    assert parse_duration(text, key="k", fix="f") == seconds


@pytest.mark.parametrize("text", ["", "1d", "-5", "0", "ten minutes", "5m3h", "1.5h"])
def test_parse_duration_rejects_with_key_value_and_fix(text: str) -> None:
    with pytest.raises(UserError) as raised:
        parse_duration(text, key="trainjobs:watchTimeout", fix="pulumi config set k 24h")

    assert str(raised.value) == (
        f"trainjobs:watchTimeout: {text!r} is not a positive duration; use seconds (3600) or a "
        "duration such as 24h, 90m, 30s or 1h30m, e.g. `pulumi config set k 24h`"
    )


@pytest.mark.parametrize(
    ("seconds", "text"), [(86400, "24h"), (5400, "1h30m"), (61, "1m1s"), (0.3, "0.3s"), (0, "0s")]
)
def test_format_duration(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_kubeconfig_content_is_used(kube: FakeKube, tmp_path: Path) -> None:
    content = kube.write_kubeconfig(tmp_path / "config").read_text()

    with load_api_client(content) as client:
        assert client.configuration.host == kube.url


def test_kubeconfig_path_is_used(kube: FakeKube, tmp_path: Path) -> None:
    path = kube.write_kubeconfig(tmp_path / "config")

    with load_api_client(str(path)) as client:
        assert client.configuration.host == kube.url


def test_kubeconfig_env_is_used(
    kube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KUBECONFIG", str(kube.write_kubeconfig(tmp_path / "config")))

    with load_api_client() as client:
        assert client.configuration.host == kube.url


def test_no_credentials_anywhere_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))

    with pytest.raises(UserError) as raised:
        load_api_client()

    assert str(raised.value) == (
        "no Kubernetes credentials found: set KUBECONFIG, create ~/.kube/config, set `pulumi "
        "config set --secret kubernetes:kubeconfig ...`, or run inside a cluster"
    )


def test_missing_kubeconfig_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError) as raised:
        load_api_client(str(tmp_path / "nope"))

    assert str(raised.value) == f"kubeconfig file '{tmp_path / 'nope'}' does not exist"


# --- the command line ------------------------------------------------------------------------


@pytest.fixture
def kubeconfig_env(kube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> FakeKube:
    monkeypatch.setenv("KUBECONFIG", str(kube.write_kubeconfig(tmp_path / "config")))
    return kube


def test_cli_watch_exits_0_when_the_job_succeeds(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = kubeconfig_env
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.complete_job(JOB)

    code = cli_main(["watch", JOB, "--namespace", NS, "--worker", f"statefulset/{STS}"])

    out = capsys.readouterr().out.splitlines()
    assert code == 0
    assert out[0].startswith("job default/train-master Succeeded (CompletionsReached: ")
    assert out[1] == f"workers stopped: StatefulSet/{STS}"
    assert kube.replicas(STS) == 0


def test_cli_watch_exits_1_with_the_diagnosis_when_the_job_fails(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = kubeconfig_env
    kube.add_job(JOB)
    kube.add_pod(
        "train-master-abcde", job_name=JOB, containers=[terminated("chainer", 137, "OOMKilled")]
    )
    kube.set_log("train-master-abcde", "chainer", "Killed\n")
    kube.fail_job(JOB)

    code = cli_main(["watch", JOB])

    progress, error, *report = capsys.readouterr().err.splitlines()
    assert code == 1
    assert (
        progress
        == "job default/train-master: Failed: 0 active (0 ready), 0 succeeded, 1 failed, 0s elapsed"
    )
    assert error.startswith("error: job default/train-master Failed (BackoffLimitExceeded: ")
    assert report == [
        "no workers to stop",
        "failed pods:",
        "  train-master-abcde (Failed): container chainer exited with code 137 (OOMKilled)",
        "last 1 log line(s) of train-master-abcde/chainer:",
        "  | Killed",
    ]


def test_cli_watch_exits_1_on_timeout(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig_env.add_job(JOB)
    kubeconfig_env.start_job(JOB)

    code = cli_main(["watch", JOB, "-n", NS, "--timeout", "0.3s"])

    assert code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: job default/train-master still running after 0.3s (Running: 1 active (1 ready), "
        "0 succeeded, 0 failed); workers left running; run `trainjobs watch train-master "
        "--namespace default` again to keep watching"
    )


def test_cli_watch_json_prints_the_outcome(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig_env.add_job(JOB)
    kubeconfig_env.fail_job(JOB, reason="DeadlineExceeded", message="deadline", failed=2)

    code = cli_main(["watch", JOB, "--json"])

    result = json.loads(capsys.readouterr().out)
    assert code == 1
    assert {k: result[k] for k in ("job", "phase", "reason", "failed", "timed_out")} == {
        "job": "default/train-master",
        "phase": "Failed",
        "reason": "DeadlineExceeded",
        "failed": 2,
        "timed_out": False,
    }


def test_cli_watch_json_on_timeout_is_marked_timed_out(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig_env.add_job(JOB)
    kubeconfig_env.start_job(JOB)

    code = cli_main(["watch", JOB, "--json", "--timeout", "0.2"])

    result = json.loads(capsys.readouterr().out)
    assert (code, result["phase"], result["timed_out"]) == (1, "Running", True)


def test_cli_watch_bad_timeout_is_a_user_error(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["watch", JOB, "--timeout", "soon"])

    assert code == 2
    assert capsys.readouterr().err == (
        "error: --timeout: 'soon' is not a positive duration; use seconds (3600) or a duration "
        "such as 24h, 90m, 30s or 1h30m, e.g. `trainjobs watch train-master --timeout 24h`\n"
    )


def test_cli_watch_bad_worker_is_a_user_error(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    code = cli_main(["watch", JOB, "--worker", "deployment/x"])

    assert code == 2
    assert capsys.readouterr().err == (
        "error: --worker 'deployment/x': expected statefulset/NAME or job/NAME\n"
    )


# --- the watcher owns the workers' size ---------------------------------------------------------


def test_a_new_run_restores_workers_a_previous_run_scaled_to_zero(kube: FakeKube, api: Any) -> None:
    kube.add_job(JOB)
    kube.start_job(JOB)
    kube.add_statefulset(STS, replicas=0)  # stopped by the watcher of an earlier run
    watch = Watch(kube, api, workers=(WorkerRef("StatefulSet", STS, replicas=3),))

    assert kube.replicas(STS) == 3
    kube.complete_job(JOB, succeeded=1)
    outcome = watch.outcome()

    assert kube.replicas(STS) == 0
    assert outcome.workers_scaled_down is True
    assert watch.reported[0] == f"StatefulSet/{STS}: scaled to 3"


def test_workers_of_a_finished_run_are_not_revived(kube: FakeKube, api: Any) -> None:
    kube.add_job(JOB)
    kube.start_job(JOB)
    kube.complete_job(JOB, succeeded=1)
    kube.add_statefulset(STS, replicas=0)

    outcome = run_watch(api, NS, JOB, (WorkerRef("StatefulSet", STS, replicas=3),), retry=FAST)

    assert (outcome.succeeded, kube.replicas(STS)) == (True, 0)


def test_worker_size_round_trips_through_provider_inputs() -> None:
    worker = WorkerRef("StatefulSet", STS, replicas=2)
    assert worker.to_dict() == {"kind": "StatefulSet", "name": STS, "replicas": 2}
    assert WorkerRef.from_dict({"kind": "StatefulSet", "name": STS, "replicas": 2.0}) == worker
    assert WorkerRef.from_dict({"kind": "Job", "name": "w"}) == WorkerRef("Job", "w")


# --- TFJob / PyTorchJob exit-code rules, as the Job controller applies our podFailurePolicy ----


def test_exit_code_1_fails_the_job_at_once_and_the_watcher_says_why(kube: FakeKube, api: Any):
    kube.add_job(JOB, backoff_limit=6)
    kube.start_job(JOB)
    kube.add_statefulset(STS, replicas=1)
    kube.add_pod("train-master-0-abcde", job_name=JOB, containers=[terminated("tensorflow", 1)])
    watch = Watch(kube, api)
    # The controller matched the FailJob rule on the first failure: no retry.
    kube.fail_job(
        JOB,
        reason="PodFailurePolicy",
        message="Container tensorflow for pod default/train-master-0-abcde failed with exit "
        "code 1 matching FailJob rule at index 0",
        failed=1,
    )
    outcome = watch.outcome()
    assert (outcome.status.phase, outcome.status.reason, outcome.status.failed) == (
        "Failed",
        "PodFailurePolicy",
        1,
    )
    assert outcome.diagnosis is not None
    pods = outcome.diagnosis.to_dict()["failed_pods"]
    assert [(c["name"], c["exit_code"]) for p in pods for c in p["containers"]] == [
        ("tensorflow", 1)
    ]


def test_exit_code_137_is_retried_and_the_job_can_still_succeed(kube: FakeKube, api: Any):
    kube.add_job(JOB, backoff_limit=6)
    kube.start_job(JOB)
    kube.add_statefulset(STS, replicas=1)
    watch = Watch(kube, api)
    # 137 matches no FailJob rule: it counts against backoffLimit and a new pod starts.
    kube.set_job_status(JOB, failed=1, active=1)
    watch.wait_for_message(lambda line: "1 failed" in line)
    kube.complete_job(JOB, succeeded=1)
    outcome = watch.outcome()
    assert (outcome.status.phase, outcome.status.succeeded, outcome.status.failed) == (
        "Succeeded",
        1,
        1,
    )


# --- TFJob / PyTorchJob: a failed worker Job fails the whole job (Kubeflow semantics) ---------

TF_JOB_LABEL = "training.kubeflow.org/job-name"
CHIEF, TF_WORKER, PS = "tf-chief", "tf-worker", "tf-ps"
TF_LABELS = {TF_JOB_LABEL: "tf"}
SELECTOR = f"{TF_JOB_LABEL}=tf"
TF_WORKERS = (WorkerRef("Job", TF_WORKER, replicas=2), WorkerRef("StatefulSet", PS, replicas=1))
WORKER_POD = "tf-worker-1-abcde"
POLICY_MESSAGE = (
    f"Container tensorflow for pod default/{WORKER_POD} failed with exit code 1 matching "
    "FailJob rule at index 0"
)
WORKER_FAILED_MESSAGE = f"worker Job default/tf-worker failed (PodFailurePolicy: {POLICY_MESSAGE})"
JOBS_PATH = f"/apis/batch/v1/namespaces/{NS}/jobs"


@pytest.fixture
def tf_job(kube: FakeKube) -> FakeKube:
    """A running TFJob as trainjobs deploys it: the chief and the workers as Indexed Jobs, a
    parameter server StatefulSet, every Job labelled with the job's name."""
    kube.add_job(CHIEF, labels=TF_LABELS, backoff_limit=6)
    kube.start_job(CHIEF)
    kube.add_job(
        TF_WORKER, parallelism=2, completion_mode="Indexed", labels=TF_LABELS, backoff_limit=6
    )
    kube.start_job(TF_WORKER, active=2)
    kube.add_statefulset(PS, replicas=1)
    return kube


def tf_watch(kube: FakeKube, api: Any, **kwargs: Any) -> Watch:
    return Watch(kube, api, job_name=CHIEF, workers=TF_WORKERS, selector=SELECTOR, **kwargs)


def tf_run_watch(api: Any) -> Outcome:
    return run_watch(api, NS, CHIEF, TF_WORKERS, selector=SELECTOR, timeout_seconds=10, retry=FAST)


def fail_worker_by_policy(kube: FakeKube) -> None:
    """Worker 1 exited with code 1: the Job controller applied the FailJob rule at once."""
    kube.fail_job(TF_WORKER, reason="PodFailurePolicy", message=POLICY_MESSAGE, failed=1)


def add_failed_worker_pod(kube: FakeKube) -> None:
    kube.add_pod(WORKER_POD, job_name=TF_WORKER, containers=[terminated("tensorflow", 1)])
    kube.set_log(WORKER_POD, "tensorflow", "step 40\nRuntimeError: NaN loss\n")


def suspended(kube: FakeKube, job: str) -> bool:
    return bool(kube.get("jobs", job)["spec"]["suspend"])


def test_a_worker_job_failed_by_its_pod_failure_policy_fails_the_whole_job_at_once(
    tf_job: FakeKube, api: Any
) -> None:
    watch = tf_watch(tf_job, api)
    fail_worker_by_policy(tf_job)

    status = watch.outcome().status

    assert (status.phase, status.reason, status.message, status.failed_worker) == (
        "Failed",
        WORKER_FAILED,
        WORKER_FAILED_MESSAGE,
        TF_WORKER,
    )
    assert status.uid == tf_job.get("jobs", CHIEF)["metadata"]["uid"]


def test_a_failed_worker_job_stops_every_workload_the_chief_included(
    tf_job: FakeKube, api: Any
) -> None:
    watch = tf_watch(tf_job, api)
    fail_worker_by_policy(tf_job)

    outcome = watch.outcome()

    assert (suspended(tf_job, TF_WORKER), tf_job.replicas(PS), suspended(tf_job, CHIEF)) == (
        True,
        0,
        True,
    )
    assert [r.to_dict() for r in outcome.workers] == [
        {
            "kind": "Job",
            "name": TF_WORKER,
            "replicas": 2,
            "scaled_down": True,
            "detail": "suspended",
        },
        {
            "kind": "StatefulSet",
            "name": PS,
            "replicas": 1,
            "scaled_down": True,
            "detail": "scaled to 0",
        },
        {"kind": "Job", "name": CHIEF, "scaled_down": True, "detail": "suspended"},
    ]
    assert outcome.workers_scaled_down is True


def test_a_failed_worker_job_is_diagnosed_from_its_own_pods_not_the_chiefs(
    tf_job: FakeKube, api: Any
) -> None:
    tf_job.add_pod(
        "tf-chief-0-fghij", job_name=CHIEF, phase="Running", containers=[running("tensorflow")]
    )
    tf_job.set_log("tf-chief-0-fghij", "tensorflow", "waiting for tf-worker-1\n")
    add_failed_worker_pod(tf_job)
    watch = tf_watch(tf_job, api)
    fail_worker_by_policy(tf_job)

    diagnosis = watch.outcome().diagnosis

    assert diagnosis is not None
    assert [
        (p["pod"], c["name"], c["exit_code"])
        for p in diagnosis.to_dict()["failed_pods"]
        for c in p["containers"]
    ] == [(WORKER_POD, "tensorflow", 1)]
    assert (diagnosis.log_pod, diagnosis.log_container, diagnosis.log_tail) == (
        WORKER_POD,
        "tensorflow",
        ("step 40", "RuntimeError: NaN loss"),
    )


def test_a_failed_worker_job_is_explained_in_the_report(tf_job: FakeKube, api: Any) -> None:
    add_failed_worker_pod(tf_job)
    watch = tf_watch(tf_job, api)
    fail_worker_by_policy(tf_job)

    lines = watch.outcome().describe().splitlines()

    assert lines[0].startswith(
        f"job default/tf-chief Failed (WorkerFailed: {WORKER_FAILED_MESSAGE})"
    )
    assert lines[1:] == [
        f"workers stopped: Job/{TF_WORKER}, StatefulSet/{PS}, Job/{CHIEF}",
        "failed pods:",
        f"  {WORKER_POD} (Failed): container tensorflow exited with code 1 (Error)",
        f"last 2 log line(s) of {WORKER_POD}/tensorflow:",
        "  | step 40",
        "  | RuntimeError: NaN loss",
    ]


def test_a_worker_job_that_exceeds_its_backoff_limit_fails_the_whole_job(
    tf_job: FakeKube, api: Any
) -> None:
    watch = tf_watch(tf_job, api)
    tf_job.fail_job(TF_WORKER, failed=7)

    status = watch.outcome().status

    assert (status.reason, status.message) == (
        WORKER_FAILED,
        "worker Job default/tf-worker failed (BackoffLimitExceeded: Job has reached the "
        "specified backoff limit)",
    )


def test_a_worker_job_that_succeeds_does_not_end_the_job(tf_job: FakeKube, api: Any) -> None:
    watch = tf_watch(tf_job, api)
    tf_job.complete_job(TF_WORKER, succeeded=2)
    watch.wait_for_message(lambda m: "succeeded; waiting" in m)
    restored = [(p.name, p.body) for p in tf_job.patches]
    tf_job.complete_job(CHIEF)

    outcome = watch.outcome()

    assert restored == [  # the start of a run restores sizes; nothing was stopped yet
        (TF_WORKER, {"spec": {"suspend": False}}),
        (PS, {"spec": {"replicas": 1}}),
    ]
    assert (outcome.status.phase, outcome.status.reason, outcome.diagnosis) == (
        "Succeeded",
        "CompletionsReached",
        None,
    )
    assert (
        "job default/tf-chief: Job default/tf-worker succeeded; waiting for the Jobs that "
        "decide the job"
    ) in watch.reported
    assert [r.worker.name for r in outcome.workers] == [TF_WORKER, PS]
    assert suspended(tf_job, CHIEF) is False


def test_a_worker_job_that_failed_before_the_watch_ends_it_at_once_and_is_not_revived(
    tf_job: FakeKube, api: Any
) -> None:
    fail_worker_by_policy(tf_job)

    outcome = tf_run_watch(api)

    assert outcome.status.reason == WORKER_FAILED
    assert tf_job.count_requests("GET", JOBS_PATH, watch=True) == 0
    assert [(p.name, p.body) for p in tf_job.patches] == [
        (TF_WORKER, {"spec": {"suspend": True}}),
        (PS, {"spec": {"replicas": 0}}),
        (CHIEF, {"spec": {"suspend": True}}),
    ]


def test_a_worker_failure_while_the_api_server_is_down_is_seen_by_the_relist(
    tf_job: FakeKube, api: Any
) -> None:
    watch = tf_watch(tf_job, api)
    opened = tf_job.watches_opened
    tf_job.stop()
    watch.wait_for_message(lambda m: "Connection refused" in m)
    fail_worker_by_policy(tf_job)
    tf_job.start()

    outcome = watch.outcome()

    assert (outcome.status.reason, outcome.status.failed_worker) == (WORKER_FAILED, TF_WORKER)
    assert tf_job.watches_opened == opened  # the re-list saw it; no new watch was needed
    assert (tf_job.replicas(PS), suspended(tf_job, CHIEF)) == (0, True)


def test_a_worker_failure_after_a_dropped_watch_is_seen(tf_job: FakeKube, api: Any) -> None:
    watch = tf_watch(tf_job, api)
    tf_job.drop_watches()
    fail_worker_by_policy(tf_job)

    assert watch.outcome().status.reason == WORKER_FAILED
    # One list to restore the workers, one to start watching, one after the drop.
    assert tf_job.count_requests("GET", JOBS_PATH, watch=False) == 3


def test_a_worker_failure_after_a_410_is_seen(tf_job: FakeKube, api: Any) -> None:
    watch = tf_watch(tf_job, api)
    opened = tf_job.watches_opened
    tf_job.expire_watches()
    tf_job.wait_for_watches(opened + 1)
    fail_worker_by_policy(tf_job)

    assert watch.outcome().status.reason == WORKER_FAILED
    assert "job default/tf-chief: watch expired (410 Gone); re-listing" in watch.reported


def test_the_chiefs_own_failure_is_reported_as_before_and_the_chief_is_not_patched(
    tf_job: FakeKube, api: Any
) -> None:
    tf_job.add_pod("tf-chief-0-fghij", job_name=CHIEF, containers=[terminated("tensorflow", 2)])
    watch = tf_watch(tf_job, api)
    tf_job.fail_job(CHIEF, reason="PodFailurePolicy", message="exit code 2")

    outcome = watch.outcome()

    assert (outcome.status.reason, outcome.status.failed_worker) == ("PodFailurePolicy", None)
    assert outcome.diagnosis is not None
    assert [p.pod for p in outcome.diagnosis.failed_pods] == ["tf-chief-0-fghij"]
    assert [r.worker.name for r in outcome.workers] == [TF_WORKER, PS]
    assert suspended(tf_job, CHIEF) is False


def test_a_chief_that_succeeded_decides_the_job_even_if_a_worker_failed_later(
    tf_job: FakeKube, api: Any
) -> None:
    tf_job.complete_job(CHIEF)
    fail_worker_by_policy(tf_job)

    outcome = tf_run_watch(api)

    assert (outcome.status.phase, outcome.status.failed_worker) == ("Succeeded", None)


def test_a_failed_job_with_the_label_that_is_not_a_worker_is_ignored(
    tf_job: FakeKube, api: Any
) -> None:
    tf_job.add_job("tf-debug", labels=TF_LABELS)
    tf_job.fail_job("tf-debug")
    watch = tf_watch(tf_job, api)  # the list showed it failed, and the watch went on
    tf_job.complete_job(CHIEF)

    assert watch.outcome().status.phase == "Succeeded"


def test_a_chief_the_selector_does_not_match_is_a_user_error(kube: FakeKube, api: Any) -> None:
    kube.add_job(CHIEF)  # no labels
    kube.start_job(CHIEF)
    kube.add_job(TF_WORKER, labels=TF_LABELS)

    with pytest.raises(UserError) as raised:
        tf_run_watch(api)

    assert str(raised.value) == (
        "Job default/tf-chief does not match the label selector "
        "'training.kubeflow.org/job-name=tf', which must match it and the job's other Jobs; check "
        "the selector (e.g. training.kubeflow.org/job-name=JOB) and the Job's labels"
    )


def test_a_missing_chief_is_still_reported_as_deleted_when_watching_by_labels(
    kube: FakeKube, api: Any
) -> None:
    kube.add_job(TF_WORKER, labels=TF_LABELS)

    outcome = tf_run_watch(api)

    assert (outcome.status.phase, outcome.status.message) == (
        "Deleted",
        "Job default/tf-chief no longer exists; it was deleted before it finished",
    )


def test_a_chainer_shaped_watch_ignores_the_selector_and_watches_the_one_job(
    running_job: FakeKube, api: Any
) -> None:
    watch = Watch(running_job, api, selector="training.kubeflow.org/job-name=train")
    running_job.complete_job(JOB)

    assert watch.outcome().status.phase == "Succeeded"
    jobs = [r.query for r in running_job.requests if r.path == JOBS_PATH]
    assert {(q.get("fieldSelector"), q.get("labelSelector")) for q in jobs} == {
        ("metadata.name=train-master", None)
    }


def test_a_watch_with_job_workers_lists_and_watches_by_the_selector(
    tf_job: FakeKube, api: Any
) -> None:
    watch = tf_watch(tf_job, api)
    tf_job.complete_job(CHIEF)

    watch.outcome()
    jobs = [r.query for r in tf_job.requests if r.path == JOBS_PATH]
    assert {(q.get("fieldSelector"), q.get("labelSelector"), q.get("watch")) for q in jobs} == {
        (None, SELECTOR, None),
        (None, SELECTOR, "True"),
    }


def test_cli_watch_with_a_selector_fails_when_a_worker_job_fails(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = kubeconfig_env
    kube.add_job(CHIEF, labels=TF_LABELS)
    kube.start_job(CHIEF)
    kube.add_job(TF_WORKER, labels=TF_LABELS)
    fail_worker_by_policy(kube)

    code = cli_main(
        ["watch", CHIEF, "--worker", f"job/{TF_WORKER}", "--selector", SELECTOR, "--json"]
    )

    result = json.loads(capsys.readouterr().out)
    assert code == 1
    assert (result["reason"], result["message"]) == (WORKER_FAILED, WORKER_FAILED_MESSAGE)
    assert [w["name"] for w in result["workers"]] == [TF_WORKER, CHIEF]
    assert suspended(kube, CHIEF) is True


def test_cli_watch_with_job_workers_and_no_selector_says_what_it_misses(
    kubeconfig_env: FakeKube, capsys: pytest.CaptureFixture[str]
) -> None:
    kube = kubeconfig_env
    kube.add_job(CHIEF)
    kube.complete_job(CHIEF)

    cli_main(["watch", CHIEF, "--worker", f"job/{TF_WORKER}"])

    assert capsys.readouterr().err.splitlines()[0] == (
        "note: without --selector, a failure of Job/tf-worker is only seen when tf-chief "
        "ends; add e.g. --selector training.kubeflow.org/job-name=JOB"
    )


# --- the fake's label selectors ---------------------------------------------------------------


def test_the_fake_lists_only_the_jobs_a_label_selector_matches(kube: FakeKube, api: Any) -> None:
    from kubernetes import client

    kube.add_job("a-chief", labels={TF_JOB_LABEL: "a", "role": "chief"})
    kube.add_job("a-worker", labels={TF_JOB_LABEL: "a", "role": "worker"})
    kube.add_job("b-chief", labels={TF_JOB_LABEL: "b", "role": "chief"})
    kube.add_job("unlabelled")
    batch = client.BatchV1Api(api)

    def names(selector: str) -> list[str]:
        return [
            j.metadata.name for j in batch.list_namespaced_job(NS, label_selector=selector).items
        ]

    assert names(f"{TF_JOB_LABEL}=a") == ["a-chief", "a-worker"]
    assert names(f"{TF_JOB_LABEL}==a,role=worker") == ["a-worker"]
    assert names("role!=chief") == ["a-worker", "unlabelled"]


def test_the_fake_watches_only_the_jobs_a_label_selector_matches(kube: FakeKube, api: Any):
    from kubernetes import client, watch

    kube.add_job("a-chief", labels={TF_JOB_LABEL: "a"})
    kube.add_job("b-chief", labels={TF_JOB_LABEL: "b"})
    batch = client.BatchV1Api(api)
    version = batch.list_namespaced_job(NS).metadata.resource_version
    kube.fail_job("b-chief")
    kube.fail_job("a-chief")

    stream = watch.Watch().stream(
        batch.list_namespaced_job,
        NS,
        label_selector=f"{TF_JOB_LABEL}=a",
        resource_version=version,
        timeout_seconds=1,
    )

    assert [(e["type"], e["object"].metadata.name) for e in stream] == [("MODIFIED", "a-chief")]


def test_the_fake_refuses_a_selector_it_does_not_understand(kube: FakeKube, api: Any) -> None:
    from kubernetes import client

    with pytest.raises(client.ApiException) as raised:
        client.BatchV1Api(api).list_namespaced_job(NS, label_selector="role in (a,b)")

    assert raised.value.status == 400


def test_a_kubeconfig_given_as_content_is_read_within_the_spec_bounds():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 9)]

    with pytest.raises(UserError) as raised:
        load_api_client("\n".join(lines) + "\n")

    assert str(raised.value) == (
        "the given kubeconfig is not a valid kubeconfig: line 5: this value holds more than "
        "100000 values once its aliases are expanded; a job spec may hold at most that many"
    )
