"""The XGBoostJob, PaddleJob and JAXJob examples in containers of their one shared image,
trainjobs/xgboost-paddle-jax:2026.11-cpu: each trains to its stated accuracy and leaves no
pod, container or network behind."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.local.container.test_runtime import CONTAINER, left_by
from tests.local.runs import Run
from tests.local.test_xgboost_paddle_jax_runs import EXAMPLES, TRAINING_ON, accuracy

pytestmark = pytest.mark.needs_images("trainjobs/xgboost-paddle-jax:2026.11-cpu")


@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_trains_in_containers_of_the_shared_image(example: str, tmp_path: Path):
    reporter, _, stated = EXAMPLES[example]
    run = Run(REPO / "jobs" / f"{example}.yaml", tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert run.summary["outcome"] == "Succeeded"
    assert any(line.startswith(f"[{reporter}] {TRAINING_ON[example]}") for line in run.lines)
    assert accuracy(run, reporter) >= stated
    assert left_by(run) == []
