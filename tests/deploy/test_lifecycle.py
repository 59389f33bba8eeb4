"""The second `pulumi up`: each kind's lifecycle played with the engine's steps against the
API fake (Job controller, foreground deletion, immutable fields, TTL): create and run, a
changed image (replacement) and run again, a failed worker fixed and run again with and
without `--refresh`, a TTL that removes a finished job, and many jobs at once."""

from __future__ import annotations

import concurrent.futures
import copy
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.engine import Engine, EngineError
from tests.kubefake import FakeKube
from trainjobs.deploy.completion import JobFailedError
from trainjobs.review.preview import PreviewResult, run_preview

NS = "default"
LIFECYCLE_SECONDS = 20


class Stack:
    """A project with the real program, stack `test`, the given job files."""

    def __init__(self, root: Path, jobs: dict[str, dict[str, Any]], **config: str) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        shutil.copy(REPO / "__main__.py", root / "__main__.py")
        shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
        stack = {"trainjobs:jobs": "jobs/*.yaml", **config}
        (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": stack}))
        self.write(jobs)

    def write(self, jobs: dict[str, dict[str, Any]]) -> PreviewResult:
        shutil.rmtree(self.root / "jobs", ignore_errors=True)
        (self.root / "jobs").mkdir()
        for name, document in jobs.items():
            (self.root / "jobs" / f"{name}.yaml").write_text(yaml.safe_dump(document))
        return run_preview("test", self.root)


def spec(name: str) -> dict[str, Any]:
    return yaml.safe_load((REPO / "jobs" / f"{name}.yaml").read_text())


def with_image(document: dict[str, Any], image: str, replica: str | None = None) -> dict:
    """The document with ``image`` on every container (or one replica type's)."""
    changed = copy.deepcopy(document)
    for key, replica_spec in _replica_specs(changed).items():
        if replica is None or key == replica:
            for container in replica_spec["template"]["spec"]["containers"]:
                container["image"] = image
    return changed


def _replica_specs(document: dict[str, Any]) -> dict[str, Any]:
    spec_ = document["spec"]
    for key in ("tfReplicaSpecs", "pytorchReplicaSpecs"):
        if key in spec_:
            return spec_[key]
    return {"master": spec_["master"], "worker": spec_["worker"]}


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.2) as fake:
        yield fake


@pytest.fixture
def engine(kube: FakeKube, tmp_path: Path) -> Engine:
    return Engine(kube, kube.write_kubeconfig(tmp_path / "kubeconfig").read_text())


def in_background(call: Callable[[], Any]) -> Callable[[], Any]:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return lambda: future.result(timeout=LIFECYCLE_SECONDS)


def jobs_of(program: PreviewResult) -> list[str]:
    return [r.name for r in program.kubernetes_objects() if r.inputs["kind"] == "Job"]


def running(kube: FakeKube, job: str) -> bool:
    """Resumed, with a pod that is not being deleted."""
    live = kube.get("jobs", job)
    pods = [p for p in kube.pods_of(job) if not p["metadata"].get("deletionTimestamp")]
    return not live["spec"]["suspend"] and any(p["status"]["phase"] == "Running" for p in pods)


def wait_running(kube: FakeKube, jobs: list[str]) -> None:
    deadline = time.monotonic() + LIFECYCLE_SECONDS
    while not all(running(kube, job) for job in jobs):
        assert time.monotonic() < deadline, {job: running(kube, job) for job in jobs}
        time.sleep(0.02)


def stopped(kube: FakeKube, job: str) -> bool:
    """Suspended, its running pods deleted (or still terminating)."""
    return kube.get("jobs", job)["spec"]["suspend"] is True and not [
        p
        for p in kube.pods_of(job)
        if p["status"]["phase"] == "Running" and not p["metadata"].get("deletionTimestamp")
    ]


# --- create -> run -> image change (replace) -> run again, per kind -----------------------------

KINDS = {
    # stack file, Jobs that decide the job, what is left running after success
    "chainermn-mnist": (["chainermn-mnist-master"], "StatefulSet"),
    "tf-mnist": (["tf-mnist-chief-0"], "suspended"),
    "pytorch-mnist": (["pytorch-mnist-master-0"], "left running"),
}


