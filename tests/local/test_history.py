"""Run history: run.json and summary.json say what each run was, `trainjobs runs` lists the
runs, and `trainjobs logs` prints or follows their timestamped logs."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.local.runs import Run, needs_open_mpi, needs_pod_network
from trainjobs.cli import main
from trainjobs.kinds.registry import load_job
from trainjobs.local.files import log_record, read_log, without_timestamp
from trainjobs.local.history import list_runs, read_logs, record_start
from trainjobs.local.kubectl import process_start_time

DISTRIBUTED = REPO / "jobs" / "chainermn-mnist.yaml"
SINGLE = REPO / "jobs" / "chainer-mnist.yaml"
STAMP = r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z"


def test_a_log_record_is_the_time_then_the_line_and_reads_back_as_printed():
    record = log_record("epoch 1/20: loss 0.5").decode()
    assert re.fullmatch(rf"{STAMP} epoch 1/20: loss 0\.5\n", record)
    assert without_timestamp(record.rstrip("\n")) == "epoch 1/20: loss 0.5"
    assert without_timestamp("a line without one") == "a line without one"


def fake_run(run_dir: Path, pods: dict[str, list[str]], running: bool) -> None:
    """A run directory as a run writes it; ``running``: this process is its runtime."""
    (run_dir / "logs").mkdir(parents=True)
    for pod, lines in pods.items():
        (run_dir / "logs" / f"{pod}.log").write_text("".join(lines))
    owner = {"pid": os.getpid(), "starttime": process_start_time(os.getpid())}
    if not running:
        owner["pid"] = 0
    record = {
        "job": "demo",
        "runId": "abc123",
        "kind": "ChainerJob",
        "started": "2026-11-25T10:00:00Z",
        "command": ["trainjobs", "run", "demo.yaml"],
        "owner": owner,
    }
    (run_dir / "run.json").write_text(json.dumps(record))


def finish(run_dir: Path, outcome: str = "Succeeded", seconds: float = 12.5) -> None:
    summary = {"job": "demo", "outcome": outcome, "durationSeconds": seconds}
    (run_dir / "summary.json").write_text(json.dumps(summary))


def test_every_pods_lines_in_the_order_they_were_written(tmp_path):
    fake_run(
        tmp_path,
        {
            "demo-master": [
                "2026-11-25T10:00:01.000000Z one\n",
                "2026-11-25T10:00:03.000000Z three\n",
            ],
            "demo-worker-0": ["2026-11-25T10:00:02.000000Z two\n", "2026-11-25T10:00:04.0000"],
        },
        running=False,
    )
    lines: list[str] = []
    read_logs(tmp_path, None, follow=False, timestamps=False, emit=lines.append)
    # A line still being written (no newline yet) is not shown.
    assert lines == ["[demo-master] one", "[demo-worker-0] two", "[demo-master] three"]
    lines.clear()
    read_logs(tmp_path, "demo-worker-0", follow=False, timestamps=True, emit=lines.append)
    assert lines == ["2026-11-25T10:00:02.000000Z two"]


def test_follow_prints_new_lines_until_the_run_ends(tmp_path):
    fake_run(tmp_path, {"demo-master": ["2026-11-25T10:00:01.000000Z one\n"]}, running=True)
    log = tmp_path / "logs" / "demo-master.log"
    polls: list[int] = []

    def sleep(_seconds: float) -> None:
        """The run goes on between polls: a line, a line cut in two, then its end."""
        polls.append(1)
        with log.open("a") as handle:
            if len(polls) == 1:
                handle.write("2026-11-25T10:00:02.000000Z two\n2026-11-25T10:00:03.0")
            elif len(polls) == 2:
                handle.write("00000Z three\n")
            else:
                handle.write("2026-11-25T10:00:04.000000Z four\n")
                finish(tmp_path)

    lines: list[str] = []
    read_logs(
        tmp_path, "demo-master", follow=True, timestamps=False, emit=lines.append, sleep=sleep
    )
    assert lines == ["one", "two", "three", "four"]
    assert len(polls) == 3


def test_follow_of_a_run_whose_runtime_is_gone_prints_what_there_is_and_ends(tmp_path):
    fake_run(tmp_path, {"demo-master": ["2026-11-25T10:00:01.000000Z one\n"]}, running=False)
    lines: list[str] = []
    read_logs(tmp_path, None, follow=True, timestamps=False, emit=lines.append, sleep=pytest.fail)
    assert lines == ["[demo-master] one"]


def test_runs_lists_each_run_with_its_outcome_start_and_duration(tmp_path, capsys):
    fake_run(tmp_path / "runs" / "demo-1", {}, running=False)
    finish(tmp_path / "runs" / "demo-1", "Failed", 75)
    fake_run(tmp_path / "runs" / "demo-2", {}, running=False)
    (tmp_path / "runs" / "not-a-run").mkdir()
    assert main(["runs", "--dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "JOB   KIND        OUTCOME  STARTED (UTC)        DURATION  RUN DIR",
        f"demo  ChainerJob  Failed   2026-11-25 10:00:00  1m15s     {tmp_path}/runs/demo-1",
        f"demo  ChainerJob  Unknown  2026-11-25 10:00:00  -         {tmp_path}/runs/demo-2",
    ]


def test_logs_of_an_unknown_run_or_pod_is_one_line_and_exit_2(tmp_path, capsys):
    fake_run(tmp_path / "runs" / "demo-1", {"demo-master": []}, running=False)
    assert main(["logs", "nothing", "--dir", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == (
        f"error: nothing: no run directory or job of that name in {tmp_path}/runs; "
        "`trainjobs runs` lists the runs\n"
    )
    assert main(["logs", "demo", "demo-ps-0", "--dir", str(tmp_path / "runs")]) == 2
    assert capsys.readouterr().err == (
        f"error: pod 'demo-ps-0': no log in {tmp_path}/runs/demo-1 (pods with logs: demo-master)\n"
    )


def test_record_start_writes_run_json_with_the_command_and_its_owner(tmp_path):
    job = load_job(SINGLE)
    identity = record_start(tmp_path, job, "abc123", ("trainjobs", "run", "x.yaml"))
    record = json.loads((tmp_path / "run.json").read_text())
    assert identity == {
        "kind": "ChainerJob",
        "started": record["started"],
        "command": ["trainjobs", "run", "x.yaml"],
    }
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", record["started"])
    assert record["owner"] == {"pid": os.getpid(), "starttime": process_start_time(os.getpid())}
    assert (tmp_path / "run.json").stat().st_mode & 0o777 == 0o600
    (run,) = list_runs(tmp_path.parent)[-1:]
    assert (run.job, run.kind, run.outcome) == ("chainer-mnist", "ChainerJob", "Running")


# -- with real runs ---------------------------------------------------------------------------


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "trainjobs.cli", *args]


@needs_open_mpi
@needs_pod_network
def test_logs_follows_a_running_job_and_runs_lists_the_sessions_runs(tmp_path):
    runs = tmp_path / "runs"
    followed: list[str] = []

    def follow(line: str, process: subprocess.Popen[str]) -> None:
        """Once the run has started, follow its logs until it ends."""
        if followed or not line.startswith("[trainjobs] running "):
            return
        logs = subprocess.run(
            cli("logs", "chainermn-mnist", "-f", "--dir", str(runs)),
            cwd=REPO,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )
        assert (logs.returncode, logs.stderr) == (0, "")
        followed.extend(logs.stdout.splitlines())

    run = Run(DISTRIBUTED, runs / "distributed", on_line=follow)
    assert run.exit_code == 0
    # `logs -f` ran while the job did, and ended when it ended, with every line of every pod.
    master = [f"[chainermn-mnist-master] {line}" for line in run.pod_log("chainermn-mnist-master")]
    assert [line for line in followed if line.startswith("[chainermn-mnist-master]")] == master
    assert master[-1].startswith("[chainermn-mnist-master] final validation accuracy: ")
    summary = run.summary
    assert not (runs / "distributed" / "run.json").exists()  # the summary took its place
    assert summary["command"] == [
        "trainjobs",
        "run",
        str(DISTRIBUTED),
        "--run-dir",
        str(runs / "distributed"),
    ]
    assert summary["kind"] == "ChainerJob"
    assert (summary["attempts"], summary["retries"]) == (1, 0)
    raw = (runs / "distributed" / "logs" / "chainermn-mnist-master.log").read_text().splitlines()
    assert all(re.match(rf"{STAMP} ", line) for line in raw)
    assert read_log(runs / "distributed" / "logs" / "chainermn-mnist-master.log") == run.pod_log(
        "chainermn-mnist-master"
    )

    single = Run(SINGLE, runs / "single", "--quiet")
    assert single.exit_code == 0
    assert all(line.startswith("[trainjobs] ") for line in single.lines)
    listed = subprocess.run(
        cli("runs", "--dir", str(runs)), cwd=REPO, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # A duration reads "12.5s" under a minute, "1m17s" over one (a loaded machine).
    pattern = (
        r"{job} +ChainerJob +Succeeded +\d{{4}}-\d\d-\d\d \d\d:\d\d:\d\d +(?:[\d.]+s|\d+m\d\ds) "
        r"+{dir}"
    )
    assert listed[0].split() == [
        "JOB",
        "KIND",
        "OUTCOME",
        "STARTED",
        "(UTC)",
        "DURATION",
        "RUN",
        "DIR",
    ]
    assert re.fullmatch(pattern.format(job="chainermn-mnist", dir=runs / "distributed"), listed[1])
    assert re.fullmatch(pattern.format(job="chainer-mnist ", dir=runs / "single"), listed[2])
    assert len(listed) == 3


@needs_open_mpi
def test_a_run_dir_holding_an_earlier_run_is_refused_with_a_free_name(tmp_path):
    first = Run(SINGLE, tmp_path / "mine", "--network", "loopback", "--quiet")
    assert first.exit_code == 0
    again = Run(SINGLE, tmp_path / "mine", "--network", "loopback")
    assert (again.exit_code, again.lines) == (2, [])
    assert again.stderr == (
        f"error: --run-dir {tmp_path / 'mine'}: holds an earlier run of chainer-mnist "
        f"(Succeeded); give a new directory (e.g. --run-dir {tmp_path / 'mine'}-2) or remove it "
        "first\n"
    )


def test_logs_of_a_pod_named_as_a_path_prints_nothing_outside_the_run(tmp_path, capsys):
    outside = tmp_path / "secret.log"
    outside.write_text("2026-11-25T10:00:01.000000Z the secret\n")
    run_dir = tmp_path / "runs" / "demo-1"
    fake_run(run_dir, {"demo-master": ["2026-11-25T10:00:01.000000Z hi\n"]}, running=False)
    for pod in ("../../../secret", "../../secret", "/etc/passwd", "demo-master/../../../../secret"):
        assert main(["logs", str(run_dir), pod]) == 2
        assert capsys.readouterr() == (
            "",
            f"error: pod {pod!r}: no log in {run_dir} (pods with logs: demo-master)\n",
        )


def test_a_link_planted_in_a_runs_logs_is_not_followed(tmp_path, capsys):
    secret = tmp_path / "secret"
    secret.write_text("2026-11-25T10:00:01.000000Z the secret\n")
    run_dir = tmp_path / "run"
    fake_run(run_dir, {"demo-master": ["2026-11-25T10:00:02.000000Z hi\n"]}, running=False)
    (run_dir / "logs" / "demo-worker-0.log").symlink_to(secret)
    (run_dir / "logs" / "demo-master.log").rename(run_dir / "logs" / "real")
    (run_dir / "logs" / "demo-master.log").symlink_to(run_dir / "logs" / "real")
    assert main(["logs", str(run_dir)]) == 0
    assert capsys.readouterr().out == ""
    assert main(["logs", str(run_dir), "demo-worker-0"]) == 2
    assert capsys.readouterr().err == (
        f"error: pod 'demo-worker-0': no log in {run_dir} (pods with logs: none yet)\n"
    )


def test_a_summary_that_is_a_link_is_not_read(tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"job": "planted", "outcome": "Succeeded"}))
    run_dir = tmp_path / "runs" / "demo-1"
    fake_run(run_dir, {}, running=False)
    (run_dir / "run.json").unlink()
    (run_dir / "summary.json").symlink_to(elsewhere)
    assert main(["runs", "--dir", str(tmp_path / "runs")]) == 0
    assert capsys.readouterr().out == f"no runs in {tmp_path / 'runs'}\n"


class Terminal:
    """Standard output as a terminal (what `isatty` tells the command)."""

    def __init__(self) -> None:
        self.text = ""

    def write(self, text: str) -> int:
        self.text += text
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


HOSTILE = "\x1b]0;owned\x07\x1b[2J\x1b]52;c;cm0gLXJmIH4=\x07\u202eok"
"""A title change, a screen clear, an OSC 52 clipboard write and a right-to-left override."""
HOSTILE_SHOWN = "\\x1b]0;owned\\x07\\x1b[2J\\x1b]52;c;cm0gLXJmIH4=\\x07\\u202eok"


def test_logs_on_a_terminal_shows_a_pods_escape_sequences_escaped(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    fake_run(run_dir, {"demo-master": [f"2026-11-25T10:00:01.000000Z {HOSTILE}\n"]}, False)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    assert main(["logs", str(run_dir)]) == 0
    assert terminal.text == f"[demo-master] {HOSTILE_SHOWN}\n"


def test_logs_into_a_pipe_keeps_the_lines_as_the_pods_wrote_them(tmp_path, capsys):
    run_dir = tmp_path / "run"
    fake_run(run_dir, {"demo-master": [f"2026-11-25T10:00:01.000000Z {HOSTILE}\n"]}, False)
    assert main(["logs", str(run_dir), "demo-master"]) == 0
    assert capsys.readouterr().out == f"{HOSTILE}\n"


def test_runs_shows_recorded_fields_escaped(tmp_path, capsys):
    run_dir = tmp_path / "runs" / "demo-1"
    fake_run(run_dir, {}, running=False)
    summary = {"job": HOSTILE, "kind": "Chainer\rJob", "outcome": "Succeeded\n\x1b[31mFailed"}
    (run_dir / "summary.json").write_text(json.dumps({**summary, "durationSeconds": 1.0}))
    (run_dir / "run.json").unlink()
    assert main(["runs", "--dir", str(tmp_path / "runs")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\r" not in out and "\u202e" not in out
    assert out.splitlines()[1].split() == [
        HOSTILE_SHOWN,
        "Chainer\\x0dJob",
        "Succeeded\\x0a\\x1b[31mFailed",
        "-",
        "1.0s",
        str(run_dir),
    ]


def test_runs_lists_a_run_made_anywhere_and_logs_finds_it_by_its_job(tmp_path, monkeypatch, capsys):
    from tests.local.test_crash_safety import quick_job

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("TRAINJOBS_STATE_DIR", str(state))
    job = quick_job(tmp_path / "quick.yaml", command=("echo", "hello from anywhere"))
    elsewhere = tmp_path / "somewhere" / "mine"
    assert main(["run", str(job), "--run-dir", str(elsewhere), "--network", "loopback"]) == 0
    monkeypatch.chdir(tmp_path)  # no out/runs here: only the index knows the run
    capsys.readouterr()

    assert main(["runs", "--json"]) == 0
    [listed] = json.loads(capsys.readouterr().out)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", listed.pop("started"))
    assert isinstance(listed.pop("durationSeconds"), float)
    assert listed == {
        "job": "quick",
        "kind": "ChainerJob",
        "outcome": "Succeeded",
        "runDir": str(elsewhere),
    }
    assert main(["runs"]) == 0
    [_header, row] = capsys.readouterr().out.splitlines()
    assert row.split()[:3] == ["quick", "ChainerJob", "Succeeded"]
    assert row.endswith(str(elsewhere))
    assert main(["logs", "quick"]) == 0
    assert capsys.readouterr().out == "[quick-master] hello from anywhere\n"
    assert main(["runs", "--dir", str(tmp_path / "out" / "runs")]) == 0
    assert capsys.readouterr().out == f"no runs in {tmp_path / 'out' / 'runs'}\n"


def test_the_run_index_is_not_read_when_another_user_may_write_it(tmp_path, monkeypatch):
    from trainjobs.local.run_index import index_directory, indexed_run_directories, remember

    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    monkeypatch.setenv("TRAINJOBS_STATE_DIR", str(state))
    fake_run(tmp_path / "run", {}, running=False)
    remember(tmp_path / "run", "abc123")
    assert indexed_run_directories() == [tmp_path / "run"]
    directory = index_directory()
    assert directory is not None
    directory.chmod(0o777)
    assert indexed_run_directories() == []
