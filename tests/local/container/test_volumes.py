"""emptyDir volumes of a container run: their sizeLimit holds, and nothing of them outlives it.

A size limit is a tmpfs of that size (see :mod:`trainjobs.local.container.volumes` for why
not the kubelet's eviction); an emptyDir's content, device nodes included, goes when the run
ends, and with ``trainjobs clean`` after a SIGKILL.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.local.container.test_isolation import IMAGE, needs_image
from tests.local.container.test_runtime import CONTAINER, QUICK_STOP, left_by, single_pod, write_job
from tests.local.runs import Run, sigkill_run_at
from trainjobs.cli import main

WRITE_200MB = (
    'dd if=/dev/zero of=/data/big bs=1M count=200 2>/dev/null; echo "dd exit $?"; wc -c < /data/big'
)
LEAVE_FILES = (
    "echo secret > /data/file && mknod /data/null c 1 3 && mkdir /data/dir && echo started"
)


def with_empty_dir(name: str, script: str, empty_dir: dict[str, str], **pod: object) -> dict:
    job = single_pod(name, IMAGE, ["sh", "-c", script], **pod)
    template = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    template["volumes"] = [{"name": "data", "emptyDir": empty_dir}]
    template["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    return job


@needs_image
def test_an_empty_dir_holds_no_more_than_its_size_limit(tmp_path: Path):
    job = with_empty_dir("limited", WRITE_200MB, {"sizeLimit": "10Mi"})

    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert run.pod_log("limited-master-0") == ["dd exit 1", "10485760"]
    assert left_by(run) == []


@needs_image
def test_empty_dir_contents_device_nodes_included_go_with_the_run(tmp_path: Path):
    job = with_empty_dir("leaves", LEAVE_FILES, {})

    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert run.pod_log("leaves-master-0") == ["started"]
    pod = tmp_path / "run" / "pods" / "leaves-master-0"
    assert sorted(path.name for path in (pod / "volumes").iterdir()) == []
    assert left_by(run) == []


@needs_image
def test_empty_dir_contents_of_a_sigkilled_run_go_with_trainjobs_clean(tmp_path: Path):
    job = with_empty_dir(
        "killed", LEAVE_FILES + " && sleep 600", {"sizeLimit": "1Mi"}, **QUICK_STOP
    )
    sigkill_run_at(write_job(tmp_path / "job.yaml", job), tmp_path / "run", "[killed-", *CONTAINER)
    volume = tmp_path / "run" / "pods" / "killed-master-0" / "volumes" / "data"
    assert sorted(path.name for path in volume.iterdir()) == ["dir", "file", "null"]

    clean = subprocess.run(
        [sys.executable, "-m", "trainjobs.cli", "clean"], cwd=REPO, capture_output=True, text=True
    )

    assert clean.returncode == 0
    run_id = json.loads((tmp_path / "run" / "summary.json").read_text())["runId"]
    report = next(line for line in clean.stdout.splitlines() if line.startswith(f"run {run_id} "))
    assert f"emptyDir {volume}" in report
    assert not volume.exists()
    assert not any(
        str(volume) in line for line in Path("/proc/self/mountinfo").read_text().splitlines()
    )


@pytest.mark.parametrize(
    ("mount_path", "problem"),
    [
        ("/etc/hosts", "is /etc/hosts, where"),
        ("/root/../etc", "is /etc, which holds /etc/hosts, where"),
    ],
)
@needs_image  # a container run resolves its images before it refuses the mount path
def test_an_ssh_auth_mount_path_over_the_pods_own_files_is_refused_before_any_pod_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture, mount_path: str, problem: str
):
    document = yaml.safe_load((REPO / "jobs" / "mpijob-chainermn.yaml").read_text())
    document["spec"]["sshAuthMountPath"] = mount_path
    job = write_job(tmp_path / "job.yaml", document)

    code = main(["run", str(job), "--run-dir", str(tmp_path / "run"), *CONTAINER])

    assert code == 2
    assert capsys.readouterr().err == (
        "error: Job/mpijob-chainermn-launcher pod template spec.containers[0].volumeMounts[3]"
        f".mountPath: {mount_path!r} {problem} a container run mounts the pod's own file (as "
        "the kubelet does); mount the volume at another path\n"
    )
    assert list((tmp_path / "run").iterdir()) == []  # no pod, key or file was made
