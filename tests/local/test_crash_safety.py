"""Faults during a local run: a SIGKILLed runtime is cleaned up after (by the next run or by
``trainjobs clean``), a full disk ends in one clear line, log files that cannot be written
leave the output flowing, bad run directories are refused in one line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, small_tmpfs
from tests.local.runs import (
    Run,
    leaks,
    leaks_of,
    needs_open_mpi,
    needs_pod_network,
    sigkill_run_at,
)
from trainjobs.cli import main
from trainjobs.core.errors import EnvironmentFailure
from trainjobs.local import ledger
from trainjobs.local.containers import materialise_config_map
from trainjobs.local.pods import LogSink

DISTRIBUTED = REPO / "jobs" / "chainermn-mnist.yaml"
TRAINJOBS = [sys.executable, "-m", "trainjobs.cli"]
TRAINING = "[killed-master] epoch 1/"
"""The long job's first epoch: the runtime is SIGKILLed once it trains."""


def quick_job(path: Path, name: str = "quick", command: tuple[str, ...] = ("echo", "done")) -> Path:
    """A single pod that runs ``command`` (by default: prints one line and ends)."""
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": name},
        "spec": {
            "master": {
                "template": {
                    "spec": {
                        "containers": [
                            {"image": "trainjobs/chainer:7.8.1", "command": list(command)}
                        ]
                    }
                }
            }
        },
    }
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


def long_job(path: Path) -> Path:
    document = yaml.safe_load(DISTRIBUTED.read_text(encoding="utf-8"))
    document["metadata"]["name"] = "killed"
    document["spec"]["master"]["template"]["spec"]["containers"][0]["command"] += [
        "--epochs",
        "100000",
    ]
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


