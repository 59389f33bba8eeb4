"""ChainerJob spec models: both accepted shapes, the operator's defaults, and validation."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import REPO
from trainjobs.core.errors import SpecError
from trainjobs.kinds.chainer import spec as chainer_spec
from trainjobs.kinds.mpi.plan import MpiPlan
from trainjobs.kinds.registry import load_job


def plan_of(document: dict[str, Any]) -> MpiPlan:
    return chainer_spec.parse(document, "job.yaml")


def test_seed_shape_worker_becomes_one_statefulset_named_job_worker(job):
    plan = plan_of(job)
    assert [(g.statefulset, g.replicas, g.pods) for g in plan.workers] == [
        ("demo-worker", 2, ["demo-worker-0", "demo-worker-1"])
    ]


def test_operator_shape_worker_sets_become_one_statefulset_each(job):
    worker = job["spec"].pop("worker")
    job["spec"]["workerSets"] = {"cpu": {**worker, "replicas": 1}, "gpu": worker}
    plan = plan_of(job)
    assert [(g.statefulset, g.pods) for g in plan.workers] == [
        ("demo-workerset-cpu", ["demo-workerset-cpu-0"]),
        ("demo-workerset-gpu", ["demo-workerset-gpu-0", "demo-workerset-gpu-1"]),
    ]


def test_single_unnamed_container_is_named_chainer(job):
    plan = plan_of(job)
    assert plan.master.container == "chainer"
    assert plan.master.template["spec"]["containers"][0]["name"] == "chainer"


def test_parsing_never_mutates_the_callers_document(job):
    plan_of(job)
    assert "name" not in job["spec"]["master"]["template"]["spec"]["containers"][0]


def test_main_container_is_the_one_named_chainer_among_sidecars(job):
    job["spec"]["master"]["template"]["spec"]["containers"] = [
        {"name": "proxy", "image": "envoy:1"},
        {"name": "chainer", "image": "img:1"},
    ]
    assert plan_of(job).master.container == "chainer"


def test_main_container_is_the_first_when_none_is_named_chainer(job):
    job["spec"]["master"]["template"]["spec"]["containers"] = [
        {"name": "trainer", "image": "img:1"},
        {"name": "proxy", "image": "envoy:1"},
    ]
    assert plan_of(job).master.container == "trainer"


def test_slots_default_to_one_without_gpus(job):
    plan = plan_of(job)
    assert (plan.master.slots, plan.workers[0].slots) == (1, 1)


def test_slots_follow_the_gpu_limit(job):
    container = job["spec"]["worker"]["template"]["spec"]["containers"][0]
    container["resources"] = {"limits": {"nvidia.com/gpu": "4"}}
    assert plan_of(job).workers[0].slots == 4


def test_explicit_slots_win_over_the_gpu_limit(job):
    worker = job["spec"]["worker"]
    worker["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 8}}
    worker["mpiConfig"] = {"slots": 2}
    assert plan_of(job).workers[0].slots == 2


def test_worker_replicas_default_to_one(job):
    del job["spec"]["worker"]["replicas"]
    assert plan_of(job).workers[0].replicas == 1


def test_a_job_without_workers_is_a_single_pod_job(job):
    del job["spec"]["worker"]
    plan = plan_of(job)
    assert (plan.workers, plan.worker_pods) == ([], [])


def test_master_replicas_of_one_is_accepted(job):
    job["spec"]["master"]["replicas"] = 1
    assert plan_of(job).names.master == "demo-master"


def test_namespace_comes_from_the_spec_before_the_default(job):
    assert plan_of(job).namespace == "default"
    job["metadata"]["namespace"] = "research"
    assert plan_of(job).namespace == "research"


def test_the_longest_valid_job_name_is_56_characters(job):
    del job["spec"]["worker"]
    job["metadata"]["name"] = "a" * 56
    assert plan_of(job).names.master == "a" * 56 + "-master"


def test_every_problem_of_a_spec_is_reported_at_once(job):
    job["spec"]["backend"] = "gloo"
    job["spec"]["worker"]["replicas"] = 0
    with pytest.raises(SpecError) as raised:
        plan_of(job)
    assert [p.path for p in raised.value.problems] == ["spec.backend", "spec.worker.replicas"]


def test_every_example_job_is_valid():
    examples = sorted((REPO / "jobs").glob("*.yaml"))
    assert {"chainer-mnist.yaml", "chainermn-mnist.yaml"} <= {p.name for p in examples}
    assert [load_job(p).name for p in examples] == [p.stem for p in examples]
