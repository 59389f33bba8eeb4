"""What a container run asks of its engine before the first pod starts, counted through the
engine's interface: each image inspected once per run, the pods' sandboxes created together.

No engine is needed: the adapter's command runner is replaced by one that records each call
and answers as podman does for images that exist and are current.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from types import SimpleNamespace

import pytest

from tests.conftest import REPO
from trainjobs.engines.engine import RECIPE_LABEL, PodRequest
from trainjobs.engines.podman import Podman
from trainjobs.images import bootstrap, kubectl_stand_in
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.dockerfiles import recipe_hash
from trainjobs.kinds.registry import load_job
from trainjobs.local.cluster import plan_cluster
from trainjobs.local.container import images as container_images
from trainjobs.local.container.pod import ContainerPodRun, create_sandboxes

CHAINERMN = IMAGES["trainjobs/chainermn:7.8.1"]
assert CHAINERMN.debian is not None
DEBIAN = bootstrap.bootstrap_reference(CHAINERMN.debian)


class RecordingPodman(Podman):
    """Podman whose every command is recorded; images exist, labelled with their recipes."""

    def __init__(self) -> None:
        super().__init__("/usr/bin/podman")
        self.calls: list[tuple[str, ...]] = []
        self.labels = {
            DEBIAN: {},
            kubectl_stand_in.REFERENCE: {RECIPE_LABEL: kubectl_stand_in.recipe_hash()},
            CHAINERMN.reference: {RECIPE_LABEL: recipe_hash(CHAINERMN)},
        }

    def call(self, *args: str, check: bool = True, stdin: bytes | None = None) -> str:
        self.calls.append(args)
        if args[:2] == ("image", "inspect"):
            labels = self.labels.get(args[-1])
            if labels is None:
                return ""
            if "{{.Id}}" in args[3] and "Labels" not in args[3]:
                return "sha256:0\n"
            if "json .Config.Labels" in args[3]:
                return f"sha256:0 {json.dumps(labels)}\n"
            key = args[3].split('"')[1]
            return labels.get(key, "<no value>") + "\n"
        return ""


def test_a_run_inspects_each_image_once_in_one_call(monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the kubectl stand-in was looked at four times (twice for its presence, twice
    for its recipe) and every image twice; each call costs a tenth of a second."""
    settings = BuildSettings(debian_base_image=DEBIAN, kubectl_image=kubectl_stand_in.REFERENCE)
    monkeypatch.setattr(container_images, "saved_settings", lambda: settings)
    engine = RecordingPodman()
    job = load_job(REPO / "jobs" / "chainermn-mnist.yaml")
    plan = plan_cluster(job.graph, job.success_jobs, job.success_any)

    images = container_images.local_images(plan, engine, {}, lambda line: None)

    assert images == {
        "registry.k8s.io/kubectl:v1.34.2": kubectl_stand_in.REFERENCE,
        CHAINERMN.reference: CHAINERMN.reference,
    }
    inspected = sorted(args[-1] for args in engine.calls if args[:2] == ("image", "inspect"))
    assert inspected == sorted([DEBIAN, kubectl_stand_in.REFERENCE, CHAINERMN.reference])
    assert [args for args in engine.calls if args[:2] != ("image", "inspect")] == []


class BarrierPodman(Podman):
    """Creates no pod: each creation waits until all ``parties`` are being created at once."""

    def __init__(self, parties: int) -> None:
        super().__init__("/usr/bin/podman")
        self.barrier = threading.Barrier(parties)
        self.created: list[str] = []
        self.lock = threading.Lock()

    def create_pod(self, request: PodRequest) -> int:
        # Sequential creation never gets all parties here: the wait breaks the barrier.
        self.barrier.wait(timeout=30)
        with self.lock:
            self.created.append(request.name)
        return 1000 + int(request.address.rsplit(".", 1)[1])

    def remove_pods(self, names: Sequence[str]) -> None:
        raise AssertionError("nothing to remove")


def request(index: int) -> PodRequest:
    return PodRequest(f"tj-1-pod-{index}", f"pod-{index}", "tj-1", f"198.18.0.{index}", {})


def test_independent_pods_are_created_together() -> None:
    engine = BarrierPodman(parties=3)

    pids = create_sandboxes(engine, [request(2), request(3), request(4)])

    assert pids == {"tj-1-pod-2": 1002, "tj-1-pod-3": 1003, "tj-1-pod-4": 1004}
    assert sorted(engine.created) == ["tj-1-pod-2", "tj-1-pod-3", "tj-1-pod-4"]


class FailingPodman(Podman):
    def __init__(self) -> None:
        super().__init__("/usr/bin/podman")
        self.lock = threading.Lock()
        self.created: list[str] = []

    def create_pod(self, request: PodRequest) -> int:
        if request.name.endswith("-3"):
            raise RuntimeError("no address left")
        with self.lock:
            self.created.append(request.name)
        return 1


def test_a_pod_that_cannot_be_created_fails_the_start_after_the_others_are_made() -> None:
    """Every creation is waited for, so nothing is being created when the run tears down."""
    engine = FailingPodman()

    with pytest.raises(RuntimeError, match="no address left"):
        create_sandboxes(engine, [request(2), request(3), request(4)])
    assert sorted(engine.created) == ["tj-1-pod-2", "tj-1-pod-4"]


def test_a_single_pod_is_created_as_before() -> None:
    engine = BarrierPodman(parties=1)

    assert create_sandboxes(engine, [request(5)]) == {"tj-1-pod-5": 1005}


class RemovingPodman(Podman):
    """Removes no pod: each removal waits until all ``parties`` are being removed at once."""

    def __init__(self, parties: int) -> None:
        super().__init__("/usr/bin/podman")
        self.barrier = threading.Barrier(parties)
        self.removed: list[list[str]] = []

    def remove_pods(self, names: Sequence[str]) -> None:
        self.barrier.wait(timeout=30)
        self.removed.append(list(names))


def test_pods_stopped_together_are_removed_together_one_call_each() -> None:
    """One name per call: given several, `podman pod rm` removes none if one is gone."""
    engine = RemovingPodman(parties=3)
    published: list[bool] = []
    run = SimpleNamespace(publish=lambda: published.append(True))
    on_engine = SimpleNamespace(engine=engine)
    pods = []
    for index in range(3):
        pod = object.__new__(ContainerPodRun)
        pod.run = run  # type: ignore[assignment]
        pod.on_engine = on_engine  # type: ignore[assignment]
        pod.engine_name = f"tj-1-pod-{index}"
        pod.processes = {}
        pods.append(pod)

    ContainerPodRun.kill_together(pods)

    assert sorted(engine.removed) == [["tj-1-pod-0"], ["tj-1-pod-1"], ["tj-1-pod-2"]]
    assert published == [True]
