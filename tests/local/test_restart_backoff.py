"""Restarted containers back off as the kubelet backs them off: at once, then 10 s doubling
to 5 min, forgotten after 10 min of running; a crash-looping container is not started
hundreds of times a minute."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.local.runs import Run
from trainjobs.local.backoff import RestartBackoff


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_the_back_off_starts_at_once_then_10_s_doubling_to_5_min() -> None:
    clock = Clock()
    backoff = RestartBackoff(clock=clock)
    waits = []
    for _ in range(9):
        clock.now += 1.0  # the container runs 1 s, then exits
        start_at = backoff.exited(("master", "main"))
        waits.append(start_at - clock.now)
        clock.now = start_at
    assert waits == [0.0, 10.0, 20.0, 40.0, 80.0, 160.0, 300.0, 300.0, 300.0]


def test_a_container_that_ran_10_minutes_starts_afresh_and_containers_are_apart() -> None:
    clock = Clock()
    backoff = RestartBackoff(clock=clock)
    for _ in range(3):  # waits 0, 10, 20
        clock.now = backoff.exited("a") + 1.0
    assert backoff.exited("a") - clock.now == 40.0
    assert backoff.exited("b") - clock.now == 0.0  # another container: its own count
    clock.now += 40.0 + 600.0  # restarted, then ran exactly 10 min: not yet forgotten
    assert backoff.exited("a") - clock.now == 80.0
    clock.now += 80.0 + 600.5  # restarted, then ran longer than 10 min
    assert backoff.exited("a") - clock.now == 0.0


def test_a_crash_looping_container_is_restarted_with_back_off(tmp_path: Path) -> None:
    # OnFailure with a huge backoffLimit: only the deadline ends it. Without back-off the
    # container was started hundreds of times in these 3 s; the kubelet starts it twice
    # (at once, and at once again after its first exit; the next start would be 10 s later).
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "crashloop"},
        "spec": {
            "master": {
                "backoffLimit": 1000,
                "activeDeadlineSeconds": 3,
                "template": {
                    "spec": {
                        "restartPolicy": "OnFailure",
                        "containers": [
                            {
                                "image": "trainjobs/chainer:7.8.1",
                                "command": ["sh", "-c", "echo started; exit 3"],
                            }
                        ],
                    }
                },
            }
        },
    }
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(document), encoding="utf-8")

    run = Run(job, tmp_path / "run")

    assert run.exit_code == 1
    assert run.pod_log("crashloop-master") == ["started", "started"]
    assert run.summary["reason"] == "DeadlineExceeded"
    restarts = [line for line in run.lines if "restarting the container in place" in line]
    assert [line.split("; ", 1)[1] for line in restarts] == [
        "restarting the container in place (restartPolicy OnFailure, retry 1 of backoffLimit 1000)",
        "restarting the container in place in 10s (back-off) (restartPolicy OnFailure, retry 2 "
        "of backoffLimit 1000)",
    ]
