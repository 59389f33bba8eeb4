"""`trainjobs run --set`: overrides are written into the spec before it is validated."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import MINIMAL_JOB, REPO
from trainjobs.cli import main
from trainjobs.cli.overrides import apply_overrides
from trainjobs.core.errors import UserError


def load(name: str) -> dict:
    return yaml.safe_load((REPO / "jobs" / name).read_text())


def test_replicas_of_a_chainerjob_by_its_type_in_any_case():
    changed = apply_overrides(MINIMAL_JOB, ["replicas.Worker=4"])
    assert changed["spec"]["worker"]["replicas"] == 4
    assert MINIMAL_JOB["spec"]["worker"]["replicas"] == 2  # the original is left as it was


def test_replicas_of_a_tfjob_and_a_pytorchjob():
    tf = apply_overrides(load("tf-mnist.yaml"), ["replicas.worker=3", "replicas.PS=2"])
    assert tf["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] == 3
    assert tf["spec"]["tfReplicaSpecs"]["PS"]["replicas"] == 2
    torch = apply_overrides(load("pytorch-mnist.yaml"), ["replicas.Worker=4"])
    assert torch["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] == 4


def test_image_sets_every_container_or_one_replica_types():
    job = copy.deepcopy(MINIMAL_JOB)
    everywhere = apply_overrides(job, ["image=my/img:2"])
    assert [
        c["image"]
        for r in ("master", "worker")
        for c in everywhere["spec"][r]["template"]["spec"]["containers"]
    ] == ["my/img:2", "my/img:2"]
    one = apply_overrides(job, ["image.master=my/img:3"])
    assert one["spec"]["master"]["template"]["spec"]["containers"][0]["image"] == "my/img:3"
    assert one["spec"]["worker"]["template"]["spec"]["containers"][0]["image"] == "img:1"


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "replicas.Worker=four",
            "--set replicas.Worker=four: 'four' is not a whole number of "
            "replicas; e.g. --set replicas.Worker=4",
        ),
        (
            "replicas.Chief=2",
            "--set replicas.Chief=2: the job has no replica type 'Chief' (it "
            "has: master, worker); use one of those",
        ),
        (
            "workers=4",
            "--set workers=4: unknown key 'workers'; use replicas.TYPE=N, image=REF "
            "or image.TYPE=REF",
        ),
        (
            "image",
            "--set 'image': expected KEY=VALUE (replicas.TYPE=N, image=REF or image.TYPE=REF)",
        ),
    ],
)
def test_a_bad_set_names_the_key_the_value_and_the_fix(item, message):
    with pytest.raises(UserError) as raised:
        apply_overrides(MINIMAL_JOB, [item])
    assert str(raised.value) == message


def test_a_bad_set_on_the_command_line_exits_2_with_one_line(capsys):
    assert main(["run", "jobs/chainermn-mnist.yaml", "--set", "replicas.Worker=-1"]) == 2
    assert capsys.readouterr().err == (
        "error: --set replicas.Worker=-1: '-1' is not a whole number of replicas; "
        "e.g. --set replicas.Worker=4\n"
    )


def test_a_set_value_the_spec_refuses_gets_the_specs_message(capsys, tmp_path):
    job = str(REPO / "jobs" / "pytorch-mnist.yaml")
    run_dir = tmp_path / "run"
    assert main(["run", job, "--set", "replicas.Master=2", "--run-dir", str(run_dir)]) == 2
    assert capsys.readouterr().err == (
        f"error: {job}: invalid job spec (1 problem(s))\n"
        "  spec.pytorchReplicaSpecs.Master.replicas: must be 1 (got 2); add Workers instead\n"
    )
    assert not run_dir.exists()
