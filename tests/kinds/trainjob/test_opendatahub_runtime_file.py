"""OpenDataHub keeps a TrainJob and its TrainingRuntime in two files (tests/corpus/opendatahub,
SOURCES.md #159-#160): `--runtimes` brings the runtime to the job, which is then judged by what
the runtime holds, as Trainer's JobSet plugin judges it."""

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


def test_with_runtimes_the_runtime_is_read_and_its_initializers_judged(capsys):
    code, lines = errors(["--runtimes", str(ODH / "training-runtime.yaml")], capsys)

    # Found: what remains is Trainer's rule that an initializer mounts its `initializer`
    # volume (the JobSet plugin's Validate), which this fork's runtime does not follow.
    assert code == 2
    assert lines == [
        "spec.runtimeRef: must have volumeMount with name - initializer in container "
        "dataset-initializer of the dataset-initializer job",
        "spec.runtimeRef: must have volumeMount with name - initializer in container "
        "model-initializer of the model-initializer job",
    ]


def test_a_directory_of_runtimes_is_read_as_the_file_is(capsys):
    # The directory holds the TrainJob too, which --runtimes leaves out with a warning.
    by_file = errors(["--runtimes", str(ODH / "training-runtime.yaml")], capsys)

    assert errors(["--runtimes", str(ODH)], capsys) == by_file
