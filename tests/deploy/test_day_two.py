"""Day two on a real cluster, played with the engine's steps against the API fake and the
JobSet and Kueue controllers (tests/kubecontrollers.py): refresh, TTL, re-runs, Kueue,
Ctrl-C. Each test names the item of the day-two review it covers."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.engine import Engine
from tests.deploy.test_lifecycle import (
    LIFECYCLE_SECONDS,
    Stack,
    in_background,
    jobs_of,
    running,
    spec,
    wait_running,
    watch_the_chief_complete,
)
from tests.kubecontrollers import install_jobset, install_kueue
from tests.kubefake import FakeKube
from trainjobs.cli import main as cli_main
from trainjobs.cluster.supervisor import WatchOptions, see_through
from trainjobs.core.errors import SpecError
from trainjobs.deploy.watch_target import watch_target
from trainjobs.kinds.registry import load_job
from trainjobs.review.preview import run_preview

NS = "default"
QUEUED = REPO / "tests" / "corpus" / "pytorchjob-v1-kueue-sample-pytorchjob.yaml"
MASTER = "pytorch-simple-master-0"
WORKER = "pytorch-simple-worker-0"


def queued(**changes: Any) -> dict[str, Any]:
    document = yaml.safe_load(QUEUED.read_text())
    document["spec"]["runPolicy"] = changes
    return document


def wait_started(kube: FakeKube, jobs: list[str]) -> None:
    """Until every Job exists (a JobSet's come late) and runs."""
    deadline = time.monotonic() + LIFECYCLE_SECONDS
    while not all(kube.exists("jobs", job) and running(kube, job) for job in jobs):
        assert time.monotonic() < deadline, [job for job in jobs if not kube.exists("jobs", job)]
        time.sleep(0.02)


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        yield fake


@pytest.fixture
def engine(kube: FakeKube, tmp_path: Path) -> Engine:
    return Engine(kube, kube.write_kubeconfig(tmp_path / "kubeconfig").read_text())


# --- 1. a queued job's Jobs appear after its JobSet ---------------------------------------------


def test_a_queued_job_whose_jobs_appear_3s_late_is_seen_through_by_trainjobs_watch(
    kube: FakeKube, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    install_jobset(kube, delay=3.0)
    install_kueue(kube)
    stack = Stack(tmp_path / "project", {"queued": queued()}, **{"trainjobs:watch": "false"})
    engine.up(run_preview("test", stack.root))
    assert not kube.exists("jobs", MASTER)  # the JobSet is stored; its Jobs come later
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))

    code = in_background(lambda: cli_main(["watch", "pytorch-simple", "-n", NS]))
    wait_started(kube, [MASTER, WORKER])
    kube.complete_job(MASTER)
    kube.complete_job(WORKER)

    assert code() == 0
    assert capsys.readouterr().out.startswith(
        "job default/pytorch-simple Succeeded (CompletionsReached: "
    )


def test_the_pulumi_watcher_waits_for_a_queued_jobs_jobs(kube: FakeKube, engine: Engine, tmp_path):
    install_jobset(kube, delay=0.5)
    install_kueue(kube)
    stack = Stack(tmp_path / "project", {"queued": queued()})
    program = run_preview("test", stack.root)
    engine.up(program)

    outcome = in_background(lambda: engine.watch(program))
    wait_started(kube, [MASTER, WORKER])
    kube.complete_job(MASTER)
    kube.complete_job(WORKER)

    assert outcome()[f"{NS}/pytorch-simple"]["phase"] == "Succeeded"


# --- 2. an in-place change to a Job whose TTL removed it ----------------------------------------


