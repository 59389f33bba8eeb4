"""A TrainJob stack: previewed offline as the JobSet Trainer would create, deployed with the
engine's steps against the API fake and its JobSet controller (tests/kubecontrollers.py), and
seen through by the stack's completion watcher and by `trainjobs watch`."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy.engine import Engine
from tests.deploy.test_day_two import wait_started
from tests.deploy.test_lifecycle import Stack, in_background, spec
from tests.kubecontrollers import install_jobset
from tests.kubefake import FakeKube
from trainjobs.cli import main as cli_main
from trainjobs.review.preview import run_preview

NS = "default"
NODES = "trainjob-torch-node-0"


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        yield fake


@pytest.fixture
def engine(kube: FakeKube, tmp_path: Path) -> Engine:
    return Engine(kube, kube.write_kubeconfig(tmp_path / "kubeconfig").read_text())


def test_a_trainjob_stack_previews_offline_as_its_component_and_trainers_jobset(tmp_path: Path):
    stack = Stack(tmp_path / "project", {"torch": spec("trainjob-torch")})
    program = run_preview("test", stack.root)

    kinds = sorted(
        (registration.inputs["kind"], registration.inputs["metadata"]["name"])
        for registration in program.kubernetes_objects()
    )
    assert kinds == [("ConfigMap", "trainjob-torch-trainjob"), ("JobSet", "trainjob-torch")]
    assert [r.type for r in program.resources if r.type.startswith("trainjobs:index:")] == [
        "trainjobs:index:TrainJob"
    ]


def test_the_stacks_watcher_sees_a_trainjob_through_when_its_jobset_jobs_complete(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube, delay=0.5)
    stack = Stack(tmp_path / "project", {"torch": spec("trainjob-torch")})
    program = run_preview("test", stack.root)
    engine.up(program)

    outcome = in_background(lambda: engine.watch(program))
    wait_started(kube, [NODES])
    kube.complete_job(NODES, succeeded=2)

    assert outcome()[f"{NS}/trainjob-torch"]["phase"] == "Succeeded"


def test_trainjobs_watch_sees_a_deployed_trainjob_through(
    kube: FakeKube,
    engine: Engine,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    install_jobset(kube, delay=0.5)
    stack = Stack(
        tmp_path / "project", {"torch": spec("trainjob-torch")}, **{"trainjobs:watch": "false"}
    )
    engine.up(run_preview("test", stack.root))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kubeconfig"))

    code = in_background(lambda: cli_main(["watch", "trainjob-torch", "-n", NS]))
    wait_started(kube, [NODES])
    kube.complete_job(NODES, succeeded=2)

    assert code() == 0
    assert capsys.readouterr().out.startswith(
        "job default/trainjob-torch Succeeded (CompletionsReached: "
    )


def test_a_suspended_trainjobs_jobset_is_created_suspended_and_the_watcher_says_so(
    kube: FakeKube, engine: Engine, tmp_path: Path
) -> None:
    install_jobset(kube)
    document = spec("trainjob-torch")
    document["spec"]["suspend"] = True
    stack = Stack(tmp_path / "project", {"torch": document})
    program = run_preview("test", stack.root)
    engine.up(program)

    assert engine.watch(program)[f"{NS}/trainjob-torch"]["phase"] == "Suspended"
    assert kube.get("jobsets", "trainjob-torch")["spec"]["suspend"] is True
