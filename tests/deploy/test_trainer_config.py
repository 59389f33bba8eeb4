"""Stack config `trainjobs:trainerVersion` and `trainjobs:runtimes`: the Trainer release whose
default runtimes a TrainJob finds, and runtime files installed apart from the jobs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pulumi
import pytest
import yaml

from tests.kinds.trainjob.test_trainjob import RUNTIME
from trainjobs.core.errors import UserError
from trainjobs.deploy.program import StackSettings


@pytest.fixture
def config() -> Iterator[None]:
    yield
    pulumi.runtime.set_all_config({}, [])


def settings(values: dict[str, str]) -> StackSettings:
    pulumi.runtime.set_all_config({"trainjobs:job": "jobs/trainjob-torch.yaml", **values}, [])
    return StackSettings.from_config(pulumi.Config("trainjobs"))


def test_the_trainer_version_reaches_the_graph_options(config):
    assert settings({"trainjobs:trainerVersion": "v2.1.0"}).graph_options.trainer_version == (
        "v2.1.0"
    )


def test_runtime_files_reach_the_graph_options(config, tmp_path: Path):
    path = tmp_path / "rt.yaml"
    path.write_text(yaml.safe_dump(RUNTIME))

    options = settings({"trainjobs:runtimes": json.dumps([str(path)])}).graph_options

    assert [(document["metadata"]["name"], source) for document, source in options.runtimes] == [
        ("torch-distributed", str(path))
    ]


def test_runtimes_that_are_not_a_list_of_paths_are_refused(config):
    with pytest.raises(UserError) as raised:
        settings({"trainjobs:runtimes": json.dumps("rt.yaml")})

    assert str(raised.value) == (
        "stack config trainjobs:runtimes must be a list of runtime files or directories (got "
        "'rt.yaml'); set it with `pulumi config set --path 'trainjobs:runtimes[0]' FILE`"
    )
