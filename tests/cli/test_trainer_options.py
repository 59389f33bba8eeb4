"""`--trainer-version` and `--runtimes` on validate, render and run: the Trainer release whose
default runtimes a TrainJob's runtimeRef finds, and runtimes from files of their own."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.kinds.trainjob.test_trainjob import RUNTIME, trainjob
from trainjobs.cli import main


def answer(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return int(code or 0), out, err


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(trainjob("team-torch", command=["torchrun", "t.py"])))
    runtime = copy.deepcopy(RUNTIME)
    runtime["metadata"]["name"] = "team-torch"
    folder = tmp_path / "runtimes"
    folder.mkdir()
    (folder / "team.yaml").write_text(yaml.safe_dump(runtime))
    return job, folder


def test_validate_finds_a_runtime_given_with_runtimes(files, capsys):
    job, folder = files

    assert answer(["validate", str(job), "--runtimes", str(folder)], capsys) == (
        0,
        f"{job}: valid TrainJob 'tj' (3 objects)\n",
        "",
    )


def test_without_runtimes_the_runtime_is_not_found(files, capsys):
    job, _ = files

    code, _, err = answer(["validate", str(job)], capsys)

    assert code == 2
    assert '"team-torch" not found' in err


def test_render_takes_runtimes_and_the_trainer_version(files, capsys):
    job, folder = files
    out_dir = job.parent / "out"

    code, out, err = answer(
        [
            "render",
            str(job),
            "--out",
            str(out_dir),
            "--runtimes",
            str(folder / "team.yaml"),
            "--trainer-version",
            "v2.1.0",
        ],
        capsys,
    )

    assert (code, err) == (0, "")
    anchor = yaml.safe_load((out_dir / out.splitlines()[0].split("/")[-1]).read_text())
    assert anchor["data"] == {
        "runtime": f"ClusterTrainingRuntime/team-torch ({folder / 'team.yaml'})"
    }


def test_the_trainer_version_selects_the_releases_runtimes(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(trainjob("jax-distributed")))

    code, _, err = answer(["validate", str(job), "--trainer-version", "v2.1.0"], capsys)

    assert code == 2
    assert "(Kubeflow Trainer v2.1.0's, and those given beside the TrainJob in its file)" in err


def test_an_unknown_trainer_version_is_refused(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(trainjob()))

    code, _, err = answer(["validate", str(job), "--trainer-version", "v1.9.0"], capsys)

    assert code == 2
    assert err.splitlines()[1] == (
        "  trainerVersion: 'v1.9.0' is not a Kubeflow Trainer release trainjobs has the "
        "runtimes of; choose one of v2.0.0, v2.0.1, v2.1.0, v2.2.0, v2.2.1, v2.3.0"
    )


def test_a_missing_runtimes_path_is_one_line_and_exit_2(tmp_path, capsys):
    job = tmp_path / "job.yaml"
    job.write_text(yaml.safe_dump(trainjob()))

    code, out, err = answer(["validate", str(job), "--runtimes", str(tmp_path / "no")], capsys)

    assert (code, out) == (2, "")
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            f"--runtimes {str(tmp_path / 'no')!r}: no such file or directory; name a runtime file "
            "or a directory of them"
        )
    )
