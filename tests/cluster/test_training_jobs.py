"""Training jobs seen through as a whole against the API fake with its Job controller: the
cleanPodPolicy at the end, elastic PyTorchJobs, the recorded run and its TTL, and the
command line that finds jobs by name (`trainjobs watch JOB`, `trainjobs status`)."""

from __future__ import annotations

import concurrent.futures
import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.engine import Engine
from tests.kubefake import FakeKube
from trainjobs.cli import main as cli_main
from trainjobs.cluster.errors import RetryPolicy
from trainjobs.cluster.record import RECORD_ANNOTATION
from trainjobs.cluster.supervisor import WatchOptions, see_through
from trainjobs.cluster.target import WatchTarget
from trainjobs.deploy.watch_target import watch_target
from trainjobs.kinds.registry import parse_job
from trainjobs.review.preview import run_preview

NS = "default"
FAST = RetryPolicy(
    initial_backoff=0.01,
    max_backoff=0.05,
    request_timeout=5.0,
    scale_attempts=3,
    first_contact_seconds=0.5,
)


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        yield fake


@pytest.fixture
def api(kube: FakeKube) -> Iterator[Any]:
    client = kube.api_client()
    yield client
    client.close()


def deployed(kube: FakeKube, tmp_path: Path, document: dict[str, Any]) -> WatchTarget:
    """The job as the real program registers it, created by the engine's steps."""
    project = tmp_path / "project"
    (project / "jobs").mkdir(parents=True)
    shutil.copy(REPO / "__main__.py", project / "__main__.py")
    shutil.copy(REPO / "Pulumi.yaml", project / "Pulumi.yaml")
    (project / "jobs" / "job.yaml").write_text(yaml.safe_dump(document))
    stack = {"config": {"trainjobs:job": "jobs/job.yaml"}}
    (project / "Pulumi.test.yaml").write_text(yaml.safe_dump(stack))
    Engine(kube, "").up(run_preview("test", project))
    return watch_target(parse_job(document, "job.yaml"), gated=True)


def tf_job(clean_pod_policy: str, **run_policy: Any) -> dict[str, Any]:
    document = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())
    document["spec"]["runPolicy"] = {"cleanPodPolicy": clean_pod_policy, **run_policy}
    return document


def elastic_job(workers: int = 3, min_replicas: int = 2) -> dict[str, Any]:
    document = yaml.safe_load((REPO / "jobs" / "pytorch-elastic.yaml").read_text())
    document["spec"]["elasticPolicy"].update(minReplicas=min_replicas, maxReplicas=workers)
    document["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] = workers
    return document


def in_background(call: Callable[[], Any]) -> Callable[[], Any]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return lambda: future.result(timeout=20)


def watch(api: Any, target: WatchTarget, reported: list[str] | None = None) -> Callable[[], Any]:
    options = WatchOptions(
        timeout_seconds=20, retry=FAST, report=(reported.append if reported is not None else print)
    )
    return in_background(lambda: see_through(api, target, options=options))


def pods(kube: FakeKube, job: str) -> list[str]:
    """The Job's pods that are not being deleted, by phase."""
    return [
        pod["status"]["phase"]
        for pod in kube.pods_of(job)
        if not pod["metadata"].get("deletionTimestamp")
    ]


def wait_for(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while not check():
        assert time.monotonic() < deadline
        time.sleep(0.02)


TF_JOBS = ["tf-mnist-worker-0", "tf-mnist-worker-1", "tf-mnist-ps-0", "tf-mnist-chief-0"]


def start_and_finish_tf(kube: FakeKube, api: Any, target: WatchTarget) -> Any:
    outcome = watch(api, target)
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in TF_JOBS))
    kube.complete_job("tf-mnist-worker-0")
    kube.complete_job("tf-mnist-chief-0")
    return outcome()


# --- cleanPodPolicy, as training-operator's DeletePodsAndServices applies it ---------------------


def test_clean_pod_policy_none_leaves_running_pods_running(kube, api, tmp_path) -> None:
    outcome = start_and_finish_tf(kube, api, deployed(kube, tmp_path, tf_job("None")))

    assert {job: pods(kube, job) for job in TF_JOBS} == {
        "tf-mnist-worker-0": ["Succeeded"],
        "tf-mnist-worker-1": ["Running"],
        "tf-mnist-ps-0": ["Running"],
        "tf-mnist-chief-0": ["Succeeded"],
    }
    assert outcome.notes == (
        "cleanPodPolicy None: pods that still run are left running, as under Kubeflow (set it "
        "to Running to stop them when the job ends)",
    )


def test_clean_pod_policy_running_stops_running_pods_and_keeps_finished_ones(
    kube, api, tmp_path
) -> None:
    outcome = start_and_finish_tf(kube, api, deployed(kube, tmp_path, tf_job("Running")))

    wait_for(lambda: pods(kube, "tf-mnist-ps-0") == [])
    assert {job: pods(kube, job) for job in TF_JOBS} == {
        "tf-mnist-worker-0": ["Succeeded"],
        "tf-mnist-worker-1": [],
        "tf-mnist-ps-0": [],
        "tf-mnist-chief-0": ["Succeeded"],
    }
    assert [r.detail for r in outcome.workers] == ["suspended", "suspended"]


