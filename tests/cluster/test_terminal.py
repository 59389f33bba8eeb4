"""Cluster-supplied text reaches a terminal escaped: names, condition reasons and messages,
termination reasons and log lines from a hostile cluster cannot drive the terminal (set
its title, clear it, write the clipboard with OSC 52, overwrite lines with CR)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from tests.kubefake import FakeKube, terminated
from trainjobs.cli import main as cli_main
from trainjobs.core.terminal import escape
from trainjobs.local.files import read_log
from trainjobs.local.output import TerminalFilter
from trainjobs.local.pods import LogSink

CLIPBOARD = "\x1b]52;c;cm0gLXJmIH4=\x07"
"""OSC 52: writes ``rm -rf ~`` into the clipboard of the terminal that prints it."""
TITLE = "\x1b]0;owned\x07"
CLEAR = "\x1b[2J\x1b[H"
C1_CSI = "\x9b2J"


def test_escape_shows_every_control_character_and_keeps_the_rest() -> None:
    hostile = f"a{CLIPBOARD}b{TITLE}{CLEAR}\rc\x08\x7f{C1_CSI}\u202eevil\td\ne"
    assert escape(hostile) == (
        "a\\x1b]52;c;cm0gLXJmIH4=\\x07b\\x1b]0;owned\\x07\\x1b[2J\\x1b[H\\x0dc\\x08\\x7f"
        "\\x9b2J\\u202eevil\td\\x0ae"
    )
    assert escape("ok\n\x1b[31mred", keep_newlines=True) == "ok\n\\x1b[31mred"
    assert escape("Ünïcödé naïve 日本") == "Ünïcödé naïve 日本"


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    with FakeKube() as fake:
        monkeypatch.setenv("KUBECONFIG", str(fake.write_kubeconfig(tmp_path / "config")))
        yield fake


def test_cli_watch_prints_condition_messages_reasons_and_log_lines_escaped(kube, capsys):
    kube.add_job("train-master")
    kube.add_pod(
        "train-master-abcde",
        job_name="train-master",
        containers=[terminated("chainer", 137, f"OOM{TITLE}")],
    )
    kube.set_log("train-master-abcde", "chainer", f"step 1{CLEAR}\rstep 2{CLIPBOARD}\n")
    kube.fail_job("train-master", reason=f"Backoff{C1_CSI}", message=f"gone{CLIPBOARD}")

    code = cli_main(["watch", "train-master"])

    err = capsys.readouterr().err
    assert code == 1
    assert "\x1b" not in err and "\x9b" not in err and "\r" not in err and "\x07" not in err
    lines = err.splitlines()
    assert lines[1] == (
        "error: job default/train-master Failed (Backoff\\x9b2J: gone\\x1b]52;c;cm0gLXJmIH4=\\x07)"
        "; 0 succeeded, 1 failed pod(s)"
    )
    assert lines[4:] == [
        "  train-master-abcde (Failed): container chainer exited with code 137 "
        "(OOM\\x1b]0;owned\\x07)",
        "last 2 log line(s) of train-master-abcde/chainer:",
        "  | step 1\\x1b[2J\\x1b[H",
        "  | step 2\\x1b]52;c;cm0gLXJmIH4=\\x07",
    ]


def test_local_pod_output_on_a_terminal_is_escaped_and_logged_as_written(tmp_path: Path):
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    sink = LogSink(terminal, tmp_path)
    sink.line("master-0", f"epoch 1{CLIPBOARD}")
    sink.close()

    assert terminal.getvalue() == "[master-0] epoch 1\\x1b]52;c;cm0gLXJmIH4=\\x07\n"
    assert read_log(tmp_path / "master-0.log") == [f"epoch 1{CLIPBOARD}"]


def test_pod_output_through_the_noise_filter_on_a_terminal_is_escaped_too(tmp_path: Path):
    # `trainjobs run` writes through its noise filter; the terminal behind it is what counts.
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    sink = LogSink(TerminalFilter(terminal), tmp_path)
    sink.line("master-0", f"epoch 1{CLIPBOARD}")
    sink.close()

    assert terminal.getvalue() == "[master-0] epoch 1\\x1b]52;c;cm0gLXJmIH4=\\x07\n"


def test_cli_status_prints_names_kinds_and_details_from_the_cluster_escaped(tmp_path, capsys):
    from tests.cluster.hostile import Answer, Json, empty_list, hostile, job, job_list
    from trainjobs.cluster.target import WATCH_ANNOTATION

    target = {
        "namespace": "default",
        "name": f"evil{TITLE}",
        "kind": f"TFJob{CLEAR}",
        "success_jobs": ["evil-chief-0"],
        "run": None,
    }
    service = {
        "metadata": {
            "name": "evil-chief-0",
            "namespace": "default",
            "annotations": {WATCH_ANNOTATION: json.dumps(target)},
        }
    }
    failed = job(
        "evil-chief-0",
        conditions=[{"type": "Failed", "status": "True", "reason": "X", "message": CLIPBOARD}],
    )

    def answer(method: str, path: str, query: dict[str, str]) -> Answer:
        if path.endswith("/services"):
            return Json({**empty_list("ServiceList"), "items": [service]})
        if path.endswith("/jobs"):
            return Json(job_list(failed))
        return Json(empty_list("List"))

    with hostile(answer) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = cli_main(["status", "--kubeconfig", str(config)])

    out = capsys.readouterr().out
    assert code == 0
    assert out.splitlines() == [
        "JOB                   KIND                PHASE   DURATION  AGE     DETAIL",
        "evil\\x1b]0;owned\\x07  TFJob\\x1b[2J\\x1b[H  Failed  <none>    <none>  "
        "X: \\x1b]52;c;cm0gLXJmIH4=\\x07",
    ]
