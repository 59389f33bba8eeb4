"""What a container of a container run can reach of this machine, checked from inside it.

A pod gets what a Kubernetes node enforcing Pod Security "baseline" gives it and nothing of
the host: no host path (a mount path with commas is one literal path, not more mount
options), no host process (its own PID namespace), no capability beyond the granted set, no
new privileges, the engine's seccomp filter; the spec's env reaches the container only, never
the environment of the engine client running on the host. Specs asking for more exit 2
before anything is created, naming every field.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.local.container.test_runtime import (
    CONTAINER,
    QUICK_STOP,
    left_by,
    single_pod,
    write_job,
)
from tests.local.runs import Run
from trainjobs.cli import main
from trainjobs.local.files import read_log

IMAGE = "trainjobs/chainer:7.8.1"
needs_image = pytest.mark.needs_images(IMAGE)
BASELINE_CAPS = "00000000a80405fb"
"""AUDIT_WRITE CHOWN DAC_OVERRIDE FOWNER FSETID KILL MKNOD NET_BIND_SERVICE SETFCAP SETGID
SETPCAP SETUID SYS_CHROOT: baseline's list (bits 29 0 1 3 4 5 27 10 31 6 8 7 18)."""
HOSTILE_MOUNT = "/data,src=/,dst=/hostroot"


@pytest.fixture
def host_secret() -> Iterator[Path]:
    """A file only the host has, at a path no image has."""
    directory = Path("/tmp") / f"trainjobs-host-{uuid.uuid4().hex}"
    directory.mkdir(mode=0o700)
    secret = directory / "secret"
    secret.write_text("host only\n")
    yield secret
    secret.unlink()
    directory.rmdir()


PROBE = """\
test -d "$MOUNTED" && echo "literal mount path: a directory"
test -e /hostroot && echo "/hostroot: present" || echo "/hostroot: absent"
cat "/hostroot$SECRET" 2>/dev/null || echo "host file through /hostroot: unreadable"
cat "$SECRET" 2>/dev/null || echo "host file: unreadable"
test -e "/proc/$HOST_PID" && echo "host process: visible" || echo "host process: invisible"
echo "pid namespace: $(readlink /proc/self/ns/pid)"
grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status | tr -d '\\t'
"""


def probe_job(secret: Path, **container: Any) -> dict[str, Any]:
    job = single_pod("probe", IMAGE, ["sh", "-c", PROBE])
    template = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    template["volumes"] = [{"name": "data", "emptyDir": {}}]
    template["containers"][0].update(
        env=[
            {"name": "MOUNTED", "value": HOSTILE_MOUNT},
            {"name": "SECRET", "value": str(secret)},
            {"name": "HOST_PID", "value": str(os.getpid())},
        ],
        volumeMounts=[{"name": "data", "mountPath": HOSTILE_MOUNT}],
        **container,
    )
    return job


@needs_image
def test_a_container_reaches_no_host_path_process_or_privilege(tmp_path: Path, host_secret):
    run = Run(
        write_job(tmp_path / "job.yaml", probe_job(host_secret)), tmp_path / "run", *CONTAINER
    )

    assert run.exit_code == 0, run.output
    log = run.pod_log("probe-master-0")
    assert log[:5] + log[6:] == [
        "literal mount path: a directory",
        "/hostroot: absent",
        "host file through /hostroot: unreadable",
        "host file: unreadable",
        "host process: invisible",
        "CapPrm:" + BASELINE_CAPS,
        "CapEff:" + BASELINE_CAPS,
        "CapBnd:" + BASELINE_CAPS,
        "CapAmb:0000000000000000",
        "NoNewPrivs:1",
        "Seccomp:2",
    ]
    assert log[5].startswith("pid namespace: pid:[")
    assert log[5] != f"pid namespace: {os.readlink('/proc/self/ns/pid')}"
    assert left_by(run) == []


@needs_image
def test_a_container_gets_exactly_the_capabilities_its_spec_grants(tmp_path: Path, host_secret):
    security = {"capabilities": {"drop": ["ALL"], "add": ["CHOWN", "NET_BIND_SERVICE"]}}
    job = probe_job(host_secret, securityContext=security)
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert run.pod_log("probe-master-0")[6:10] == [
        "CapPrm:0000000000000401",
        "CapEff:0000000000000401",
        "CapBnd:0000000000000401",
        "CapAmb:0000000000000000",
    ]


