"""``mlPolicy.torch.envInjection`` (Trainer v2.3.0, ``pkg/runtime/framework/plugins/torch/
torch.go``): the PET_* env, master address included, also on the named containers."""

from __future__ import annotations

import copy
from typing import Any

from tests.kinds.trainjob.test_scheduling_plugins import beside
from tests.kinds.trainjob.test_trainjob import (
    RUNTIME,
    node_container,
    refusal,
    the_jobset,
    trainjob,
)
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import parse_job

PET = [
    {"name": "PET_NNODES", "value": "2"},
    {"name": "PET_NPROC_PER_NODE", "value": "2"},
    {
        "name": "PET_NODE_RANK",
        "valueFrom": {
            "fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
            }
        },
    },
    {"name": "PET_MASTER_ADDR", "value": "tj-node-0-0.tj"},
    {"name": "PET_MASTER_PORT", "value": "29500"},
]


def injecting(targets: list[dict[str, Any]]) -> dict[str, Any]:
    given = copy.deepcopy(RUNTIME)
    given["spec"]["mlPolicy"] = {"numNodes": 2, "torch": {"envInjection": {"targets": targets}}}
    del given["spec"]["podGroupPolicy"]
    pod = given["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["initContainers"] = [
        {"name": "preflight", "image": "busybox:1", "env": [{"name": "CHECK", "value": "1"}]}
    ]
    pod["spec"]["containers"].append({"name": "monitor", "image": "busybox:1"})
    return given


def pod_spec(jobset: dict[str, Any]) -> dict[str, Any]:
    return jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]


def test_targets_init_and_sidecar_containers_get_the_pet_env_after_their_own():
    targets = [{"jobName": "node", "containerNames": ["preflight", "monitor"]}]

    pod = pod_spec(the_jobset(beside(trainjob(), injecting(targets))))

    assert pod["initContainers"][0]["env"] == [{"name": "CHECK", "value": "1"}, *PET]
    assert pod["containers"][1]["env"] == PET


def test_without_env_injection_only_the_node_container_gets_the_pet_env():
    jobset = the_jobset(beside(trainjob(), injecting([])))

    assert "env" not in pod_spec(jobset)["containers"][1]
    assert node_container(jobset)["env"] == PET


def test_a_target_the_runtime_lacks_is_refused_as_the_torch_plugins_validate_refuses_it():
    targets = [
        {"jobName": "node", "containerNames": ["sidecar"]},
        {"jobName": "aux", "containerNames": ["x"]},
    ]

    assert refusal(beside(trainjob(), injecting(targets))) == [
        'spec.runtimeRef: envInjection target podSet "node" container "sidecar" not found in '
        "runtime template; name a container or init container of that replicated Job",
        'spec.runtimeRef: envInjection target podSet "aux" container "x" not found in '
        "runtime template; name a container or init container of that replicated Job",
    ]


def test_naming_the_node_container_is_refused_as_the_crds_rule_refuses_it():
    targets = [{"jobName": "node", "containerNames": ["node"]}]

    assert refusal(beside(trainjob(), injecting(targets))) == [
        "ClusterTrainingRuntime/torch-distributed.spec.mlPolicy.torch.envInjection.targets[0]"
        '.containerNames: Invalid value: "array": containerNames must not include the main '
        "node container because PET_* envs are always injected into it"
    ]


def test_the_targets_get_the_env_when_the_trainjob_says_nothing_of_its_trainer():
    job = trainjob()
    del job["spec"]["trainer"]
    targets = [{"jobName": "node", "containerNames": ["monitor"]}]

    pod = pod_spec(the_jobset(beside(job, injecting(targets))))

    assert pod["containers"][1]["env"] == PET
    assert "env" not in pod["containers"][0]


def test_before_v2_3_env_injection_is_pruned_with_a_warning_and_injects_nothing():
    targets = [{"jobName": "node", "containerNames": ["monitor"]}]

    job = parse_job(
        beside(trainjob(), injecting(targets)),
        "tj.yaml",
        options=GraphOptions(trainer_version="v2.2.1"),
    )

    jobset = next(m for m in job.graph.manifests() if m["kind"] == "JobSet")
    assert "env" not in pod_spec(jobset)["containers"][1]
    assert [str(w) for w in job.warnings] == [
        "ClusterTrainingRuntime/torch-distributed.spec.mlPolicy.torch.envInjection: not a "
        "field of Kubeflow Trainer v2.2.1's runtime (v2.3 added it), so the API server prunes "
        "it and no container but the node's gets the PET_* env; select v2.3.0 with "
        "--trainer-version or trainjobs:trainerVersion"
    ]
