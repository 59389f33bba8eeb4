"""Runtimes from files of their own (a platform installs them apart from its TrainJobs, as
OpenDataHub keeps the runtime and the TrainJob in two files): read from a file or a directory,
then found as installed runtimes are, after those beside the TrainJob in its file."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import yaml

from tests.kinds.trainjob.test_scheduling_plugins import beside
from tests.kinds.trainjob.test_trainjob import RUNTIME, trainjob
from trainjobs.core.documents import load_runtime_files
from trainjobs.core.errors import UserError
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import parse_job


def named(name: str) -> dict:
    runtime = copy.deepcopy(RUNTIME)
    runtime["metadata"]["name"] = name
    del runtime["spec"]["podGroupPolicy"]
    return runtime


def anchor(job) -> str:
    return next(m for m in job.graph.manifests() if m["kind"] == "ConfigMap")["data"]["runtime"]


def test_a_file_and_a_directory_give_their_runtimes_in_order(tmp_path: Path):
    one = tmp_path / "one.yaml"
    one.write_text(yaml.safe_dump(named("team-torch")))
    folder = tmp_path / "runtimes"
    folder.mkdir()
    (folder / "b.yaml").write_text(yaml.safe_dump_all([named("b1"), named("b2")]))
    (folder / "a.yml").write_text(yaml.safe_dump(named("a1")))
    (folder / "kustomization.yaml").write_text("resources: [a.yml, b.yaml]\n")
    (folder / "notes.txt").write_text("not YAML")

    documents, warnings = load_runtime_files([str(one), str(folder)])

    assert [(d["metadata"]["name"], source) for d, source in documents] == [
        ("team-torch", str(one)),
        ("a1", str(folder / "a.yml")),
        ("b1", str(folder / "b.yaml")),
        ("b2", str(folder / "b.yaml")),
    ]
    assert [str(w) for w in warnings] == [
        f"{folder / 'kustomization.yaml'}: not a ClusterTrainingRuntime or TrainingRuntime "
        "(a document without kind): left out"
    ]


def test_a_missing_path_is_refused_naming_it(tmp_path: Path):
    with pytest.raises(UserError) as caught:
        load_runtime_files([str(tmp_path / "absent.yaml")])

    assert str(caught.value) == (
        f"--runtimes {str(tmp_path / 'absent.yaml')!r}: no such file or directory; name a "
        "runtime file or a directory of them"
    )


def test_an_installed_runtime_is_found_after_the_files_own(tmp_path: Path):
    path = tmp_path / "rt.yaml"
    path.write_text(yaml.safe_dump(named("team-torch")))
    documents, _ = load_runtime_files([str(path)])
    options = GraphOptions(runtimes=tuple(documents))

    job = parse_job(
        trainjob("team-torch", command=["torchrun", "t.py"]), "tj.yaml", options=options
    )
    mine = named("team-torch")
    mine["spec"]["mlPolicy"]["numNodes"] = 5
    own = parse_job(beside(trainjob("team-torch"), mine), "tj.yaml", options=options)

    assert anchor(job) == f"ClusterTrainingRuntime/team-torch ({path})"
    assert anchor(own) == "ClusterTrainingRuntime/team-torch (tj.yaml)"


def test_an_installed_runtime_wins_over_a_released_one_of_its_name(tmp_path: Path):
    path = tmp_path / "rt.yaml"
    path.write_text(yaml.safe_dump(named("torch-distributed")))
    documents, _ = load_runtime_files([str(path)])

    job = parse_job(trainjob(), "tj.yaml", options=GraphOptions(runtimes=tuple(documents)))

    assert anchor(job) == f"ClusterTrainingRuntime/torch-distributed ({path})"
