"""A process that clears its environment (so carries no run marker) is still stopped with its
pod on a loopback run, where no network namespace finds it either: it is in its container's
session."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import yaml

from tests.local.runs import Run, leaks


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


def test_a_process_that_clears_its_environment_does_not_survive_a_loopback_run(tmp_path):
    pid_file = tmp_path / "escaped.pid"
    escape = (
        f'env -i /bin/sh -c "echo \\$\\$ > {pid_file}; exec sleep 300" & '
        f"while [ ! -s {pid_file} ]; do sleep 0.05; done; echo escaped"
    )
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "escape"},
        "spec": {
            "master": {
                "template": {
                    "spec": {
                        "containers": [
                            {"image": "trainjobs/chainer:7.8.1", "command": ["sh", "-c", escape]}
                        ]
                    }
                }
            }
        },
    }
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(document), encoding="utf-8")

    run = Run(job, tmp_path / "run", "--network", "loopback")

    pid = int(pid_file.read_text())
    survived = _running(pid)
    if survived:  # do not leave it to the machine
        os.kill(pid, signal.SIGKILL)
    assert run.exit_code == 0
    assert run.pod_log("escape-master") == ["escaped"]
    assert (survived, leaks(run)) == (False, [])
