"""A TrainJob's PodGroup as Trainer v2.3.0's scheduling plugins build it
(``pkg/runtime/framework/plugins/volcano/volcano.go``, ``coscheduling/coscheduling.go``)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.conftest import schema_problems
from tests.kinds.trainjob.test_trainjob import RUNTIME, refusal, trainjob
from trainjobs.kinds.registry import parse_job

QUEUE = "scheduling.volcano.sh/queue-name"


def runtime(policy: dict[str, Any], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    found = copy.deepcopy(RUNTIME)
    found["spec"]["podGroupPolicy"] = policy
    if annotations is not None:
        found["spec"]["template"]["metadata"] = {"annotations": annotations}
    return found


def beside(job: dict[str, Any], given: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "List", "items": [given, job]}


def pod_group(document: dict[str, Any]) -> dict[str, Any]:
    manifests = parse_job(document, "tj.yaml").graph.manifests()
    return next(m for m in manifests if m["kind"] == "PodGroup")


def test_the_volcano_pod_group_takes_its_queue_from_the_runtimes_annotation():
    group = pod_group(beside(trainjob(), runtime({"volcano": {}}, {QUEUE: "high-priority"})))

    assert group["spec"]["queue"] == "high-priority"
    assert schema_problems(group) == []


def test_a_trainjobs_own_annotation_names_the_queue_as_v2_1_allowed():
    job = trainjob()
    job["spec"]["annotations"] = {QUEUE: "team-a"}

    group = pod_group(beside(job, runtime({"volcano": {}}, {QUEUE: "high-priority"})))

    assert group["spec"]["queue"] == "team-a"


def test_an_empty_queue_name_is_refused_as_volcanos_validate_refuses_it():
    assert refusal(beside(trainjob(), runtime({"volcano": {}}, {QUEUE: ""}))) == [
        f'spec.annotations[{QUEUE}]: Invalid value: "": Volcano queue name must not be '
        "empty; name the Volcano queue or remove the annotation"
    ]


def test_the_volcano_pod_group_carries_the_runtimes_network_topology():
    policy = {"volcano": {"networkTopology": {"mode": "soft", "highestTierAllowed": 2}}}

    group = pod_group(beside(trainjob(), runtime(policy)))

    assert group["spec"]["networkTopology"] == {"mode": "soft", "highestTierAllowed": 2}
    assert schema_problems(group) == []


def test_the_network_topology_takes_the_crds_defaults():
    group = pod_group(beside(trainjob(), runtime({"volcano": {"networkTopology": {}}})))

    assert group["spec"]["networkTopology"] == {"mode": "hard", "highestTierAllowed": 1}


@pytest.mark.parametrize("mode", ["strict", ""])
def test_a_network_topology_mode_outside_the_crds_enum_is_refused(mode):
    policy = {"volcano": {"networkTopology": {"mode": mode}}}

    assert refusal(beside(trainjob(), runtime(policy))) == [
        "ClusterTrainingRuntime/torch-distributed.spec.podGroupPolicy.volcano.networkTopology"
        f'.mode: Unsupported value: "{mode}": supported values: "hard", "soft"'
    ]
