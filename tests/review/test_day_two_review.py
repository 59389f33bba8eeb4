"""What `trainjobs preview --against` shows for day-two changes: a queued job moved to another
queue is a replacement of its JobSet (Kueue refuses the label change in place), and a Job's
label or backoffLimit change replaces the Job (an update could not reach one its TTL
removed)."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.conftest import REPO
from tests.review.test_preview_diff import preview, report_of, write_project

QUEUED = (REPO / "tests" / "corpus" / "pytorchjob-v1-kueue-sample-pytorchjob.yaml").read_text()


def rows(report: str) -> list[list[str]]:
    return [line.split(" | ")[:2] for line in report.splitlines() if line.startswith("| `")]


def test_a_queue_change_is_a_replacement_of_the_jobset(tmp_path: Path, capsys) -> None:
    project = write_project(tmp_path / "project", {"queued.yaml": QUEUED})
    assert preview(project, tmp_path / "base") == 0
    write_project(project, {"queued.yaml": QUEUED.replace("user-queue", "other-queue")})
    capsys.readouterr()

    assert preview(project, tmp_path / "head", "--against", str(tmp_path / "base")) == 0

    report = report_of(capsys.readouterr().out)
    assert rows(report) == [
        ["| `JobSet default/pytorch-simple`", "replace"],
        ["| `JobCompletion completion`", "update"],
    ]
    assert (
        '`metadata` changed (`metadata.labels["kueue.x-k8s.io/queue-name"]` user-queue → '
        "other-queue): a jobset.x-k8s.io/v1alpha2 JobSet runs once, so the program replaces "
        "it on any change (replaceOnChanges; an update could not reach one its TTL removed, "
        "nor move a queued one); the old object is deleted first (same name)"
    ) in report


def test_a_backoff_limit_change_replaces_the_jobs(tmp_path: Path, capsys) -> None:
    document = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())
    project = write_project(tmp_path / "project", {"tf.yaml": yaml.safe_dump(document)})
    assert preview(project, tmp_path / "base") == 0
    document["spec"].setdefault("runPolicy", {})["backoffLimit"] = 3
    write_project(project, {"tf.yaml": yaml.safe_dump(document)})
    capsys.readouterr()

    assert preview(project, tmp_path / "head", "--against", str(tmp_path / "base")) == 0

    replaced = [row[0] for row in rows(report_of(capsys.readouterr().out)) if row[1] == "replace"]
    assert replaced == [
        "| `Job default/tf-mnist-ps-0`",
        "| `Job default/tf-mnist-worker-0`",
        "| `Job default/tf-mnist-worker-1`",
        "| `Job default/tf-mnist-chief-0`",
    ]