@pytest.fixture
def killed_run(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A distributed run whose runtime was SIGKILLed mid-training: its run dir and run id."""
    run_dir = tmp_path / "killed"
    sigkill_run_at(long_job(tmp_path / "long.yaml"), run_dir, TRAINING)
    [record] = [p for p in ledger.state_directory().iterdir() if p.suffix == ".json"]
    run_id = record.stem
    # Everything is still there: processes, namespaces, links, /etc/netns entries.
    left = leaks_of(run_dir, run_id)
    assert any(item.startswith("process ") for item in left)
    assert any(item.startswith("netns ") for item in left)
    assert any(item.startswith("link ") for item in left)
    assert any(item.startswith("/etc/netns/") for item in left)
    assert not (run_dir / "summary.json").exists()
    yield run_dir, run_id
    subprocess.run([*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, check=False)


@needs_pod_network
def test_trainjobs_clean_removes_what_a_killed_run_left_and_says_so(killed_run):
    run_dir, run_id = killed_run
    cleaned = subprocess.run(
        [*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert cleaned.returncode == 0, cleaned.stderr
    [line] = cleaned.stdout.splitlines()
    prefix = f"run {run_id} of job killed (pid "
    assert line.startswith(prefix)
    removed = line.split("removed what it left: ", 1)[1].split(", ")
    assert f"link tj-{run_id}" in removed
    assert f"netns tj-{run_id}-killed-master" in removed
    assert f"/etc/netns/tj-{run_id}-killed-master" in removed
    assert any(item.startswith("process ") for item in removed)
    assert leaks_of(run_dir, run_id) == []
    summary = json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))
    assert (summary["outcome"], summary["reason"], summary["leftovers"]) == (
        "Interrupted",
        "Killed",
        [],
    )
    # The summary replaces the start record, as a run that ends does (`runs` reads one).
    assert sorted(p.name for p in run_dir.glob("*.json")) == ["pods.json", "summary.json"]
    again = subprocess.run([*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, text=True)
    assert again.stdout == "nothing to clean: no killed run left anything behind\n"


@needs_pod_network
def test_the_next_run_cleans_up_after_a_killed_run_first(killed_run, tmp_path):
    run_dir, run_id = killed_run
    following = Run(quick_job(tmp_path / "quick.yaml"), tmp_path / "next")
    assert following.exit_code == 0
    assert following.lines[0].startswith(
        f"[trainjobs] run {run_id} of job killed (pid "
    ) and following.lines[0].split(") ", 1)[1].startswith(
        "ended without cleaning up (it was killed or crashed); removed what it left: process "
    )
    assert leaks_of(run_dir, run_id) == []
    assert leaks(following) == []


def test_clean_removes_the_temporary_files_a_killed_writer_left(tmp_path):
    run_dir = tmp_path / "run"
    (run_dir / "manifests").mkdir(parents=True)
    half_written = [run_dir / ".pods.json.k2j3.tmp", run_dir / "manifests" / ".01-x.yaml.a1.tmp"]
    for path in half_written:
        path.write_text("{", encoding="utf-8")
    (run_dir / "pods.json").write_text("{}", encoding="utf-8")
    dead_owner = subprocess.Popen(["true"])
    dead_owner.wait()
    record = {
        "runId": "0dead0",
        "job": "demo",
        "runDir": str(run_dir),
        "owner": {"pid": dead_owner.pid, "starttime": "0"},
        "created": [{"kind": "temporary-files", "directory": str(run_dir)}],
    }
    (ledger.state_directory() / "0dead0.json").write_text(json.dumps(record), encoding="utf-8")

    [dead] = ledger.clean_dead_runs()

    assert sorted(dead.removed) == sorted(f"temporary file {path}" for path in half_written)
    assert sorted(p.name for p in run_dir.rglob("*")) == ["manifests", "pods.json"]
    assert not (ledger.state_directory() / "0dead0.json").exists()


def test_a_live_runs_record_is_left_alone(tmp_path):
    record = {
        "runId": "11ve11",
        "job": "demo",
        "runDir": str(tmp_path),
        "owner": {"pid": os.getpid(), "starttime": None},
        "created": [],
    }
    path = ledger.state_directory() / "11ve11.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    try:
        assert ledger.clean_dead_runs() == []
        assert path.exists()
    finally:
        path.unlink()


def test_a_state_directory_others_may_write_is_refused_and_left_as_it_is(tmp_path, monkeypatch):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    monkeypatch.setenv(ledger.STATE_ENV, str(shared))
    with pytest.raises(EnvironmentFailure) as refused:
        ledger.clean_dead_runs()
    assert str(refused.value) == (
        f"{shared} (TRAINJOBS_STATE_DIR) may be written by other users (mode 0777); run "
        f"records must be in a directory only uid {os.geteuid()} can write: unset "
        "TRAINJOBS_STATE_DIR or give a private (0700) one"
    )
    assert oct(shared.stat().st_mode & 0o7777) == "0o777"


def test_a_missing_state_directory_is_created_private(tmp_path, monkeypatch):
    fresh = tmp_path / "fresh" / "records"
    monkeypatch.setenv(ledger.STATE_ENV, str(fresh))
    opened = ledger.Ledger.open("demo", tmp_path, lambda _: False)
    opened.close()
    assert oct(fresh.stat().st_mode & 0o7777) == "0o700"


def _planted_ledger(directory: Path, victim: Path, marker: Path, tmp_path: Path) -> Path:
    """Another user's ledger: a dead owner, a directory to rm -rf, a program to run."""
    program = tmp_path / "evil-engine"
    program.write_text(f"#!/bin/sh\ntouch {marker}\n", encoding="utf-8")
    program.chmod(0o755)
    dead = subprocess.Popen(["true"])
    dead.wait()
    record = {
        "runId": "ev11ed",
        "job": "evil",
        "runDir": str(victim),
        "owner": {"pid": dead.pid, "starttime": "0"},
        "created": [
            {"kind": "ssh-keys", "directories": [str(victim)]},
            {
                "kind": "engine-pod",
                "engine": "podman",
                "executable": str(program),
                "run": "x",
                "name": "x",
            },
        ],
    }
    path = directory / "ev11ed.json"
    path.write_text(json.dumps(record), encoding="utf-8")
    os.chown(path, 65534, 65534)
    return path


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep", encoding="utf-8")
    return victim


def test_a_shared_state_directory_with_a_planted_ledger_steers_nothing(
    tmp_path, monkeypatch, capsys, victim
):
    # The attacker's side: TRAINJOBS_STATE_DIR on a shared directory like /tmp (1777).
    if os.geteuid() != 0:
        pytest.skip("needs root to plant a file as another user")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    marker = tmp_path / "ran"
    planted = _planted_ledger(shared, victim, marker, tmp_path)
    monkeypatch.setenv(ledger.STATE_ENV, str(shared))

    assert main(["clean"]) == 1
    refusal = (
        f"error: {shared} (TRAINJOBS_STATE_DIR) may be written by other users (mode 1777); run "
        f"records must be in a directory only uid {os.geteuid()} can write: unset "
        "TRAINJOBS_STATE_DIR or give a private (0700) one\n"
    )
    assert capsys.readouterr().err == refusal
    job = quick_job(tmp_path / "quick.yaml")
    assert main(["run", str(job), "--run-dir", str(tmp_path / "run")]) == 1
    assert capsys.readouterr().err == refusal

    assert (victim / "precious").read_text(encoding="utf-8") == "keep"
    assert not marker.exists()
    assert planted.exists()
    assert oct(shared.stat().st_mode & 0o7777) == "0o1777"


def test_a_ledger_another_user_owns_is_refused_even_in_a_private_directory(
    tmp_path, monkeypatch, capsys, victim
):
    if os.geteuid() != 0:
        pytest.skip("needs root to plant a file as another user")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    marker = tmp_path / "ran"
    planted = _planted_ledger(private, victim, marker, tmp_path)
    monkeypatch.setenv(ledger.STATE_ENV, str(private))

    assert main(["clean"]) == 1
    assert capsys.readouterr().err == (
        f"error: run record {planted} is owned by uid 65534; remove it (clean-up follows only "
        f"records uid {os.geteuid()} alone can write)\n"
    )
    assert (victim / "precious").read_text(encoding="utf-8") == "keep"
    assert not marker.exists()


def test_a_ledger_that_is_a_symbolic_link_is_refused(tmp_path, monkeypatch, capsys, victim):
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    marker = tmp_path / "ran"
    target = _planted_ledger(elsewhere, victim, marker, tmp_path)
    (private / "ev11ed.json").symlink_to(target)
    monkeypatch.setenv(ledger.STATE_ENV, str(private))

    assert main(["clean"]) == 1
    assert capsys.readouterr().err == (
        f"error: run record {private / 'ev11ed.json'} is a symbolic link; remove it (clean-up "
        "follows only records this user wrote)\n"
    )
    assert (victim / "precious").read_text(encoding="utf-8") == "keep"
    assert not marker.exists()


def test_a_state_directory_another_user_owns_is_refused(tmp_path, monkeypatch, capsys):
    # Clean-up does what the records say: records someone else can write would steer it.
    if os.geteuid() != 0:
        pytest.skip("needs root to give a directory to another user")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    monkeypatch.setenv(ledger.STATE_ENV, str(theirs))
    assert main(["clean"]) == 1
    assert capsys.readouterr().err == (
        f"error: {theirs} (TRAINJOBS_STATE_DIR) is owned by uid 65534; run records must be in "
        f"a directory only uid {os.geteuid()} can write: unset TRAINJOBS_STATE_DIR or give a "
        "private (0700) one\n"
    )


@needs_pod_network
def test_the_sandbox_a_killed_run_left_holds_none_of_its_output_open(tmp_path):
    """Whoever reads a run's output (a pipe, a CI log) sees it end when the run ends, even
    SIGKILLed: the pod sandboxes it leaves for `trainjobs clean` hold neither stream."""
    job = quick_job(tmp_path / "quick.yaml", command=("sleep", "120"))
    started = subprocess.Popen(
        [*TRAINJOBS, "run", str(job), "--run-dir", str(tmp_path / "run")],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while "sleep\x00120\x00" not in children_commands(started.pid):
            assert time.monotonic() < deadline and started.poll() is None
            time.sleep(0.1)
        started.kill()
        out, err = started.communicate(timeout=10)
        assert (started.returncode, out.splitlines()[-1], err) == (
            -signal.SIGKILL,
            "[trainjobs] pod quick-master: attempt 1 of at most 7",
            "",
        )
    finally:
        started.kill()
        subprocess.run([*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, check=False)


def children_commands(pid: int) -> list[str]:
    """The command lines (NUL-separated, as /proc has them) of ``pid``'s child processes."""
    commands = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            # After the command's closing parenthesis: the state, then the parent's PID.
            if stat.read_text().rsplit(")", 1)[1].split()[1] == str(pid):
                commands.append((stat.parent / "cmdline").read_text())
    return commands


READY_THEN_RUN = (
    "import os, runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "os.write({fd}, b'ready'); os.close({fd}); "
    "runpy.run_module('trainjobs.cli', run_name='__main__', alter_sys=True)"
)
"""`python -m trainjobs.cli`, saying first that the interpreter is up (its own start-up, before
any trainjobs code runs, is no part of what is tested; on a loaded machine it takes seconds).
Ctrl-C is set up as a terminal's shell leaves it, whatever the suite inherited: a suite
started in the background of a script (`make test &`) inherits SIGINT ignored, and so would
the run, until it installs its own handlers."""


def python_then(fd: int) -> list[str]:
    return [sys.executable, "-c", READY_THEN_RUN.format(fd=fd)]


@pytest.mark.parametrize("delay", [0.1, 0.2, 0.4, 0.7, 1.0, 1.5])
def test_ctrl_c_in_the_first_seconds_exits_130_in_one_line_leaving_nothing(tmp_path, delay):
    # The pod outlives every delay, so the Ctrl-C always lands before the job could end.
    job = quick_job(tmp_path / "quick.yaml", command=("sleep", "120"))
    run_dir = tmp_path / "run"
    ready, say_ready = os.pipe()
    started = subprocess.Popen(
        [*python_then(say_ready), "run", str(job), "--run-dir", str(run_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        pass_fds=(say_ready,),
    )
    os.close(say_ready)
    with os.fdopen(ready, "rb") as pipe:
        assert pipe.read() == b"ready"
    time.sleep(delay)
    started.send_signal(signal.SIGINT)
    try:
        _, err = started.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        # Fail with what the run was doing, and leave nothing for the next test to find.
        tree = subprocess.run(
            ["ps", "-e", "-o", "pid,ppid,stat,wchan:20,args", "--forest"],
            capture_output=True,
            text=True,
        ).stdout
        started.kill()
        try:
            out, _ = started.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            out = "(held open by a process the run left)"
        subprocess.run([*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, check=False)
        pytest.fail(f"no exit 60 s after SIGINT; the processes:\n{tree}\nits output:\n{out}")

    assert (started.returncode, "Traceback" not in err) == (130, True), err
    assert len(err.splitlines()) <= 1
    assert [p.name for p in ledger.state_directory().iterdir() if p.suffix == ".json"] == []
    assert not run_dir.exists() or summary_of(run_dir)["outcome"] == "Interrupted"


def summary_of(run_dir: Path) -> dict[str, object]:
    return json.loads((run_dir / "summary.json").read_text(encoding="utf-8"))


@pytest.fixture
def tiny_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs (root only)."""
    with small_tmpfs(tmp_path / "tiny") as mount_point:
        yield mount_point


@needs_pod_network
def test_a_run_on_a_64_kib_tmpfs_ends_with_a_clean_error(tiny_tmpfs):
    run = Run(DISTRIBUTED, tiny_tmpfs / "run")
    assert run.exit_code == 1
    assert "Traceback" not in run.stderr + "\n".join(run.lines)
    assert "[trainjobs] === chainermn-mnist: Failed (Error) ===" in run.lines
    message = next(line for line in run.lines if line.startswith("[trainjobs] message:  "))
    assert message.endswith(": No space left on device")
    assert message.startswith(f"[trainjobs] message:  cannot write {tiny_tmpfs / 'run'}/")
    assert leaks(run) == []


def test_a_config_map_file_the_disk_cannot_hold_is_named_in_the_error(tiny_tmpfs):
    target = tiny_tmpfs / "volume"
    with pytest.raises(OSError) as raised:
        materialise_config_map(target, {"big.sh": "x" * 200_000}, 0o644, None)
    assert (raised.value.strerror, raised.value.filename) == (
        "No space left on device",
        str(target / "big.sh"),
    )


def test_output_keeps_flowing_when_the_log_file_cannot_be_written(tiny_tmpfs):
    stream = io.StringIO()
    sink = LogSink(stream, tiny_tmpfs)
    line = "x" * 1000
    for _ in range(200):
        sink.line("demo-master", line)
    sink.line("demo-master", "last line")
    sink.close()
    shown = stream.getvalue().splitlines()
    notices = [text for text in shown if text.startswith("[trainjobs]")]
    assert notices == [
        f"[trainjobs] {tiny_tmpfs}/demo-master.log: cannot write (No space left on device); the "
        "output of pod demo-master continues here only"
    ]
    assert shown.count(f"[demo-master] {line}") == 200
    assert shown[-1] == "[demo-master] last line"


@pytest.mark.parametrize(
    ("prepare", "expected", "code"),
    [
        (
            lambda d: d.symlink_to(d.parent / "nowhere"),
            "error: --run-dir {d}: a symbolic link to nothing; give a directory",
            2,
        ),
        (
            lambda d: d.write_text("x", encoding="utf-8"),
            "error: --run-dir {d}: exists and is not a directory; give a new or empty directory",
            2,
        ),
    ],
    ids=["dangling-symlink", "a-file"],
)
def test_a_run_directory_that_cannot_be_one_is_refused_in_one_line(
    tmp_path, capsys, prepare, expected, code
):
    run_dir = tmp_path / "run"
    prepare(run_dir)
    job = quick_job(tmp_path / "quick.yaml")
    assert main(["run", str(job), "--run-dir", str(run_dir), "--network", "loopback"]) == code
    assert capsys.readouterr().err == expected.format(d=run_dir) + "\n"


def test_a_run_directory_on_a_read_only_mount_is_refused_in_one_line(tmp_path, capsys):
    with small_tmpfs(tmp_path / "ro", read_only=True) as mount_point:
        job = quick_job(tmp_path / "quick.yaml")
        run_dir = mount_point / "run"
        assert main(["run", str(job), "--run-dir", str(run_dir), "--network", "loopback"]) == 1
        assert capsys.readouterr().err == f"error: --run-dir {run_dir}: Read-only file system\n"


@needs_open_mpi
def test_two_runs_started_together_get_their_own_run_directories(tmp_path):
    job = quick_job(tmp_path / "quick.yaml")
    command = [*TRAINJOBS, "run", str(job), "--network", "loopback"]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    runs = [
        subprocess.Popen(command, cwd=tmp_path, env=env, stdout=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    outputs = [run.communicate()[0] for run in runs]
    assert [run.returncode for run in runs] == [0, 0]
    directories = sorted(p.name for p in (tmp_path / "out" / "runs").iterdir())
    assert len(directories) == 2
    assert all((tmp_path / "out" / "runs" / d / "summary.json").is_file() for d in directories)
    assert all("[quick-master] done" in output for output in outputs)


def test_a_killed_runtime_not_yet_reaped_by_its_parent_counts_as_dead(tmp_path):
    # After kill -9 the runtime is a zombie until its parent waits for it: its run is dead.
    zombie = subprocess.Popen(["sleep", "60"])
    zombie.kill()
    time.sleep(0.2)
    state = Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    assert state == "Z"
    starttime = Path(f"/proc/{zombie.pid}/stat").read_text().rsplit(")", 1)[1].split()[19]
    record = {
        "runId": "2omb1e",
        "job": "demo",
        "runDir": str(tmp_path),
        "owner": {"pid": zombie.pid, "starttime": starttime},
        "created": [],
    }
    (ledger.state_directory() / "2omb1e.json").write_text(json.dumps(record), encoding="utf-8")
    try:
        assert [dead.run_id for dead in ledger.clean_dead_runs()] == ["2omb1e"]
    finally:
        zombie.wait()


@needs_pod_network
def test_a_killed_ssh_runs_key_pair_and_its_copies_are_removed_by_the_clean_up(tmp_path):
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        pytest.skip("needs Debian's openssh-server (make system-deps)")
    run_dir = tmp_path / "killed"
    sigkill_run_at(long_job(tmp_path / "long.yaml"), run_dir, TRAINING, "--mpi-transport", "ssh")
    keys = [run_dir / "ssh", *sorted(run_dir.glob("pods/*/volumes/trainjobs-ssh"))]
    assert len(keys) >= 2 and all(path.is_dir() for path in keys)

    cleaned = subprocess.run(
        [*TRAINJOBS, "clean"], cwd=REPO, capture_output=True, text=True, check=False
    )

    assert cleaned.returncode == 0, cleaned.stderr
    removed = cleaned.stdout.split("removed what it left: ", 1)[1].strip().split(", ")
    assert {f"key directory {path}" for path in keys} <= set(removed)
    assert [path for path in keys if path.exists()] == []
    assert leaks_of(run_dir, json.loads((run_dir / "summary.json").read_text())["runId"]) == []
