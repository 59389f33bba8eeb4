"""Gang scheduling: a TFJob or PyTorchJob that a gang scheduler places gets one PodGroup, made
before its pods, that every pod joins (Volcano or scheduler-plugins' coscheduling)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import schema_problems
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import JobDefinition, parse_job


def container(**resources: Any) -> dict[str, Any]:
    return {
        "name": "tensorflow",
        "image": "tf:1",
        **({"resources": resources} if resources else {}),
    }


def tfjob(scheduler_name: str | None = "volcano", **run_policy: Any) -> dict[str, Any]:
    def replica(count: int, **resources: Any) -> dict[str, Any]:
        pod: dict[str, Any] = {"containers": [container(**resources)]}
        if scheduler_name:
            pod["schedulerName"] = scheduler_name
        return {"replicas": count, "template": {"spec": pod}}

    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "gang"},
        "spec": {
            "runPolicy": run_policy,
            "tfReplicaSpecs": {
                "Chief": replica(1, requests={"cpu": "1", "memory": "2Gi"}),
                "Worker": replica(2, limits={"cpu": "500m", "memory": "1Gi", "nvidia.com/gpu": 1}),
                "PS": replica(1),
            },
        },
    }


def parse(document: dict[str, Any], **options: Any) -> JobDefinition:
    return parse_job(document, "job.yaml", "default", GraphOptions(**options))


def template(job: JobDefinition, name: str) -> dict[str, Any]:
    return job.graph.get(name).manifest["spec"]["template"]


POLICY = {"minAvailable": 4, "queue": "research", "priorityClass": "high"}


def test_a_volcano_job_gets_one_podgroup_with_its_scheduling_policy():
    job = parse(tfjob(schedulingPolicy=POLICY))
    groups = [n.manifest for n in job.graph.nodes if n.kind == "PodGroup"]
    assert len(groups) == 1
    assert (groups[0]["apiVersion"], groups[0]["metadata"]["name"]) == (
        "scheduling.volcano.sh/v1beta1",
        "gang",
    )
    assert groups[0]["spec"] == {
        "minMember": 4,
        "queue": "research",
        "priorityClassName": "high",
        "minResources": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "2"},
    }


@pytest.mark.parametrize(
    ("name", "task"),
    [("Job/gang-chief-0", "chief"), ("Job/gang-worker-1", "worker"), ("Job/gang-ps-0", "ps")],
)
def test_every_pod_joins_the_volcano_podgroup(name, task):
    pod = template(parse(tfjob(schedulingPolicy=POLICY)), name)
    assert pod["spec"]["schedulerName"] == "volcano"
    assert pod["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "gang",
        "volcano.sh/task-spec": task,
    }


def test_the_podgroup_exists_before_any_pod():
    job = parse(tfjob())
    workloads = [n for n in job.graph.nodes if n.kind == "Job"]
    assert all("PodGroup/gang" in n.depends_on or n.key == "Job/gang-chief-0" for n in workloads)
    order = [n.key for n in job.graph.nodes]
    assert order.index("PodGroup/gang") < min(order.index(n.key) for n in workloads)


def test_without_min_available_every_pod_is_a_member_and_the_queue_is_default():
    spec = parse(tfjob()).graph.get("PodGroup/gang").manifest["spec"]
    assert (spec["minMember"], spec["queue"]) == (4, "default")


def test_min_resources_count_the_first_min_available_pods_only():
    spec = parse(tfjob(schedulingPolicy={"minAvailable": 2})).graph.get("PodGroup/gang").manifest
    assert spec["spec"]["minResources"] == {
        "cpu": "1500m",
        "memory": "3Gi",
        "nvidia.com/gpu": "1",
    }


def test_scheduler_plugins_gets_its_podgroup_label_and_its_schedulers_name():
    document = tfjob(None, schedulingPolicy={"minAvailable": 3, "scheduleTimeoutSeconds": 60})
    job = parse(document, gang_scheduler="scheduler-plugins")
    group = job.graph.get("PodGroup/gang").manifest
    assert (group["apiVersion"], group["spec"]) == (
        "scheduling.x-k8s.io/v1alpha1",
        {
            "minMember": 3,
            "minResources": {"cpu": "2", "memory": "4Gi", "nvidia.com/gpu": "2"},
            "scheduleTimeoutSeconds": 60,
        },
    )
    pod = template(job, "Job/gang-worker-0")
    assert pod["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
    assert pod["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] == "gang"


def test_a_scheduling_policy_without_a_gang_scheduler_is_a_warning():
    job = parse(tfjob(None, schedulingPolicy=POLICY))
    assert [n.kind for n in job.graph.nodes].count("PodGroup") == 0
    assert [str(w) for w in job.warnings] == [
        "spec.runPolicy.schedulingPolicy: no gang scheduler places this job, so its pods are "
        "scheduled one by one: set the stack's trainjobs:gangScheduler (volcano, "
        "scheduler-plugins) or the pods' schedulerName: volcano"
    ]


@pytest.mark.parametrize("scheduler", ["volcano", "scheduler-plugins"])
def test_podgroups_are_valid_against_their_schedulers_crd(scheduler):
    group = parse(tfjob(schedulingPolicy=POLICY), gang_scheduler=scheduler).graph.get(
        "PodGroup/gang"
    )
    assert schema_problems(group.manifest) == []


def test_the_crd_check_refuses_a_podgroup_its_schema_does_not_allow():
    group = parse(tfjob(schedulingPolicy=POLICY)).graph.get("PodGroup/gang").manifest
    wrong = {**group, "spec": {**group["spec"], "minMember": "four"}, "extra": 1}
    assert schema_problems(wrong) == [
        "PodGroup/gang: 'four' is not of type 'integer'",
        "PodGroup/gang: Additional properties are not allowed ('extra' was unexpected)",
    ]


def test_the_render_command_takes_the_gang_scheduler(tmp_path: Path, capsys):
    from trainjobs.cli import main

    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(tfjob(None)))
    out = tmp_path / "out"
    assert (
        main(["render", str(spec), "--out", str(out), "--gang-scheduler", "scheduler-plugins"]) == 0
    )
    assert (out / "01-PodGroup-gang.yaml").is_file()
