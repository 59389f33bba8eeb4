"""`trainjobs run` of the XGBoostJob, PaddleJob and JAXJob examples, unchanged, with pods in
network namespaces: each framework's own distributed mode over two or three pods, from the
environment training-operator v1.9 sets, trains to its stated accuracy and leaves nothing."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.local.runs import Run, leaks
from trainjobs.local import network

pytestmark = pytest.mark.frameworks
"""Needs a framework extra beyond the core: `make test-frameworks` runs this module."""

# example -> (the pod that prints the result, the pods, the accuracy its header states)
EXAMPLES = {
    "xgboost-digits": (
        "xgboost-digits-master-0",
        ["xgboost-digits-master-0", "xgboost-digits-worker-0", "xgboost-digits-worker-1"],
        0.96,
    ),
    "paddle-digits": (
        "paddle-digits-worker-0",
        ["paddle-digits-worker-0", "paddle-digits-worker-1"],
        0.97,
    ),
    "jax-digits": ("jax-digits-worker-0", ["jax-digits-worker-0", "jax-digits-worker-1"], 0.96),
}
TRAINING_ON = {
    "xgboost-digits": "training on 3 rank(s) (XGBoost 3.2.0 collective)",
    "paddle-digits": "training on 2 trainer(s) (PaddlePaddle 3.3.1, collective)",
    "jax-digits": "training on 2 process(es), 2 device(s) (JAX 0.4.30, gloo)",
}


def accuracy(run: Run, pod: str) -> float:
    pattern = re.compile(rf"\[{pod}\] final validation accuracy: ([0-9.]+)")
    values = [float(m.group(1)) for line in run.lines if (m := pattern.fullmatch(line))]
    assert len(values) == 1, run.lines[-30:]
    return values[0]


@pytest.mark.skipif(
    network.netns_available() is not None,
    reason="needs root, iproute2 and util-linux (make system-deps)",
)
@pytest.mark.parametrize("example", sorted(EXAMPLES))
def test_the_example_trains_in_its_frameworks_distributed_mode(example: str, tmp_path: Path):
    reporter, pods, stated = EXAMPLES[example]
    run = Run(REPO / "jobs" / f"{example}.yaml", tmp_path / "run")

    assert run.exit_code == 0, "\n".join([*run.lines[-30:], run.stderr])
    assert (run.summary["outcome"], run.summary["reason"]) == ("Succeeded", "Completed")
    assert sorted(run.summary["jobs"]) == sorted(pods)
    assert any(line.startswith(f"[{reporter}] {TRAINING_ON[example]}") for line in run.lines)
    assert accuracy(run, reporter) >= stated
    assert leaks(run) == []