def tf_with_ttl(**run_policy: Any) -> dict[str, Any]:
    document = spec("tf-mnist")
    document["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 30, **run_policy}
    return document


@pytest.mark.parametrize("change", ["backoffLimit", "activeDeadlineSeconds", "label"])
def test_a_change_to_a_job_the_ttl_removed_never_fails(
    change: str, kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    stack = Stack(tmp_path / "project", {"tf": tf_with_ttl()})
    program = run_preview("test", stack.root)
    jobs = jobs_of(program)
    engine.up(program)
    assert watch_the_chief_complete(kube, engine, program, jobs) == "Succeeded"
    assert kube.expire_ttl() == ["tf-mnist-chief-0"]
    kube.wait_until(lambda: not kube.exists("jobs", "tf-mnist-chief-0"))

    document = tf_with_ttl()
    if change != "label":
        document["spec"]["runPolicy"][change] = 3600
    changed = stack.write({"tf": document})
    if change == "label":  # on the Job alone (job labels also reach the pod templates)
        for registration in changed.kubernetes_objects():
            if registration.inputs["kind"] == "Job":
                registration.inputs["metadata"]["labels"]["team"] = "vision"
    engine.up(changed)  # no `--refresh`: Pulumi still believes in the removed chief

    assert ("create", "tf-mnist-chief-0") in engine.steps
    assert kube.get("jobs", "tf-mnist-chief-0")["spec"]["suspend"] is True


# --- 3. refresh reads every unfinished Job as unhealthy (upstream; mitigated) -------------------


def test_a_refresh_of_a_running_job_warns_and_its_empty_update_leaves_it_running(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    stack = Stack(tmp_path / "project", {"chainer": spec("chainermn-mnist")})
    program = run_preview("test", stack.root)
    engine.up(program)
    watch = in_background(lambda: engine.watch(program))
    wait_running(kube, ["chainermn-mnist-master"])

    engine.refresh()
    engine.up(program)

    # pulumi-kubernetes' Job awaiter calls the running master unhealthy: an update with no
    # diff, which applies nothing the watcher owns (spec.suspend is ignored).
    assert engine.warnings == ["chainermn-mnist-master"]
    assert ("update", "chainermn-mnist-master") in engine.steps
    assert running(kube, "chainermn-mnist-master")
    kube.complete_job("chainermn-mnist-master")
    assert watch()[f"{NS}/chainermn-mnist"]["phase"] == "Succeeded"


# --- 4. runPolicy.suspend on a queued job -------------------------------------------------------


def test_a_queued_job_its_spec_suspends_never_runs_and_a_refresh_changes_nothing(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube)
    kueue = install_kueue(kube)
    stack = Stack(tmp_path / "project", {"queued": queued(suspend=True)})
    program = run_preview("test", stack.root)
    engine.up(program)
    outcome = engine.watch(program)[f"{NS}/pytorch-simple"]

    assert outcome["phase"] == "Suspended"
    assert (kueue.admitted, kube.exists("jobsets", "pytorch-simple")) == ([], False)
    engine.refresh()
    before = list(engine.steps)
    engine.up(program)
    assert engine.steps == before


def test_kueue_owns_a_queued_jobsets_suspension_on_refresh(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube)
    kueue = install_kueue(kube)
    stack = Stack(tmp_path / "project", {"queued": queued()})
    program = run_preview("test", stack.root)
    engine.up(program)
    kube.wait_until(lambda: "pytorch-simple" in kueue.admitted)
    uid = kube.get("jobsets", "pytorch-simple")["metadata"]["uid"]

    engine.refresh()
    engine.up(program)

    assert kube.get("jobsets", "pytorch-simple")["metadata"]["uid"] == uid
    assert [s for s in engine.steps if s[1] == "pytorch-simple"] == [("create", "pytorch-simple")]


# --- 5. a queued job moved to another queue -----------------------------------------------------


def test_a_queue_change_replaces_the_jobset(kube: FakeKube, engine: Engine, tmp_path: Path):
    install_jobset(kube)
    kueue = install_kueue(kube)
    stack = Stack(tmp_path / "project", {"queued": queued()})
    engine.up(run_preview("test", stack.root))
    kube.wait_until(lambda: "pytorch-simple" in kueue.admitted)

    moved = queued()
    moved["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "other-queue"
    engine.up(stack.write({"queued": moved}))

    live = kube.get("jobsets", "pytorch-simple")
    assert live["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "other-queue"
    assert [s for s in engine.steps if s[1] == "pytorch-simple"][-2:] == [
        ("delete", "pytorch-simple"),
        ("create", "pytorch-simple"),
    ]


# --- 6. a Job replaced after a refresh starts gated ---------------------------------------------


def test_a_job_replaced_after_a_refresh_is_created_suspended(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    stack = Stack(tmp_path / "project", {"chainer": spec("chainermn-mnist")})
    program = run_preview("test", stack.root)
    engine.up(program)
    watch = in_background(lambda: engine.watch(program))
    wait_running(kube, ["chainermn-mnist-master"])
    kube.complete_job("chainermn-mnist-master")
    watch()

    engine.refresh()  # the old input of spec.suspend is now the live false
    master = engine.entry("kubernetes:batch/v1:Job", "chainermn-mnist-master")
    assert master.inputs["spec"]["suspend"] is False
    changed = copy.deepcopy(spec("chainermn-mnist"))
    changed["spec"]["master"]["template"]["spec"]["containers"][0]["image"] = "registry.example/x:2"
    engine.up(stack.write({"chainer": changed}))

    assert kube.get("jobs", "chainermn-mnist-master")["spec"]["suspend"] is True
    assert kube.pods_of("chainermn-mnist-master") == []


# --- 7. Ctrl-C and the stack lock: `trainjobs:watch: start` ------------------------------------


def test_watch_start_starts_the_run_and_returns_and_trainjobs_watch_follows_it(
    kube: FakeKube, engine: Engine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    stack = Stack(
        tmp_path / "project", {"chainer": spec("chainermn-mnist")}, **{"trainjobs:watch": "start"}
    )
    program = run_preview("test", stack.root)
    engine.up(program)

    outcome = engine.watch(program)[f"{NS}/chainermn-mnist"]  # returns while it runs

    assert (outcome["phase"], outcome["reason"]) == ("Running", "Started")
    wait_running(kube, ["chainermn-mnist-master"])
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))
    code = in_background(lambda: cli_main(["watch", "chainermn-mnist", "-n", NS]))
    kube.complete_job("chainermn-mnist-master")
    assert code() == 0
    assert kube.replicas("chainermn-mnist-worker") == 0
    assert capsys.readouterr().out.startswith("job default/chainermn-mnist Succeeded")


# --- 8. queued job names the jobset webhook refuses ---------------------------------------------


def test_a_queued_job_name_the_jobset_webhook_would_refuse_is_refused_by_validation(
    tmp_path: Path, kube: FakeKube, engine: Engine
) -> None:
    install_jobset(kube)
    document = queued()
    # `<name>-master-0-0-xxxxx` is 64 characters: one too many.
    document["metadata"]["name"] = "p" * 47
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(document))

    with pytest.raises(SpecError) as raised:
        load_job(path, NS)

    assert [(p.path, p.message) for p in raised.value.problems] == [
        (
            "metadata.name",
            f"'{'p' * 47}' is 47 characters; queued, its JobSet's pods would be named like "
            f"'{'p' * 47}-master-0-0-xxxxx' (64 characters), which the JobSet webhook refuses "
            "beyond 63; shorten it to at most 46 characters",
        )
    ]
    document["metadata"]["name"] = "p" * 46
    path.write_text(yaml.safe_dump(document))
    job = load_job(path, NS)
    jobset = next(n for n in job.graph.nodes if n.kind == "JobSet")
    assert kube.create("jobsets", copy.deepcopy(dict(jobset.manifest)))["metadata"]["name"] == (
        "p" * 46
    )


def test_a_jobset_whose_controller_never_creates_its_jobs_is_reported_so(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    """No JobSet controller: after the bounded wait, the outcome says what is missing."""
    stack = Stack(tmp_path / "project", {"queued": queued()}, **{"trainjobs:watch": "false"})
    program = run_preview("test", stack.root)
    engine.up(program)
    target = watch_target(load_job(stack.root / "jobs" / "queued.yaml", NS), gated=False)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    api = kube.api_client()
    try:
        options = WatchOptions(clock=lambda: now[0], sleep=sleep, jobset_start_seconds=5)
        outcome = see_through(api, target, options=options)
    finally:
        api.close()

    assert (outcome.status.phase, outcome.status.reason, outcome.status.message) == (
        "Deleted",
        "JobsNotCreated",
        "JobSet default/pytorch-simple has no Job pytorch-simple-master-0 after 5s: is the "
        "JobSet controller running (kubectl get pods -n jobset-system)?",
    )
    assert now[0] == 5.0