@pytest.mark.parametrize("refresh", [False, True], ids=["up", "refresh-then-up"])
@pytest.mark.parametrize("name", sorted(KINDS))
def test_a_changed_image_replaces_the_jobs_and_runs_the_job_again(
    name: str, refresh: bool, kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    deciding, leftover = KINDS[name]
    stack = Stack(tmp_path / "project", {name: spec(name)})
    program = run_preview("test", stack.root)
    jobs = jobs_of(program)

    engine.up(program)
    assert [kube.get("jobs", job)["spec"]["suspend"] for job in jobs] == [True] * len(jobs)
    assert [kube.pods_of(job) for job in jobs] == [[]] * len(jobs)  # the watcher starts runs
    first = in_background(lambda: engine.watch(program))
    wait_running(kube, jobs)
    for job in deciding:
        kube.complete_job(job)
    outcome = first()[f"{NS}/{name}"]
    assert (outcome["phase"], outcome["workers_scaled_down"]) == ("Succeeded", True)
    others = [job for job in jobs if job not in deciding]
    if leftover == "suspended":
        assert [stopped(kube, job) for job in others] == [True] * len(others)
    elif leftover == "left running":  # cleanPodPolicy None (v1's default), as in Kubeflow
        assert [running(kube, job) for job in others] == [True] * len(others)
    else:
        assert kube.replicas(f"{name}-worker") == 0

    old_uids = {job: kube.get("jobs", job)["metadata"]["uid"] for job in jobs}
    if refresh:
        assert engine.refresh() == []
    changed = stack.write({name: with_image(spec(name), "registry.example/new:2")})
    engine.up(changed)
    assert [step for step in engine.steps if step[1] in jobs][-2 * len(jobs) :] == [
        step for job in jobs for step in (("delete", job), ("create", job))
    ]
    assert [kube.get("jobs", job)["metadata"]["uid"] != old_uids[job] for job in jobs] == [
        True
    ] * len(jobs)
    second = in_background(lambda: engine.watch(changed))
    wait_running(kube, jobs)
    if leftover == "StatefulSet":
        wait_sizes(kube, {f"{name}-worker": 2})  # restored for the new run
    for job in deciding:
        kube.complete_job(job)
    assert second()[f"{NS}/{name}"]["phase"] == "Succeeded"
    assert engine.steps[-1] == ("update", "completion")


def test_skip_await_would_race_the_replaced_job_with_its_predecessor(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    """Why the program asks for waitFor: with skipAwait, pulumi-kubernetes does not await a
    Job's deletion, and the foreground deletion still holds the name when the new Job is
    created (creates are not retried on AlreadyExists)."""
    stack = Stack(tmp_path / "project", {"chainer": spec("chainermn-mnist")})
    program = run_preview("test", stack.root)
    engine.up(program)
    run = in_background(lambda: engine.watch(program))
    wait_running(kube, ["chainermn-mnist-master"])
    kube.complete_job("chainermn-mnist-master")
    run()
    # The program as it was: skipAwait on the Job (the old inputs decide the delete's await).
    master = engine.entry("kubernetes:batch/v1:Job", "chainermn-mnist-master")
    master.inputs["metadata"]["annotations"] = {"pulumi.com/skipAwait": "true"}
    # The finished Job's pod keeps it in the foreground deletion until the pod is gone.
    assert [pod["status"]["phase"] for pod in kube.pods_of("chainermn-mnist-master")] == [
        "Succeeded"
    ]

    changed = stack.write({"chainer": with_image(spec("chainermn-mnist"), "registry.example/x:2")})
    with pytest.raises(EngineError) as raised:
        engine.up(changed)

    assert str(raised.value) == (
        'creating chainermn-mnist-master: object is being deleted: jobs.batch "chainermn-mnist-'
        'master" already exists'
    )


# --- a failed worker, fixed, runs again: every workload back to its declared size -------------


def tf_job_with_a_stateful_ps() -> dict[str, Any]:
    """tf-mnist with its parameter server on restartPolicy Always (a StatefulSet)."""
    document = spec("tf-mnist")
    document["spec"]["tfReplicaSpecs"]["PS"]["restartPolicy"] = "Always"
    return document


FAILURES = {
    # the document, the Job that fails, the replica whose image fixes it, the failure
    # report's first words, StatefulSets and their declared size, whether the Jobs that
    # still ran are stopped (cleanPodPolicy Running; v1's default None leaves them)
    "chainermn-mnist": (
        lambda: spec("chainermn-mnist"),
        "chainermn-mnist-master",
        "master",
        "job default/chainermn-mnist Failed (BackoffLimitExceeded",
        {"chainermn-mnist-worker": 2},
        True,
    ),
    "tf-mnist": (
        tf_job_with_a_stateful_ps,
        "tf-mnist-worker-1",
        "Worker",
        "job default/tf-mnist Failed (WorkerFailed: worker Job default/tf-mnist-worker-1 failed",
        {"tf-mnist-ps-0": 1},
        True,
    ),
    "pytorch-mnist": (
        lambda: spec("pytorch-mnist"),
        "pytorch-mnist-worker-0",
        "Worker",
        "job default/pytorch-mnist Failed (WorkerFailed: worker Job "
        "default/pytorch-mnist-worker-0 failed",
        {},
        False,
    ),
}


def wait_sizes(kube: FakeKube, sizes: dict[str, int]) -> None:
    deadline = time.monotonic() + LIFECYCLE_SECONDS
    while {sts: kube.replicas(sts) for sts in sizes} != sizes:
        assert time.monotonic() < deadline, {sts: kube.replicas(sts) for sts in sizes}
        time.sleep(0.02)


@pytest.mark.parametrize("refresh", [False, True], ids=["up", "refresh-then-up"])
@pytest.mark.parametrize("name", sorted(FAILURES))
def test_a_failed_job_fixed_runs_again_with_every_workload_restored(
    name: str, refresh: bool, kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    document, failing, replica, report, statefulsets, stops = FAILURES[name]
    stack = Stack(tmp_path / "project", {name: document()})
    program = run_preview("test", stack.root)
    jobs = jobs_of(program)
    engine.up(program)
    first = in_background(lambda: engine.watch(program))
    wait_running(kube, jobs)
    kube.fail_job(
        failing, reason="PodFailurePolicy" if failing != jobs[-1] else "BackoffLimitExceeded"
    )

    with pytest.raises(JobFailedError) as raised:
        first()

    assert str(raised.value).startswith(report)
    # What still ran is stopped per the cleanPodPolicy: the chief or master that waited too.
    others = [job for job in jobs if job != failing]
    assert [stopped(kube, job) for job in others] == [stops] * len(others)
    assert {sts: kube.replicas(sts) for sts in statefulsets} == dict.fromkeys(statefulsets, 0)
    if refresh:
        assert engine.refresh() == []
        for job in jobs:  # pulumi-kubernetes reads the live suspension into the inputs
            live = kube.get("jobs", job)["spec"]["suspend"]
            assert engine.entry("kubernetes:batch/v1:Job", job).inputs["spec"]["suspend"] is live

    program = stack.write({name: with_image(document(), "registry.example/fixed:2", replica)})
    engine.up(program)
    second = in_background(lambda: engine.watch(program))
    wait_running(kube, jobs)  # every Job, those Pulumi did not touch too
    wait_sizes(kube, statefulsets)
    kube.complete_job(jobs[-1])
    assert second()[f"{NS}/{name}"]["phase"] == "Succeeded"


# --- a TTL that removes a finished job does not make it run again -------------------------------


def tf_job_with_a_ttl() -> dict[str, Any]:
    document = spec("tf-mnist")
    document["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 30
    return document


def watch_the_chief_complete(kube: FakeKube, engine: Engine, program: Any, jobs: list[str]) -> str:
    """Watch the TF example's run while its chief completes; the phase the watcher reports."""
    run = in_background(lambda: engine.watch(program))
    wait_running(kube, jobs)
    kube.complete_job("tf-mnist-chief-0")
    return run()[f"{NS}/tf-mnist"]["phase"]


@pytest.mark.parametrize("refresh", [False, True], ids=["up", "refresh-then-up"])
def test_a_job_removed_by_its_ttl_is_not_run_again(
    refresh: bool, kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    stack = Stack(tmp_path / "project", {"tf": tf_job_with_a_ttl()})
    program = run_preview("test", stack.root)
    jobs = jobs_of(program)
    engine.up(program)
    assert watch_the_chief_complete(kube, engine, program, jobs) == "Succeeded"
    # The watcher handed the TTL over once the run was recorded.
    assert {kube.get("jobs", job)["spec"].get("ttlSecondsAfterFinished") for job in jobs} == {30}
    assert kube.expire_ttl() == ["tf-mnist-chief-0"]  # the stopped ones never finished
    kube.wait_until(lambda: not kube.exists("jobs", "tf-mnist-chief-0"))
    pods_before = len([c for c in kube.creates if c[1] == "pods"])

    if refresh:
        assert engine.refresh() == ["tf-mnist-chief-0"]
    engine.up(program)
    outcome = engine.watch(program)[f"{NS}/tf-mnist"]

    assert len([c for c in kube.creates if c[1] == "pods"]) == pods_before  # nothing ran
    if refresh:
        # Pulumi created the chief again, suspended; the watcher found the run recorded.
        assert kube.get("jobs", "tf-mnist-chief-0")["spec"]["suspend"] is True
        assert (outcome["phase"], outcome["notes"][0].split(":")[0]) == (
            "Succeeded",
            "this run already ended (Succeeded), as recorded on Service/tf-mnist-chief-0",
        )
    else:
        # Without a refresh Pulumi still believes in the chief: nothing to do.
        assert not kube.exists("jobs", "tf-mnist-chief-0")
        assert engine.steps[-1] != ("update", "completion")


def test_a_job_removed_by_its_ttl_runs_again_when_its_spec_asks(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    stack = Stack(tmp_path / "project", {"tf": tf_job_with_a_ttl()})
    program = run_preview("test", stack.root)
    jobs = jobs_of(program)
    engine.up(program)
    watch_the_chief_complete(kube, engine, program, jobs)
    kube.expire_ttl()
    kube.wait_until(lambda: not kube.exists("jobs", "tf-mnist-chief-0"))
    engine.refresh()

    again = tf_job_with_a_ttl()
    for replica in again["spec"]["tfReplicaSpecs"].values():
        replica["template"].setdefault("metadata", {})["annotations"] = {"trainjobs.io/run": "2"}
    program = stack.write({"tf": again})
    engine.up(program)

    assert watch_the_chief_complete(kube, engine, program, jobs) == "Succeeded"


# --- many jobs at once ---------------------------------------------------------------------------


def test_ten_jobs_ending_at_different_times_are_each_stopped_within_a_second(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    jobs = {}
    for index in range(10):
        document = spec("chainermn-mnist")
        document["metadata"]["name"] = f"job-{index}"
        jobs[f"job-{index}"] = document
    stack = Stack(tmp_path / "project", jobs)
    program = run_preview("test", stack.root)
    engine.up(program)
    run = in_background(lambda: engine.watch(program))
    masters = [f"job-{index}-master" for index in range(10)]
    wait_running(kube, masters)
    ended: dict[str, float] = {}
    for index in (3, 7, 0, 9, 1, 5, 8, 2, 6, 4):
        time.sleep(0.05)
        ended[f"job-{index}-worker"] = time.perf_counter()
        kube.complete_job(f"job-{index}-master")

    outcomes = run()

    assert sorted(o["phase"] for o in outcomes.values()) == ["Succeeded"] * 10
    stopped_at = {
        patch.name: patch.at
        for patch in kube.patches
        if patch.subresource == "scale" and patch.body == {"spec": {"replicas": 0}}
    }
    delays = {name: stopped_at[name] - at for name, at in ended.items()}
    assert all(0 < delay < 1.0 for delay in delays.values()), delays
