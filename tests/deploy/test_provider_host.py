"""The completion watcher through the SDK's real dynamic provider host, with more jobs running
at once than the host has gRPC threads (4): every job is watched from the start and stopped
within a second of its end."""

from __future__ import annotations

import concurrent.futures
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.deploy.host import provider_host
from tests.kubefake import FakeKube
from trainjobs.cluster.rules import CompletionRules
from trainjobs.cluster.scaling import WorkerRef
from trainjobs.cluster.target import WatchTarget

NS = "default"
JOBS = 6


def deploy(kube: FakeKube, name: str) -> WatchTarget:
    """A ChainerJob as `pulumi up` leaves it for the watcher: anchor, workers, suspended master."""
    labels = {"training.kubeflow.org/job-name": name}
    kube.create("configmaps", {"metadata": {"name": f"{name}-assets", "labels": labels}})
    kube.create(
        "statefulsets",
        {"metadata": {"name": f"{name}-worker", "labels": labels}, "spec": {"replicas": 2}},
    )
    kube.create(
        "jobs",
        {
            "metadata": {"name": f"{name}-master", "labels": labels},
            "spec": {
                "suspend": True,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "chainer", "image": "img:1"}]},
                },
            },
        },
    )
    return WatchTarget(
        namespace=NS,
        name=name,
        kind="ChainerJob",
        rules=CompletionRules(f"{name}-master"),
        workers=(WorkerRef("StatefulSet", f"{name}-worker", 2),),
        run="run-1",
        anchor=("ConfigMap", f"{name}-assets"),
        gated=True,
    )


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True) as fake:
        yield fake


def test_more_jobs_than_host_threads_are_all_watched_at_once(kube: FakeKube, tmp_path: Path):
    targets = [deploy(kube, f"job-{index}") for index in range(JOBS)]
    props = {
        "jobs": [{"target": target.to_dict(), "uids": {}} for target in targets],
        "timeout_seconds": 30,
        "fail_on_failure": True,
        "kubeconfig": kube.write_kubeconfig(tmp_path / "kubeconfig").read_text(),
    }
    with provider_host(REPO, tmp_path / "host.log") as host:
        inputs, failures = host.check(props)
        assert failures == []
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
        created = pool.submit(host.create, inputs, 60)
        masters = [f"{target.name}-master" for target in targets]
        kube.wait_until(
            lambda: all(not kube.get("jobs", m)["spec"]["suspend"] for m in masters), timeout=30
        )
        ended = {}
        for index in (4, 1, 5, 0, 3, 2):
            time.sleep(0.1)
            ended[f"job-{index}-worker"] = time.perf_counter()
            kube.complete_job(f"job-{index}-master")
        resource_id, outs = created.result(timeout=60)
        pool.shutdown()

    assert resource_id == "trainjobs-completion"
    assert {key: outcome["phase"] for key, outcome in outs["outcomes"].items()} == {
        f"{NS}/job-{index}": "Succeeded" for index in range(JOBS)
    }
    stopped = {
        patch.name: patch.at
        for patch in kube.patches
        if patch.subresource == "scale" and patch.body == {"spec": {"replicas": 0}}
    }
    delays = {name: stopped[name] - at for name, at in ended.items()}
    assert all(0 < delay < 1.0 for delay in delays.values()), delays
    log = (tmp_path / "host.log").read_text()
    assert [f"job default/job-{index}-master: Succeeded" in log for index in range(JOBS)] == [
        True
    ] * JOBS
