"""The documentation says what trainjobs does: the command-line reference is the commands' own
`--help`, the getting-started commands run as written, and the version has one source."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import tomllib

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.cli.reference import reference

GETTING_STARTED = REPO / "docs" / "getting-started.md"
TRAINJOBS = REPO / ".venv" / "bin" / "trainjobs"


def test_the_command_line_reference_is_generated_from_the_current_help():
    checked_in = (REPO / "docs" / "cli-reference.md").read_text(encoding="utf-8")
    assert checked_in == reference(), (
        "docs/cli-reference.md is stale: run "
        "`.venv/bin/python -m trainjobs.cli.reference > docs/cli-reference.md`"
    )


def test_version_is_the_one_in_pyproject(capsys):
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"trainjobs {declared['project']['version']}\n"


def getting_started_commands() -> list[str]:
    """Every line of the page's ``sh`` blocks, comments dropped."""
    text = GETTING_STARTED.read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", text, re.S | re.M)
    lines = [line.split("#", 1)[0].strip() for block in blocks for line in block.splitlines()]
    return [line for line in lines if line]


def test_the_getting_started_page_shows_these_commands():
    # What the test below checks: a command added to the page must be given an expectation.
    assert getting_started_commands() == ["make run", "make test", *TOUR]


TOUR = [
    ".venv/bin/trainjobs --version",
    ".venv/bin/trainjobs validate jobs/chainermn-mnist.yaml jobs/tf-mnist.yaml",
    ".venv/bin/trainjobs render jobs/chainermn-mnist.yaml --out out/tour/manifests",
    ".venv/bin/trainjobs render jobs/chainer-mnist.yaml --out -",
    ".venv/bin/trainjobs run jobs/chainer-mnist.yaml --run-dir out/tour/run",
    ".venv/bin/trainjobs runs",
    ".venv/bin/trainjobs logs out/tour/run",
    ".venv/bin/trainjobs preview --stack chainermn-mnist --out out/tour/preview",
]


@pytest.mark.skipif(not TRAINJOBS.exists(), reason="needs the .venv `make run` sets up")
def test_every_getting_started_command_runs_as_written():
    """The tour, and `make run`; `make test` is this suite itself."""
    shutil.rmtree(REPO / "out" / "tour", ignore_errors=True)
    results = {}
    for command in ["make run", *TOUR]:
        done = subprocess.run(
            shlex.split(command), cwd=REPO, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, f"{command}: {done.stderr}"
        results[command] = done.stdout

    assert "[trainjobs] === chainermn-mnist: Succeeded (Completed) ===" in results["make run"]
    assert re.fullmatch(r"trainjobs \d+\.\d+\.\d+\S*\n", results[TOUR[0]])
    assert results[TOUR[1]] == (
        "jobs/chainermn-mnist.yaml: valid ChainerJob 'chainermn-mnist' (7 objects)\n"
        "jobs/tf-mnist.yaml: valid TFJob 'tf-mnist' (8 objects)\n"
    )
    written = results[TOUR[2]].split()
    assert len(written) == 7 and all(p.startswith("out/tour/manifests/") for p in written)
    kinds = [document["kind"] for document in yaml.safe_load_all(results[TOUR[3]])]
    assert kinds == ["ConfigMap", "Job"]
    assert "[trainjobs] === chainer-mnist: Succeeded (Completed) ===" in results[TOUR[4]]
    assert any(
        line.split()[:3] == ["chainer-mnist", "ChainerJob", "Succeeded"]
        and line.endswith(str(REPO / "out" / "tour" / "run"))
        for line in results[TOUR[5]].splitlines()
    )
    assert "[chainer-mnist-master] final validation accuracy: " in results[TOUR[6]]
    assert (REPO / "out" / "tour" / "preview" / "graph.json").is_file()
