"""The attacker's side of a subPath: a sidecar swaps it for a link to ``/`` around restarts.

A pod of two containers on one emptyDir: the victim mounts its subPath ``sub`` and fails, so
it is restarted in place (restartPolicy OnFailure) many times; the sidecar mounts the whole
volume and, each time the victim exits, swaps ``sub`` for a link to ``/``
(``renameat2(RENAME_EXCHANGE)``) a moment later, holding it until the victim's next start,
then swaps it back: the window between a runtime's check of the path and the engine's mount
of it. The victim must never see the host's root (a marker file the test put in the host's
/tmp), and nothing may be written on the host. Back-off between restarts is set to zero in
the trainjobs process (the test is about the mount, not the kubelet's timing); the loop is
bounded in restarts and in time.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REPO
from tests.local.container.test_isolation import IMAGE, needs_image
from tests.local.container.test_runtime import (
    CONTAINER,
    QUICK_STOP,
    engine_objects,
    write_job,
)
from trainjobs.engines.engine import RUN_LABEL
from trainjobs.local.files import read_log

STARTS = 30
"""Victim starts: the first and 29 restarts in place."""
STEP = "0.03"
"""At restart n, the sidecar swaps the link in n steps (seconds) before the next start is due
(the shortest exit-to-start time seen)."""
LAUNCH = (
    "import sys, time\n"
    "from trainjobs.local.backoff import RestartBackoff\n"
    "RestartBackoff.__init__.__defaults__ = (0.0, 0.0, time.monotonic)\n"
    "from trainjobs.cli import main\n"
    "sys.exit(main(sys.argv[1:]))\n"
)
SIDECAR = """\
import ctypes, os, sys, time
libc = ctypes.CDLL(None, use_errno=True)
def swap():
    libc.renameat2(-100, b"/data/sub", -100, b"/data/link", 2)
os.makedirs("/data/sub", exist_ok=True)
os.symlink("/", "/data/link")
deadline = time.monotonic() + 150
start, gap, step, timed = 1, 5.0, float(sys.argv[1]), 3
while not os.path.exists("/state/done") and time.monotonic() < deadline:
    if not os.path.exists(f"/state/exit-{start}"):
        time.sleep(0.002)
        continue
    exited = time.monotonic()
    # The first restarts are only timed; then the link is swapped in a little earlier before
    # the next start is due each time, sweeping the window between a runtime's look at the
    # path and the engine's mount of it (earlier still, the look itself finds the link).
    attack = start > timed
    if attack:
        time.sleep(max(gap - step * (start - timed), 0.0))
        swap()
    while time.monotonic() - exited < 5 and not os.path.exists(f"/state/started-{start + 1}"):
        time.sleep(0.001)
    if attack:
        swap()
    gap = min(time.monotonic() - exited, gap)
    print(f"sidecar: restart {start}, shortest exit-to-start {gap:.3f}s", flush=True)
    start += 1
print(f"sidecar: {start - 1} restarts", flush=True)
"""
VICTIM = """\
n=$(( $(cat /state/count 2>/dev/null || echo 0) + 1 )); echo $n > /state/count
if [ -e "/mnt$MARKER" ]; then echo "victim: host seen at start $n"; echo x > "/mnt$WRITTEN"; fi
touch /state/started-$n
if [ $n -ge $STARTS ]; then echo "victim: $n starts"; touch /state/done; exit 0; fi
touch /state/exit-$n
exit 1
"""


@pytest.fixture
def host_dir() -> Iterator[Path]:
    directory = Path("/tmp") / f"trainjobs-host-{uuid.uuid4().hex}"
    directory.mkdir(mode=0o700)
    (directory / "marker").write_text("host only\n")
    yield directory
    for path in directory.iterdir():
        path.unlink()
    directory.rmdir()


def race_job(host: Path) -> dict[str, Any]:
    state = {"name": "state", "mountPath": "/state"}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "race"},
        "spec": {
            "runPolicy": {"backoffLimit": STARTS + 5},
            "pytorchReplicaSpecs": {
                "Master": {
                    "replicas": 1,
                    "restartPolicy": "OnFailure",
                    "template": {
                        "spec": {
                            **QUICK_STOP,
                            "volumes": [
                                {"name": "data", "emptyDir": {}},
                                {"name": "state", "emptyDir": {}},
                            ],
                            "containers": [
                                {
                                    "name": "pytorch",
                                    "image": IMAGE,
                                    "command": ["sh", "-c", VICTIM],
                                    "env": [
                                        {"name": "MARKER", "value": str(host / "marker")},
                                        {"name": "WRITTEN", "value": str(host / "written")},
                                        {"name": "STARTS", "value": str(STARTS)},
                                    ],
                                    "volumeMounts": [
                                        {"name": "data", "mountPath": "/mnt", "subPath": "sub"},
                                        state,
                                    ],
                                },
                                {
                                    "name": "sidecar",
                                    "image": IMAGE,
                                    "command": ["python3", "-c", SIDECAR, STEP],
                                    "volumeMounts": [
                                        {"name": "data", "mountPath": "/data"},
                                        state,
                                    ],
                                },
                            ],
                        }
                    },
                }
            },
        },
    }


REFUSED = (
    "Job/race-master-0 pod template spec.containers[0].volumeMounts[0].subPath: 'sub' now "
    "leads outside its volume (a container replaced it with a link); container pytorch of pod "
    "race-master-0 is not started"
)


@needs_image
def test_a_sidecar_swapping_the_sub_path_for_a_link_to_root_never_exposes_the_host(
    tmp_path: Path, host_dir: Path
):
    job = write_job(tmp_path / "job.yaml", race_job(host_dir))
    run_dir = tmp_path / "run"
    command = [sys.executable, "-c", LAUNCH, "run", str(job), "--run-dir", str(run_dir)]
    finished = subprocess.run(
        [*command, *CONTAINER], cwd=REPO, capture_output=True, text=True, timeout=400
    )
    log = read_log(run_dir / "logs" / "race-master-0.log")
    summary = (run_dir / "summary.json").read_text(encoding="utf-8")

    assert not any("host seen" in line for line in log), log
    assert sorted(path.name for path in host_dir.iterdir()) == ["marker"]
    assert (host_dir / "marker").read_text() == "host only\n"
    # Either every start mounted the volume's own directory, or a start found the link and
    # the run stopped there: never a mount of the host.
    if finished.returncode == 0:
        assert f"victim: {STARTS} starts" in log
        assert f"sidecar: {STARTS - 1} restarts" in log
    else:
        assert (finished.returncode, REFUSED in summary) == (1, True), finished.stdout
    run_id = json.loads(summary)["runId"]
    assert engine_objects(f"{RUN_LABEL}={run_id}") == []
