"""A reader that closes the pipe early (`| head -1`) ends the command quietly, with exit 0, as
for git and kubectl."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import REPO

ENV = {**os.environ, "PYTHONPATH": str(REPO)}


def closed_reader(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `trainjobs ARGS` with its stdout a pipe whose only reader is already gone."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "trainjobs.cli", *args],
            cwd=REPO,
            env=ENV,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    finally:
        os.close(write_end)


def test_validate_into_a_closed_pipe_exits_0_quietly():
    completed = closed_reader("validate", "jobs/chainermn-mnist.yaml", "jobs/tf-mnist.yaml")
    assert (completed.returncode, completed.stderr) == (0, "")


def test_preview_into_a_closed_pipe_exits_0_quietly(tmp_path):
    out = tmp_path / "preview"
    completed = closed_reader("preview", "--stack", "chainermn-mnist", "--out", str(out))
    assert (completed.returncode, completed.stderr) == (0, "")


def test_help_into_a_closed_pipe_exits_0_quietly():
    completed = closed_reader("--help")
    assert (completed.returncode, completed.stderr) == (0, "")


def test_validate_piped_to_head_prints_the_first_line_and_exits_0():
    completed = subprocess.run(
        [
            "bash",
            "-o",
            "pipefail",
            "-c",
            f"{sys.executable} -m trainjobs.cli validate jobs/*.yaml | head -1",
        ],
        cwd=REPO,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (completed.returncode, completed.stderr) == (0, "")
    assert completed.stdout.startswith("jobs/")
    assert completed.stdout.count("\n") == 1


def test_a_failure_still_exits_with_its_code_when_the_pipe_is_closed():
    completed = closed_reader("validate", "no-such.yaml")
    assert completed.returncode == 2
    assert completed.stderr.startswith("no-such.yaml: ")


def test_a_failure_after_output_keeps_its_code_and_says_why_when_the_pipe_is_closed(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: Nothing\n")
    completed = closed_reader("validate", "jobs/chainermn-mnist.yaml", str(bad))
    assert completed.returncode == 2
    assert completed.stderr == (
        f"{bad}: invalid job spec (1 problem(s))\n"
        "  kind: must be one of ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, "
        "PaddleJob, JAXJob (got 'Nothing'); XGBoost and JAX jobs also run as a TrainJob with the "
        "xgboost-distributed or jax-distributed runtime\n"
    )