def test_clean_pod_policy_all_removes_every_pod(kube, api, tmp_path) -> None:
    start_and_finish_tf(kube, api, deployed(kube, tmp_path, tf_job("All")))

    wait_for(lambda: all(kube.pods_of(job) == [] for job in TF_JOBS))
    assert [kube.exists("jobs", job) for job in TF_JOBS] == [True] * 4  # the Jobs stay


# --- elastic PyTorchJob: torchrun's group ------------------------------------------------------

ELASTIC = ["pytorch-elastic-worker-0", "pytorch-elastic-worker-1", "pytorch-elastic-worker-2"]


def test_an_elastic_job_outlives_a_lost_node_and_ends_when_its_group_does(
    kube, api, tmp_path
) -> None:
    reported: list[str] = []
    outcome = watch(api, deployed(kube, tmp_path, elastic_job()), reported)
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in ELASTIC))
    kube.fail_job("pytorch-elastic-worker-1")  # its pod failed beyond backoffLimit
    wait_for(lambda: any("torchrun's group goes on" in line for line in reported))
    assert pods(kube, "pytorch-elastic-worker-0") == ["Running"]
    kube.complete_job("pytorch-elastic-worker-2")

    result = outcome()

    assert (result.status.phase, result.status.message) == (
        "Succeeded",
        "worker Job default/pytorch-elastic-worker-2 succeeded, which ends the elastic job: "
        "its torchrun group has ended",
    )
    assert (
        "job default/pytorch-elastic-worker-0: worker Job default/pytorch-elastic-worker-1 "
        "failed (BackoffLimitExceeded: Job has reached the specified backoff limit); 2 of 3 "
        "workers left (elasticPolicy.minReplicas 2): torchrun's group goes on"
    ) in reported


def test_an_elastic_job_fails_when_its_group_cannot_go_on(kube, api, tmp_path) -> None:
    outcome = watch(api, deployed(kube, tmp_path, elastic_job()))
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in ELASTIC))
    kube.fail_job("pytorch-elastic-worker-1")
    kube.fail_job("pytorch-elastic-worker-0")

    result = outcome()

    assert (result.status.phase, result.status.reason) == ("Failed", "WorkerFailed")
    assert result.status.message.endswith(
        "1 of 3 workers left, fewer than elasticPolicy.minReplicas 2: torchrun's group cannot go on"
    )
    # cleanPodPolicy None (v1's default): the last worker is left to itself, as in Kubeflow.
    assert pods(kube, "pytorch-elastic-worker-2") == ["Running"]


# --- the recorded run and the TTL ------------------------------------------------------------


def test_the_end_of_a_run_is_recorded_and_the_ttl_handed_to_its_jobs(kube, api, tmp_path):
    target = deployed(kube, tmp_path, tf_job("Running", ttlSecondsAfterFinished=600))

    start_and_finish_tf(kube, api, target)

    record = kube.get("services", "tf-mnist-chief-0")["metadata"]["annotations"]
    assert json.loads(record[RECORD_ANNOTATION])["run"] == target.run
    assert {kube.get("jobs", job)["spec"]["ttlSecondsAfterFinished"] for job in TF_JOBS} == {600}


def test_a_record_the_api_server_fails_once_is_written_on_the_retry(kube, api, tmp_path):
    # A PATCH can meet an API server blip (a 503, a connection dropped under it): the run's
    # end is written again, as reading it is (trainjobs.cluster.record.read_record).
    target = deployed(kube, tmp_path, tf_job("Running"))
    kube.fail_next(503, method="PATCH", path="/services/tf-mnist-chief-0")

    outcome = start_and_finish_tf(kube, api, target)

    record = kube.get("services", "tf-mnist-chief-0")["metadata"]["annotations"]
    assert json.loads(record[RECORD_ANNOTATION])["run"] == target.run
    assert (outcome.status.phase, outcome.notes) == ("Succeeded", ())


def test_a_ttl_the_api_server_fails_to_take_once_is_handed_over_on_the_retry(kube, api, tmp_path):
    target = deployed(kube, tmp_path, tf_job("None", ttlSecondsAfterFinished=600))
    outcome = watch(api, target)
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in TF_JOBS))
    # After the runs were started (resuming a Job is a PATCH too): the TTL's PATCH fails once.
    kube.fail_next(503, method="PATCH", path="/jobs/tf-mnist-ps-0")
    kube.complete_job("tf-mnist-worker-0")
    kube.complete_job("tf-mnist-chief-0")

    ended = outcome()

    assert {kube.get("jobs", job)["spec"]["ttlSecondsAfterFinished"] for job in TF_JOBS} == {600}
    assert ended.notes == (
        "cleanPodPolicy None: pods that still run are left running, as under Kubeflow (set it "
        "to Running to stop them when the job ends)",
    )


