"""`trainjobs run --set`: overrides are written into the spec before it is validated."""

from __future__ import annotations

import copy

import pytest
import yaml

from tests.conftest import MINIMAL_JOB, REPO
from trainjobs.cli import main
from trainjobs.cli.overrides import apply_overrides
from trainjobs.core.documents import load_file
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


def test_replicas_and_image_of_an_mpijob():
    changed = apply_overrides(
        load("mpijob-chainermn.yaml"), ["replicas.worker=4", "image=my/img:2"]
    )
    replicas = changed["spec"]["mpiReplicaSpecs"]
    assert (replicas["Launcher"]["replicas"], replicas["Worker"]["replicas"]) == (1, 4)
    assert [
        container["image"]
        for replica in replicas.values()
        for container in replica["template"]["spec"]["containers"]
    ] == ["my/img:2", "my/img:2"]


def test_a_trainjob_sets_its_trainers_image_and_node_count():
    changed = apply_overrides(load("trainjob-torch.yaml"), ["image=my/img:2", "replicas.Trainer=3"])
    assert changed["spec"]["trainer"]["image"] == "my/img:2"
    assert changed["spec"]["trainer"]["numNodes"] == 3


def test_a_trainjob_given_with_its_runtime_sets_the_trainjob_in_its_list():
    document = load_file(REPO / "jobs" / "trainjob-mpi-chainermn.yaml")
    changed = apply_overrides(document, ["image.trainer=my/img:2"])
    (trainjob,) = [item for item in changed["items"] if item["kind"] == "TrainJob"]
    assert trainjob["spec"]["trainer"]["image"] == "my/img:2"
    runtimes = [item for item in changed["items"] if item["kind"] != "TrainJob"]
    assert runtimes == [item for item in document["items"] if item["kind"] != "TrainJob"]


def test_the_replica_types_of_a_chainerjobs_worker_sets():
    job = copy.deepcopy(MINIMAL_JOB)
    job["spec"]["workerSets"] = {"big": job["spec"].pop("worker")}
    changed = apply_overrides(job, ["replicas.BIG=3", "image.big=my/img:4"])
    big = changed["spec"]["workerSets"]["big"]
    assert (big["replicas"], big["template"]["spec"]["containers"][0]["image"]) == (3, "my/img:4")


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            "replicas.Worker=four",
            "--set replicas.Worker=four: 'four' is not a whole number of "
            "replicas; e.g. --set replicas.Worker=4",
        ),
        (
            "replicas.Worker=\u00b2",
            "--set replicas.Worker=\u00b2: '\u00b2' is not a whole number of "
            "replicas; e.g. --set replicas.Worker=4",
        ),
        (
            "replicas.Worker=\uff14",
            "--set replicas.Worker=\uff14: '\uff14' is not a whole number of "
            "replicas; e.g. --set replicas.Worker=4",
        ),
        (
            "replicas.Chief=2",
            "--set replicas.Chief=2: this ChainerJob has no key 'replicas.Chief' (value '2'); "
            "valid keys: replicas.worker, image, image.master, image.worker",
        ),
        (
            "replicas.master=2",
            "--set replicas.master=2: this ChainerJob has no key 'replicas.master' (value '2'); "
            "valid keys: replicas.worker, image, image.master, image.worker",
        ),
        (
            "workers=4",
            "--set workers=4: this ChainerJob has no key 'workers' (value '4'); "
            "valid keys: replicas.worker, image, image.master, image.worker",
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


@pytest.mark.parametrize(
    ("file", "item", "message"),
    [
        (
            "mpijob-chainermn.yaml",
            "replicas.PS=4",
            "--set replicas.PS=4: this MPIJob has no key 'replicas.PS' (value '4'); valid keys: "
            "replicas.Launcher, replicas.Worker, image, image.Launcher, image.Worker",
        ),
        (
            "trainjob-torch.yaml",
            "image.launcher=my/img:2",
            "--set image.launcher=my/img:2: this TrainJob has no key 'image.launcher' (value "
            "'my/img:2'); valid keys: replicas.trainer, image, image.trainer",
        ),
    ],
)
def test_a_key_a_kind_does_not_have_is_refused_listing_the_ones_it_has(file, item, message):
    with pytest.raises(UserError) as raised:
        apply_overrides(load(file), [item])
    assert str(raised.value) == message


def test_an_image_for_a_replica_without_containers_is_refused():
    job = copy.deepcopy(MINIMAL_JOB)
    job["spec"]["worker"]["template"] = {"spec": {}}
    with pytest.raises(UserError) as raised:
        apply_overrides(job, ["image.worker=my/img:2"])
    assert str(raised.value) == (
        "--set image.worker=my/img:2: this ChainerJob has no key 'image.worker' (value "
        "'my/img:2'); valid keys: replicas.worker, image, image.master"
    )


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


def test_a_superscript_count_on_the_command_line_exits_2_with_one_line(capsys):
    assert main(["run", "jobs/tf-mnist.yaml", "--set", "replicas.Worker=\u00b2"]) == 2
    assert capsys.readouterr().err == (
        "error: --set replicas.Worker=\u00b2: '\u00b2' is not a whole number of replicas; "
        "e.g. --set replicas.Worker=4\n"
    )


def test_an_image_for_an_mpijob_on_the_command_line_is_not_ignored(capsys, tmp_path):
    """The image set is the one run: here one that local runs do not know, refused before any
    pod starts (the MPIJob's own image used to run instead)."""
    run_dir = tmp_path / "run"
    job = "jobs/mpijob-chainermn.yaml"
    assert main(["run", job, "--set", "image=my/unknown:1", "--run-dir", str(run_dir)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: image 'my/unknown:1' is not declared for process runs")
    assert not run_dir.exists()
