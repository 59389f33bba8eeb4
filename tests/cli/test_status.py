"""`trainjobs status`: AGE and DURATION as kubectl shows them, and `--watch`, against the API
fake with an injected clock."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.cluster.test_training_jobs import chainermn, deployed, tf_job
from tests.kubefake import FakeKube
from trainjobs.cli import main as cli_main
from trainjobs.cli import watch as cli_watch
from trainjobs.cluster.status import human_duration

NS = "default"
CREATED = "2026-01-01T10:00:00Z"
NOW = datetime(2026, 1, 1, 11, 2, 5, tzinfo=UTC)  # 62m5s after CREATED


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        monkeypatch.setenv("KUBECONFIG", str(fake.write_kubeconfig(tmp_path / "kubeconfig")))
        yield fake


def created_at(kube: FakeKube, job: str, when: str = CREATED) -> None:
    kube.patch_object("jobs", job, NS, {"metadata": {"creationTimestamp": when}})


def two_jobs(kube: FakeKube, tmp_path: Path) -> None:
    """alpha ran 10:00:30 to 10:05:30; tf-mnist runs since 10:01:00 (its chief decides)."""
    deployed(kube, tmp_path / "a", chainermn("alpha"))
    deployed(kube, tmp_path / "b", tf_job("Running"))
    for job in ("alpha-master", "tf-mnist-chief-0"):
        created_at(kube, job)
    kube.patch_object("jobs", "alpha-master", NS, {"spec": {"suspend": False}})
    kube.complete_job("alpha-master")
    kube.set_job_status(
        "alpha-master", NS, startTime="2026-01-01T10:00:30Z", completionTime="2026-01-01T10:05:30Z"
    )
    for job in ("tf-mnist-chief-0", "tf-mnist-worker-0", "tf-mnist-worker-1", "tf-mnist-ps-0"):
        kube.patch_object("jobs", job, NS, {"spec": {"suspend": False}})
    kube.set_job_status("tf-mnist-chief-0", NS, startTime="2026-01-01T10:01:00Z")


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (-5, "<invalid>"),
        (-0.5, "0s"),
        (119, "119s"),
        (120, "2m"),
        (200, "3m20s"),
        (3725, "62m"),
        (3 * 3600 + 60, "3h1m"),
        (5 * 3600, "5h"),
        (30 * 3600, "30h"),
        (3 * 86400 + 4 * 3600, "3d4h"),
        (20 * 86400, "20d"),
        (2 * 365 * 86400 + 10 * 86400, "2y10d"),
        (9 * 365 * 86400, "9y"),
    ],
)
def test_durations_read_as_kubectl_prints_them(seconds: float, shown: str) -> None:
    assert human_duration(seconds) == shown


def test_status_shows_duration_and_age(kube, tmp_path, capsys, monkeypatch) -> None:
    two_jobs(kube, tmp_path)
    monkeypatch.setattr(cli_watch, "_now", lambda: NOW)

    assert cli_main(["status"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "JOB       KIND        PHASE      DURATION  AGE  DETAIL",
        "alpha     ChainerJob  Succeeded  5m        62m  CompletionsReached: Reached expected "
        "number of succeeded pods",
        "tf-mnist  TFJob       Running    61m       62m  4 Job(s): 4 active (4 ready), 0 "
        "succeeded, 0 failed pod(s)",
    ]


def test_status_json_gives_the_times_and_seconds(kube, tmp_path, capsys, monkeypatch) -> None:
    two_jobs(kube, tmp_path)
    monkeypatch.setattr(cli_watch, "_now", lambda: NOW)

    assert cli_main(["status", "tf-mnist", "--json"]) == 0

    assert json.loads(capsys.readouterr().out) == [
        {
            "name": "tf-mnist",
            "kind": "TFJob",
            "phase": "Running",
            "detail": "4 Job(s): 4 active (4 ready), 0 succeeded, 0 failed pod(s)",
            "created": CREATED,
            "started": "2026-01-01T10:01:00Z",
            "ended": None,
            "age_seconds": 3725.0,
            "duration_seconds": 3665.0,
        }
    ]


def ticking(kube: FakeKube, steps: list[Callable[[], None]]) -> Callable[[float], None]:
    """A sleep that advances the injected clock by its seconds and then changes the cluster
    by the next step."""

    def sleep(seconds: float) -> None:
        clock[0] += seconds
        if steps:
            steps.pop(0)()

    return sleep


clock = [0.0]


def finish(kube: FakeKube, job: str, when: str) -> None:
    kube.complete_job(job)
    kube.set_job_status(job, NS, completionTime=when)


def test_status_watch_prints_only_the_rows_that_changed(
    kube, tmp_path, capsys, monkeypatch
) -> None:
    two_jobs(kube, tmp_path)
    clock[0] = 0.0
    monkeypatch.setattr(
        cli_watch, "_now", lambda: datetime.fromtimestamp(NOW.timestamp() + clock[0], UTC)
    )
    steps: list[Callable[[], None]] = [
        lambda: None,  # nothing changes: nothing printed, though AGE and DURATION grow
        lambda: finish(kube, "tf-mnist-chief-0", "2026-01-01T11:02:07Z"),
        lambda: None,
    ]
    monkeypatch.setattr(cli_watch, "_sleep", ticking(kube, steps))

    assert cli_main(["status", "-w", "--timeout", "6s"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "JOB       KIND        PHASE      DURATION  AGE  DETAIL",
        "alpha     ChainerJob  Succeeded  5m        62m  CompletionsReached: Reached expected "
        "number of succeeded pods",
        "tf-mnist  TFJob       Running    61m       62m  4 Job(s): 4 active (4 ready), 0 "
        "succeeded, 0 failed pod(s)",
        # 4s later the chief has completed (at 11:02:07, 61m7s after its start).
        "tf-mnist  TFJob       Succeeded  61m       62m  CompletionsReached: Reached expected "
        "number of succeeded pods",
    ]


def test_a_suspended_job_has_an_age_and_no_duration(kube, tmp_path, capsys, monkeypatch) -> None:
    deployed(kube, tmp_path, tf_job("Running"))
    created_at(kube, "tf-mnist-chief-0")
    monkeypatch.setattr(cli_watch, "_now", lambda: NOW)

    assert cli_main(["status"]) == 0

    assert capsys.readouterr().out.splitlines() == [
        "JOB       KIND   PHASE      DURATION  AGE  DETAIL",
        "tf-mnist  TFJob  Suspended  <none>    62m  4 Job(s): 0 active (0 ready), 0 succeeded, "
        "0 failed pod(s)",
    ]


def test_a_timeout_without_watch_is_a_mistake(kube, capsys) -> None:
    assert cli_main(["status", "--timeout", "1h"]) == 2
    assert capsys.readouterr().err == (
        "error: --timeout 1h: only a watch has a timeout; add --watch, e.g. "
        "`trainjobs status --watch --timeout 1h`\n"
    )


def test_status_watch_shows_a_removed_job_as_missing(kube, tmp_path, capsys, monkeypatch) -> None:
    two_jobs(kube, tmp_path)
    clock[0] = 0.0
    monkeypatch.setattr(
        cli_watch, "_now", lambda: datetime.fromtimestamp(NOW.timestamp() + clock[0], UTC)
    )
    # Its anchor goes (as with `pulumi destroy`); the next read changes nothing more.
    steps: list[Callable[[], None]] = [lambda: kube.delete("services", "tf-mnist-chief-0")]
    monkeypatch.setattr(cli_watch, "_sleep", ticking(kube, steps))

    assert cli_main(["status", "--watch", "--timeout", "4s"]) == 0

    assert capsys.readouterr().out.splitlines()[3:] == [
        "tf-mnist  TFJob       Missing    <none>    62m  no longer deployed",
    ]
