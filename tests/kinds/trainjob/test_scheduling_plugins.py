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


def test_min_member_counts_each_replicated_jobs_pods_once_as_trainers_pod_sets_do():
    given = runtime({"coscheduling": {}})
    jobs = given["spec"]["template"]["spec"]["replicatedJobs"]
    aux = copy.deepcopy(jobs[0])
    aux["name"] = "aux"
    aux["replicas"] = 2
    aux["template"]["metadata"] = {}
    jobs.append(aux)

    group = pod_group(beside(trainjob(), given))

    # numNodes 3 for the trainer, 1 (its parallelism) for aux whatever its replicas
    # (kubeflow/trainer#2318): 4, not the 5 pods the JobSet runs.
    assert group["spec"]["minMember"] == 4
    assert group["spec"]["minResources"] == {"cpu": "8"}


def test_min_resources_are_each_pods_requests_with_init_containers_and_overhead():
    given = runtime({"volcano": {}})
    pod = given["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    pod["spec"]["initContainers"] = [
        {"name": "setup", "image": "busybox:1", "resources": {"requests": {"cpu": "4"}}},
        {
            "name": "proxy",
            "image": "busybox:1",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "500m", "memory": "64Mi"}},
        },
    ]
    pod["spec"]["overhead"] = {"cpu": "250m", "memory": "64Mi"}

    group = pod_group(beside(trainjob(), given))

    # Per pod: the larger of the containers with the sidecar (2.5 CPUs) and the setup init
    # container (4), plus the overhead: 4.25 CPUs; memory 1Gi + 64Mi + 64Mi. Times 3 nodes.
    assert group["spec"]["minResources"] == {"cpu": "12750m", "memory": str(3 * 1152 * 2**20)}


def test_pod_level_requests_stand_for_the_containers_cpu_and_memory():
    given = runtime({"coscheduling": {}})
    pod = given["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["resources"] = {
        "requests": {"cpu": "1", "nvidia.com/gpu": "1"},
        "limits": {"nvidia.com/gpu": "1"},
    }
    pod["spec"]["resources"] = {"requests": {"cpu": "3", "memory": "2Gi"}}

    group = pod_group(beside(trainjob(), given))

    assert group["spec"]["minResources"] == {
        "cpu": "9",
        "memory": str(6 * 2**30),
        "nvidia.com/gpu": "3",
    }
