"""The pull-request review as documented: the review page's diff command and the CI workflow's diff job,
run as written against a git copy of this project with a change on top of its base branch."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from tests.review.test_preview_diff import chainer_job, diff, git, git_project

CI_WORKFLOW = REPO / ".github" / "workflows" / "ci.yml"
DIFF_STEP = "trainjobs diff, every stack"
CHANGED_JOB = "jobs/chainermn-mnist.yaml"
CHANGED_STACKS = {"chainermn-mnist"}  # the stacks that run it


def readme_diff_command() -> str:
    """The review page's `diff` example that writes a report and keeps the previews, as one
    line."""
    readme = (REPO / "docs" / "review.md").read_text(encoding="utf-8")
    match = re.search(
        r"^(\.venv/bin/trainjobs diff [^\n]*\\\n[^\n]*--previews[^\n]*)$", readme, re.M
    )
    assert match is not None, "docs/review.md: no diff example with --previews"
    return " ".join(match.group(1).replace("\\\n", " ").split("#")[0].split())


def ci_diff_script() -> str:
    workflow = yaml.safe_load(CI_WORKFLOW.read_text(encoding="utf-8"))
    steps = workflow["jobs"]["offline-diff"]["steps"]
    assert {"run": "make setup"} in steps  # what the test's linked .venv stands for
    (step,) = [step for step in steps if step.get("name") == DIFF_STEP]
    return step["run"]


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """This project's tracked files, committed and pushed as `origin/main`, then the master's
    image changed in the working tree; its .venv is this project's."""
    repo = tmp_path / "repo"
    listed = subprocess.run(
        ["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = REPO / name
        target = repo / name
        target.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            target.symlink_to(os.readlink(source))
        elif source.is_file():
            shutil.copy2(source, target)
    git(repo, "init", "-q", "-b", "main")
    (repo / ".venv").symlink_to(REPO / ".venv")  # a link, which `.venv/` in .gitignore misses
    (repo / ".git" / "info" / "exclude").write_text(".venv\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    git(repo, "update-ref", "refs/remotes/origin/main", "HEAD")
    job = repo / CHANGED_JOB
    job.write_text(
        job.read_text().replace(
            "--communicator\n              - naive", "--communicator\n              - flat"
        )
    )
    assert "- flat" in job.read_text()
    return repo


def shell(repo: Path, script: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`script` as GitHub Actions runs a `run:` step: bash -eo pipefail, in the checkout."""
    environment = {**os.environ, "PYTHONPATH": str(repo), **env}
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=repo,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def test_the_readme_diff_command_writes_the_report_and_exits_1_on_a_change(clone):
    command = readme_diff_command()
    assert command == (
        ".venv/bin/trainjobs diff --stack chainermn-mnist --base origin/main "
        "--out out/diff.md --previews out/diff --expect-no-changes"
    )
    completed = shell(clone, command)
    assert (completed.returncode, completed.stderr) == (1, "")
    assert completed.stdout == (
        "stack chainermn-mnist (origin/main -> working tree): 2 update, 1 replace, 6 same\n"
        "wrote out/diff.md\n"
    )
    report = (clone / "out" / "diff.md").read_text()
    assert "| `Job default/chainermn-mnist-master` | replace |" in report
    assert (clone / "out" / "diff" / "base" / "graph.json").is_file()
    assert (clone / "out" / "diff" / "head" / "graph.json").is_file()


def test_the_ci_diff_job_comments_every_stack_with_the_change(clone, tmp_path):
    summary = tmp_path / "step-summary.md"
    completed = shell(clone, ci_diff_script(), BASE_REF="main", GITHUB_STEP_SUMMARY=str(summary))
    assert (completed.returncode, completed.stderr) == (0, "")
    stacks = sorted(
        path.name[len("Pulumi.") : -len(".yaml")] for path in clone.glob("Pulumi.*.yaml")
    )
    lines = completed.stdout.splitlines()
    assert lines[1::2] == [f"wrote out/diff/{stack}.md" for stack in stacks]
    for stack, line in zip(stacks, lines[::2], strict=True):
        counts = "2 update, 1 replace, 6 same" if stack in CHANGED_STACKS else r"\d+ same"
        assert re.fullmatch(rf"stack {stack} \(origin/main -> working tree\): {counts}", line)
    comment = (clone / "out" / "diff" / "comment.md").read_text()
    assert summary.read_text() == comment
    assert comment.count("### trainjobs preview diff") == len(stacks)
    assert "| `Job default/chainermn-mnist-master` | replace |" in comment
    for stack in stacks:
        assert (clone / "out" / "diff" / stack / "base" / "graph.json").is_file()


def test_a_relative_previews_path_is_the_callers_from_any_directory(tmp_path, monkeypatch, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    (repo / "jobs" / "demo.yaml").write_text(chainer_job(image="trainjobs/chainermn:7.9.0"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert diff(Path("../repo"), "--previews", "kept", "--expect-no-changes") == 1
    assert (elsewhere / "kept" / "base" / "graph.json").is_file()
    assert (elsewhere / "kept" / "head" / "graph.json").is_file()
    assert "`HEAD` → `working tree`" in capsys.readouterr().out


def test_a_committed_link_to_an_absolute_path_is_a_clear_error(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    (repo / "venv").symlink_to("/usr")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "link")
    assert diff(repo) == 2
    assert capsys.readouterr().err == (
        "error: --base HEAD: 'venv' is a link to an absolute path; the export keeps no file "
        "outside the project (commit the target or a relative link instead)\n"
    )
