"""OpenDataHub keeps a TrainJob and its TrainingRuntime in two files (tests/corpus/opendatahub,
SOURCES.md #159-#160): `--runtimes` brings the runtime to the job, which is then judged by what
the runtime holds, as the selected Trainer release's JobSet plugin judges it. The fork wrote
them (September 2025) before Trainer v2.3.0 required initializers to mount the `initializer`
volume (kubeflow/trainer#3714, `pkg/runtime/framework/plugins/jobset/jobset.go`, `Validate`)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from trainjobs.cli import main

ODH = REPO / "tests" / "corpus" / "opendatahub"


def errors(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    code = main(["validate", str(ODH / "trainjob.yaml"), *args])
    # The problems under the file's header line; warnings left out.
    lines = capsys.readouterr().err.splitlines()
    return code, [
        line.strip() for line in lines if line.startswith("  ") and "warning:" not in line
    ]


def test_without_its_runtime_file_the_runtime_is_not_found(capsys):
    code, lines = errors([], capsys)

    assert code == 2
    assert lines[0].startswith(
        'spec.runtimeRef: trainingruntimes.trainer.kubeflow.org "torch-cuda-251-runtime" not '
        "found: specified trainingRuntime must be created before the TrainJob is created"
    )


def test_with_runtimes_and_the_release_it_was_written_for_the_job_is_accepted(capsys):
    runtime = str(ODH / "training-runtime.yaml")

    for release in ("v2.0.0", "v2.1.0", "v2.2.1"):
        code, lines = errors(["--runtimes", runtime, "--trainer-version", release], capsys)

        assert (code, lines) == (0, [])


def test_trainer_v2_3_refuses_its_initializers_naming_the_rules_release(capsys):
    code, lines = errors(["--runtimes", str(ODH / "training-runtime.yaml")], capsys)

    # Found: what remains is v2.3.0's rule that an initializer mounts its `initializer`
    # volume, which this runtime, written before it, does not follow.
    why = (
        " (Kubeflow Trainer v2.3.0's rule; name the initializer's volume `initializer`, or "
        "select the release the runtime was written for: --trainer-version or "
        "trainjobs:trainerVersion)"
    )
    assert code == 2
    assert lines == [
        "spec.runtimeRef: must have volumeMount with name - initializer in container "
        f"dataset-initializer of the dataset-initializer job{why}",
        "spec.runtimeRef: must have volumeMount with name - initializer in container "
        f"model-initializer of the model-initializer job{why}",
    ]


def test_a_directory_of_runtimes_is_read_as_the_file_is(capsys):
    # The directory holds the TrainJob too, which --runtimes leaves out with a warning.
    by_file = errors(["--runtimes", str(ODH / "training-runtime.yaml")], capsys)

    assert errors(["--runtimes", str(ODH)], capsys) == by_file
