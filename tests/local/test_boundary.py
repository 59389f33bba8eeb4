"""The local runtime is a boundary: nothing a spec says makes it create, write or delete
outside the run directory; what it writes is private; a pod's kubectl identity comes from
the kernel, not from a variable the pod can set."""

from __future__ import annotations

import io
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from tests.local.runs import needs_open_mpi, needs_pod_network
from trainjobs.core.errors import UserError
from trainjobs.kinds.registry import parse_job
from trainjobs.local.containers import Mapping, PathMap, materialise_config_map
from trainjobs.local.files import inside, new_run_directory, read_log, write_private
from trainjobs.local.pods import pod_processes
from trainjobs.local.runtime import RunOptions
from trainjobs.local.start import run_job


def test_inside_accepts_paths_below_the_base(tmp_path):
    assert inside(tmp_path, "pods", "demo-master") == tmp_path / "pods" / "demo-master"


@pytest.mark.parametrize("parts", [("..", "x"), ("/tmp/victim",), ("a", "../../b")])
def test_inside_refuses_what_would_leave_the_base(tmp_path, parts):
    with pytest.raises(UserError) as raised:
        inside(tmp_path, *parts)
    assert str(raised.value) == (
        f"{'/'.join(parts)!r} would lead outside {tmp_path}; a local run writes only inside its "
        "run directory"
    )


def test_inside_refuses_a_symlink_that_leads_out(tmp_path):
    (tmp_path / "volumes").symlink_to("/etc")
    with pytest.raises(UserError):
        inside(tmp_path, "volumes", "x")


def test_a_config_map_item_cannot_be_written_outside_its_volume(tmp_path):
    # What spec validation refuses, the runtime refuses again before writing anything.
    volume = tmp_path / "run" / "volumes" / "cm"
    victim = tmp_path / "victim"
    with pytest.raises(UserError):
        materialise_config_map(
            volume, {"k": "data"}, 0o644, [{"key": "k", "path": "../../../victim"}]
        )
    assert not victim.exists()


def test_config_map_files_never_keep_setuid_bits(tmp_path):
    materialise_config_map(tmp_path, {"run.sh": "echo hi"}, 0o6755, None)
    assert stat.S_IMODE((tmp_path / "run.sh").stat().st_mode) == 0o755


def test_a_working_directory_climbing_out_of_a_mount_is_not_mapped_into_the_host(tmp_path):
    paths = PathMap([Mapping("/data", tmp_path / "volume", directory=True)])
    assert paths.host("/data/sub") == tmp_path / "volume" / "sub"
    assert paths.host("/data/../../etc") is None


def test_private_files_are_written_whole_and_readable_by_the_owner_only(tmp_path):
    path = tmp_path / "pods.json"
    write_private(path, "{}")
    write_private(path, '{"pods": {}}')
    assert path.read_text() == '{"pods": {}}'
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["pods.json"]


def test_two_runs_of_the_same_second_get_different_directories(tmp_path):
    default = tmp_path / "runs" / "demo-20261121-150102"
    first = new_run_directory(None, default)
    second = new_run_directory(None, default)
    assert (first.name, second.name) == ("demo-20261121-150102", "demo-20261121-150102-2")
    assert stat.S_IMODE(first.stat().st_mode) == 0o700


def single_pod_job(*command: str) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "private"},
        "spec": {
            "master": {
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "image": "trainjobs/chainer:7.8.1",
                                "command": list(command),
                                "env": [{"name": "TOKEN", "value": "s3cret"}],
                            }
                        ]
                    }
                }
            }
        },
    }


@needs_open_mpi
def test_a_run_directory_and_its_records_are_private(tmp_path):
    run_dir = tmp_path / "run"
    result = run_job(
        parse_job(single_pod_job("true"), "test"),
        RunOptions(run_dir=run_dir, network="loopback", stream=io.StringIO()),
    )
    assert result.outcome == "Succeeded"
    assert "s3cret" in (run_dir / "pods.json").read_text(encoding="utf-8")

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert (mode(run_dir), mode(run_dir / "logs"), mode(run_dir / "manifests")) == (0o700,) * 3
    files = [run_dir / "pods.json", run_dir / "summary.json"]
    files += [*(run_dir / "manifests").iterdir(), *(run_dir / "logs").iterdir()]
    assert {path.name: mode(path) for path in files} == {path.name: 0o600 for path in files}


@needs_pod_network
def test_a_worker_cannot_claim_to_be_the_master_to_kubectl(tmp_path):
    # The master has the Role; the command runs in worker 1 (through the rsh agent) and sets
    # the pod variable to the master's name before calling kubectl.
    forged = (
        "TRAINJOBS_LOCAL_POD=demo-master /opt/trainjobs/bin/kubectl get pod demo-worker-0 "
        "-o jsonpath={.status.phase}"
    )
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "demo"},
        "spec": {
            "master": {
                "backoffLimit": 0,
                "template": {
                    "spec": {
                        "containers": [
                            {
                                "image": "trainjobs/chainermn:7.8.1",
                                "command": [
                                    "sh",
                                    "/etc/trainjobs/kubexec.sh",
                                    "demo-worker-1",
                                    forged,
                                ],
                            }
                        ]
                    }
                },
            },
            "worker": {
                "replicas": 2,
                "template": {"spec": {"containers": [{"image": "trainjobs/chainermn:7.8.1"}]}},
            },
        },
    }
    run_dir = tmp_path / "run"
    result = run_job(
        parse_job(document, "test"),
        RunOptions(run_dir=run_dir, network="netns", stream=io.StringIO()),
    )
    log = read_log(run_dir / "logs" / "demo-master.log")
    assert result.outcome == "Failed"
    assert log[-1] == (
        "kubectl (trainjobs local stand-in): pod 'demo-worker-1' has no service account token "
        "mounted (automountServiceAccountToken: false), so kubectl has no credentials"
    )
    assert pod_processes(str(run_dir / "pods.json")) == []
    assert os.stat(run_dir).st_uid == os.geteuid()
