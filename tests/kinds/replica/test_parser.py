"""The replica-typed kinds' one parser: a kind is a declaration and its own rules, read into
a typed plan with the kind's defaults (here a Worker-only kind, as JAXJob will be)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import Field, SkipValidation

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import GraphOptions
from trainjobs.core.labels import OperatorLabels
from trainjobs.core.replica_spec import (
    ReplicaJobPlan,
    ReplicaSpec,
    ReplicatedJobSpec,
    Restart,
    RunSettings,
    Success,
    check_total_pods,
    deciding_restart,
)
from trainjobs.core.spec_model import SpecModel
from trainjobs.kinds.replica import parser
from trainjobs.kinds.replica.declaration import JobContext, ReplicaKind, ReplicaMap, VersionPlan


class ToyJobSpec(ReplicatedJobSpec):
    toy_replica_specs: dict[str, SkipValidation[ReplicaSpec]] = Field(default_factory=dict)


def toy_rules(
    spec: SpecModel,
    replicas: ReplicaMap,
    context: JobContext,
    problems: list[Problem],
    warnings: list[Problem],
) -> VersionPlan | None:
    check_total_pods(replicas.groups, "spec.toyReplicaSpecs", problems)
    if problems:
        return None
    success = Success("worker", (0,))
    groups = [deciding_restart(group, success, warnings) for group in replicas.groups]
    env = {
        ("worker", index): [{"name": "TOY_RANK", "value": str(index)}]
        for index in range(groups[0].replicas)
    }
    return VersionPlan(groups, replicas.run, success, env, "all")


TOYJOB = ReplicaKind(
    name="ToyJob",
    versions=("v1",),
    spec_models={"v1": ToyJobSpec},
    operator_labels={"v1": OperatorLabels()},
    replica_map="toy_replica_specs",
    replica_types=("Worker",),
    default_container="toy",
    port_name="toyjob-port",
    default_port=6666,
    default_restart_policy="OnFailure",
    default_clean_pod_policy={"v1": "None"},
    empty_map="required: Workers",
    example_type="Worker:",
    rules=toy_rules,
)


def toyjob(**replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "ToyJob",
        "metadata": {"name": "toy"},
        "spec": {"toyReplicaSpecs": replica_specs},
    }


def worker(replicas: int) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": "toy", "image": "toy:1"}]}},
    }


def parse(document: dict[str, Any]) -> ReplicaJobPlan:
    return parser.parse(TOYJOB, document, "job.yaml", "team", GraphOptions())


def problems_of(document: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as error:
        parse(document)
    return [str(problem) for problem in error.value.problems]


def test_a_declared_kind_reads_into_a_typed_plan_with_its_defaults():
    plan = parse(toyjob(Worker=worker(2)))

    assert (plan.kind, plan.api_version, plan.job, plan.namespace) == (
        "ToyJob",
        "kubeflow.org/v1",
        "toy",
        "team",
    )
    [group] = plan.groups
    assert (group.type, group.replicas, group.container, group.port) == ("worker", 2, "toy", 6666)
    assert group.template["spec"]["containers"][0]["ports"] == [
        {"name": "toyjob-port", "containerPort": 6666}
    ]
    assert group.restart == Restart("OnFailure", "OnFailure")
    assert plan.run == RunSettings(clean_pod_policy="None")
    assert plan.success == Success("worker", (0,))
    assert plan.env[("worker", 1)] == [{"name": "TOY_RANK", "value": "1"}]
    assert plan.operator_labels == OperatorLabels()


def test_a_key_that_is_not_the_kinds_replica_type_is_refused_with_its_own_types():
    assert problems_of(toyjob(Master=worker(1), worker=worker(1))) == [
        "spec.toyReplicaSpecs.Master: 'Master' is not a ToyJob replica type: use Worker",
        "spec.toyReplicaSpecs.worker: 'worker' is not a ToyJob replica type: write 'Worker'",
    ]


def test_an_empty_replica_map_is_refused_with_the_kinds_message():
    assert problems_of(toyjob()) == ["spec.toyReplicaSpecs: required: Workers"]


def test_replica_fields_without_a_type_name_the_kinds_example():
    assert problems_of(toyjob(replicas=2)) == [
        "spec.toyReplicaSpecs: 'replicas' is a replica spec's field, not a replica type: put "
        "it under a replica type such as Worker:"
    ]
