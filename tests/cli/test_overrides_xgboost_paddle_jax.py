"""`--set` on the XGBoostJob, PaddleJob and JAXJob examples: replica counts by type, the image
of every replica's containers, and a type the kind does not have refused with its types."""

from __future__ import annotations

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli.overrides import apply_overrides
from trainjobs.core.errors import UserError


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "jobs" / name).read_text())


@pytest.mark.parametrize(
    ("example", "replica_map", "types"),
    [
        ("xgboost-digits.yaml", "xgbReplicaSpecs", ["Master", "Worker"]),
        ("paddle-digits.yaml", "paddleReplicaSpecs", ["Worker"]),
        ("jax-digits.yaml", "jaxReplicaSpecs", ["Worker"]),
    ],
)
def test_replicas_and_image_of_each_kind(example: str, replica_map: str, types: list[str]):
    changed = apply_overrides(load(example), ["replicas.Worker=4", "image=my/img:2"])
    replicas = changed["spec"][replica_map]
    assert list(replicas) == types
    assert replicas["Worker"]["replicas"] == 4
    assert [
        container["image"]
        for replica in replicas.values()
        for container in replica["template"]["spec"]["containers"]
    ] == ["my/img:2"] * len(types)


def test_a_replica_type_a_jaxjob_does_not_have_is_refused():
    with pytest.raises(UserError) as raised:
        apply_overrides(load("jax-digits.yaml"), ["replicas.Master=1"])
    assert str(raised.value) == (
        "--set replicas.Master=1: this JAXJob has no key 'replicas.Master' (value '1'); valid "
        "keys: replicas.Worker, image, image.Worker"
    )
