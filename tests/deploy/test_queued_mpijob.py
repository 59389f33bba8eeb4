"""A Kueue-queued MPIJob v2beta1 deployed as one JobSet, seen through by the completion
watcher against the API fake with the JobSet and Kueue controllers (tests/kubecontrollers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.deploy.engine import Engine
from tests.deploy.test_day_two import wait_started
from tests.deploy.test_lifecycle import Stack, in_background
from tests.kubecontrollers import install_jobset, install_kueue
from tests.kubefake import FakeKube
from trainjobs.deploy.completion import JobFailedError
from trainjobs.review.preview import run_preview

NS = "default"
SAMPLE = REPO / "tests" / "corpus" / "mpijob-v2beta1-kueue-sample-mpijob.yaml"


def sample() -> dict[str, Any]:
    document = yaml.safe_load(SAMPLE.read_text())
    # The TTL would remove the JobSet a minute after it ends; not what is watched here.
    del document["spec"]["runPolicy"]["ttlSecondsAfterFinished"]
    return document


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        yield fake


@pytest.fixture
def engine(kube: FakeKube, tmp_path: Path) -> Engine:
    return Engine(kube, kube.write_kubeconfig(tmp_path / "kubeconfig").read_text())


def test_a_queued_mpijob_succeeds_when_its_launcher_does(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube, delay=0.5)
    kueue = install_kueue(kube)
    stack = Stack(tmp_path / "project", {"pi": sample()})
    program = run_preview("test", stack.root)
    engine.up(program)

    outcome = in_background(lambda: engine.watch(program))
    wait_started(kube, ["pi-launcher-0", "pi-worker-0", "pi-worker-1"])
    kube.complete_job("pi-launcher-0")

    assert outcome()[f"{NS}/pi"]["phase"] == "Succeeded"
    assert kueue.admitted == ["pi"]
    # Kueue's labels on the JobSet alone: a labelled Job would be admitted on its own.
    assert kube.get("jobsets", "pi")["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == (
        "user-queue"
    )
    assert [
        key for key in kube.get("jobs", "pi-worker-0")["metadata"]["labels"] if "kueue" in key
    ] == []


def test_a_queued_mpijob_fails_when_a_worker_job_fails_past_its_backoff_limit(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube, delay=0.5)
    install_kueue(kube)
    stack = Stack(tmp_path / "project", {"pi": sample()})
    program = run_preview("test", stack.root)
    engine.up(program)

    outcome = in_background(lambda: engine.watch(program))
    wait_started(kube, ["pi-launcher-0", "pi-worker-0", "pi-worker-1"])
    kube.fail_job("pi-worker-1")

    with pytest.raises(JobFailedError) as raised:
        outcome()
    assert str(raised.value).startswith(
        "job default/pi Failed (WorkerFailed: worker Job default/pi-worker-1 failed "
        "(BackoffLimitExceeded: Job has reached the specified backoff limit))"
    )