@needs_image
def test_the_specs_env_reaches_the_container_never_the_engine_client(tmp_path: Path):
    marker = f"marker-{uuid.uuid4().hex}"
    job = single_pod(
        "envprobe",
        IMAGE,
        ["sh", "-c", 'echo "in the container: $PROBE_VALUE"; exec sleep 600'],
        **QUICK_STOP,
    )
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    container["env"] = [{"name": "PROBE_VALUE", "value": marker}]
    client_environments: list[bytes] = []

    def inspect_client(line: str, process: subprocess.Popen[str]) -> None:
        if line.startswith("[envprobe-master-0] in the container: "):
            client_environments.extend(_engine_clients("envprobe-master-0-pytorch"))
            process.terminate()

    Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER, on_line=inspect_client)

    assert read_log(tmp_path / "run" / "logs" / "envprobe-master-0.log") == [
        f"in the container: {marker}"
    ]
    assert len(client_environments) == 1
    assert marker.encode() not in client_environments[0]
    assert b"PROBE_VALUE" not in client_environments[0]


def _engine_clients(container: str) -> list[bytes]:
    """The environments of the host processes running ``<engine> run --name=...container``."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            if b"run" in argv and any(a.endswith(container.encode()) for a in argv):
                found.append((entry / "environ").read_bytes())
        except OSError:
            continue
    return found


@needs_image
def test_a_sub_path_an_init_container_turned_into_a_link_out_is_not_mounted(
    tmp_path: Path, host_secret: Path
):
    job = single_pod("subpath", IMAGE, ["sh", "-c", f"cat /mnt{host_secret}"])
    template = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]
    template["volumes"] = [{"name": "data", "emptyDir": {}}]
    template["containers"][0]["volumeMounts"] = [
        {"name": "data", "mountPath": "/mnt", "subPath": "sub"}
    ]
    template["initContainers"] = [
        {
            "name": "swap",
            "image": IMAGE,
            "command": ["ln", "-s", "/", "/data/sub"],
            "volumeMounts": [{"name": "data", "mountPath": "/data"}],
        }
    ]
    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["message"]) == (
        "Failed",
        "Job/subpath-master-0 pod template spec.containers[0].volumeMounts[0].subPath: 'sub' "
        "now leads outside its volume (a container replaced it with a link); container pytorch "
        "of pod subpath-master-0 is not started",
    )
    assert not (tmp_path / "run" / "logs" / "subpath-master-0.log").exists()  # no output
    assert not any("host only" in line for line in run.lines)
    assert left_by(run) == []


# -- refused before anything is created ---------------------------------------------------------


def _refused(tmp_path: Path, capsys: pytest.CaptureFixture, **pod: Any) -> str:
    job = single_pod("asks", IMAGE, ["true"], **pod)
    arguments = ["run", str(write_job(tmp_path / "job.yaml", job)), "--run-dir"]
    assert main([*arguments, str(tmp_path / "run"), *CONTAINER]) == 2
    assert not (tmp_path / "run").exists()
    return capsys.readouterr().err


HEADER = (
    "error: the job asks for more than Pod Security 'baseline' allows (local runs give pods "
    "what Pod Security 'baseline' allows; remove it or run on a cluster):\n"
)
WHERE = "Job/asks-master-0 pod template"


def test_sys_admin_or_host_pid_is_refused_naming_each_field(tmp_path: Path, capsys):
    container = {
        "name": "setup",
        "image": IMAGE,
        "command": ["true"],
        "securityContext": {"capabilities": {"add": ["SYS_ADMIN", "CHOWN", "ALL"]}},
    }
    error = _refused(tmp_path, capsys, hostPID=True, initContainers=[container])

    caps = (
        "only these capabilities may be added: AUDIT_WRITE, CHOWN, DAC_OVERRIDE, FOWNER, "
        "FSETID, KILL, MKNOD, NET_BIND_SERVICE, SETFCAP, SETGID, SETPCAP, SETUID, SYS_CHROOT"
    )
    assert error == (
        HEADER
        + f"  {WHERE} spec.hostPID: Forbidden: true: the host's namespaces are not shared with "
        "pods\n"
        f"  {WHERE} spec.initContainers[0].securityContext.capabilities.add[0]: Forbidden: "
        f'"SYS_ADMIN": {caps}\n'
        f"  {WHERE} spec.initContainers[0].securityContext.capabilities.add[2]: Forbidden: "
        f'"ALL": {caps}\n'
    )


def test_every_other_baseline_field_is_refused(tmp_path: Path, capsys):
    container = {
        "name": "pytorch",
        "image": IMAGE,
        "command": ["true"],
        "ports": [{"containerPort": 80, "hostPort": 8080}],
        "securityContext": {
            "privileged": True,
            "procMount": "Unmasked",
            "seccompProfile": {"type": "Unconfined"},
            "appArmorProfile": {"type": "Unconfined"},
            "seLinuxOptions": {"type": "spc_t", "user": "system_u"},
        },
        "livenessProbe": {"tcpSocket": {"port": 80, "host": "10.0.0.1"}},
    }
    error = _refused(
        tmp_path,
        capsys,
        hostNetwork=True,
        hostIPC=True,
        securityContext={"sysctls": [{"name": "kernel.core_pattern", "value": "|/x"}]},
        containers=[container],
    )

    lines = error.splitlines()
    assert lines[0] == HEADER.rstrip("\n")
    assert [line.split(": Forbidden")[0].removeprefix(f"  {WHERE} ") for line in lines[1:]] == [
        "spec.hostNetwork",
        "spec.hostIPC",
        "spec.securityContext.sysctls[0].name",
        "spec.containers[0].securityContext.privileged",
        "spec.containers[0].securityContext.procMount",
        "spec.containers[0].securityContext.seccompProfile.type",
        "spec.containers[0].securityContext.appArmorProfile.type",
        "spec.containers[0].securityContext.seLinuxOptions.type",
        "spec.containers[0].securityContext.seLinuxOptions.user",
        "spec.containers[0].ports[0].hostPort",
        "spec.containers[0].livenessProbe.tcpSocket.host",
    ]


def test_the_process_runtime_refuses_the_same_fields(tmp_path: Path, capsys):
    job = single_pod("asks", IMAGE, ["true"], hostPID=True)
    arguments = ["run", str(write_job(tmp_path / "job.yaml", job)), "--run-dir"]

    assert main([*arguments, str(tmp_path / "run")]) == 2
    assert capsys.readouterr().err == (
        HEADER + f"  {WHERE} spec.hostPID: Forbidden: true: the host's namespaces are not shared "
        "with pods\n"
    )


def test_an_env_value_with_a_newline_is_refused_naming_the_field(tmp_path: Path, capsys):
    job = single_pod("asks", IMAGE, ["true"])
    container = job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]
    container["env"] = [
        {"name": "OK", "value": "1"},
        {"name": "LD_PRELOAD", "value": "/pod/emptydir/evil.so\nX=1"},
    ]
    arguments = ["run", str(write_job(tmp_path / "job.yaml", job)), "--run-dir"]

    assert main([*arguments, str(tmp_path / "run"), *CONTAINER]) == 2
    assert capsys.readouterr().err == (
        f"error: {WHERE} spec.containers[0].env[1]: "
        "LD_PRELOAD: contains a line break (or NUL), which a container run cannot pass to the "
        "container privately (the engine reads env files line by line); put multi-line text in "
        "a ConfigMap volume, or use --runtime process\n"
    )
    assert list((tmp_path / "run").iterdir()) == []  # the run directory given, left empty


@pytest.mark.parametrize("image", ["--help", "-v", "a b", "trainjobs/chainer:7.8.1\n"])
def test_an_image_that_is_not_a_reference_is_refused_before_the_engine(
    tmp_path: Path, capsys, image: str
):
    job = single_pod("asks", image, ["true"])
    arguments = ["run", str(write_job(tmp_path / "job.yaml", job)), "--run-dir"]

    assert main([*arguments, str(tmp_path / "run"), *CONTAINER]) == 2
    error = capsys.readouterr().err
    assert error == (
        f"error: {WHERE} spec.containers[0].image: {image!r}: not a valid image reference "
        "([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case repository); name the image as a "
        "registry would\n"
    )