def test_a_job_suspended_by_its_spec_is_not_started(kube, api, tmp_path) -> None:
    target = deployed(kube, tmp_path, tf_job("Running", suspend=True))

    outcome = see_through(api, target, options=WatchOptions(timeout_seconds=5, retry=FAST))

    assert outcome.status.phase == "Suspended"
    assert [pods(kube, job) for job in TF_JOBS] == [[]] * 4


# --- the command line: jobs by name -----------------------------------------------------------


@pytest.fixture
def kubeconfig(kube: FakeKube, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = kube.write_kubeconfig(tmp_path / "kubeconfig")
    monkeypatch.setenv("KUBECONFIG", str(path))
    return path


def chainermn(name: str = "chainermn-mnist") -> dict[str, Any]:
    document = yaml.safe_load((REPO / "jobs" / "chainermn-mnist.yaml").read_text())
    document["metadata"]["name"] = name
    return document


def test_cli_watch_finds_a_job_by_its_name_alone(kube, kubeconfig, tmp_path, capsys) -> None:
    deployed(kube, tmp_path, chainermn())
    code = in_background(lambda: cli_main(["watch", "chainermn-mnist", "--namespace", "default"]))
    wait_for(lambda: pods(kube, "chainermn-mnist-master") == ["Running"])
    kube.complete_job("chainermn-mnist-master")

    assert code() == 0
    out, err = capsys.readouterr()
    assert out.splitlines()[:2] == [
        out.splitlines()[0],
        "workers stopped: StatefulSet/chainermn-mnist-worker",
    ]
    assert out.startswith("job default/chainermn-mnist Succeeded (CompletionsReached: ")
    assert err.splitlines()[0] == (
        "watching ChainerJob default/chainermn-mnist: 1 Job(s), 1 worker workload(s), "
        "cleanPodPolicy Running"
    )
    assert (
        "job default/chainermn-mnist-master: Succeeded: 0 active (0 ready), 1 succeeded, 0 failed"
        in err
    )
    assert kube.replicas("chainermn-mnist-worker") == 0


def test_cli_watch_of_an_unknown_name_names_the_jobs_there(kube, kubeconfig, tmp_path, capsys):
    deployed(kube, tmp_path, chainermn("alpha"))

    code = cli_main(["watch", "beta", "-n", "default"])

    assert code == 2
    assert capsys.readouterr().err == (
        "error: no training job 'beta' in namespace default (training jobs there: alpha); give "
        "a job's metadata.name, or a Job with --worker/--selector\n"
    )


def test_cli_status_of_an_unknown_job_is_an_error_naming_the_jobs(kube, kubeconfig, capsys):
    assert cli_main(["status", "nope"]) == 2
    assert capsys.readouterr().err == (
        "error: no training job 'nope' in namespace default (training jobs there: none); give a "
        "job's metadata.name, or a Job with --worker/--selector\n"
    )


def test_cli_watch_reports_an_unreachable_cluster_not_a_running_job(tmp_path, capsys) -> None:
    with FakeKube() as fake:
        path = fake.write_kubeconfig(tmp_path / "kubeconfig")
        url = fake.url
    # The server is gone: nothing listens on its port any more.
    code = cli_main(["watch", "train", "--kubeconfig", str(path), "--connect-timeout", "0.3s"])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: the Kubernetes API at {url} could not be reached for 0.")
    assert err.endswith(
        "the job's state is unknown: check the cluster address and the network, then watch again\n"
    )
    assert "Connection refused" in err
    assert len(err.splitlines()) == 1
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "clusters: [\n",
            "error: the given kubeconfig is not a valid kubeconfig (ParserError: while parsing "
            "a flow node); check it with `kubectl config view`\n",
        ),
        (
            "apiVersion: v1\nkind: Config\ncontexts: 7\ncurrent-context: x\n",
            "error: the given kubeconfig is not a valid kubeconfig (TypeError: 'int' object is "
            "not iterable); check it with `kubectl config view`\n",
        ),
        (
            "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\ncurrent-context: gone\n",
            "error: cannot load Kubernetes credentials: Invalid kube-config file. Expected object "
            "with name gone in {path}/contexts list\n",
        ),
    ],
    ids=["not yaml", "wrong types", "unknown context"],
)
def test_cli_watch_with_a_malformed_kubeconfig_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "kubeconfig"
    path.write_text(text)

    code = cli_main(["watch", "train", "--kubeconfig", str(path)])

    assert (code, capsys.readouterr().err) == (2, message.format(path=path))


def test_an_api_server_that_fails_at_the_start_is_retried(kube, api, tmp_path) -> None:
    target = deployed(kube, tmp_path, chainermn())
    kube.fail_next(503, method="GET", count=3)  # the first list and the record's read
    outcome = watch(api, target)
    wait_for(lambda: pods(kube, "chainermn-mnist-master") == ["Running"])
    kube.complete_job("chainermn-mnist-master")

    assert outcome().status.phase == "Succeeded"
