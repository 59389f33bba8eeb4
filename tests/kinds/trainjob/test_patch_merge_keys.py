"""A TrainJob's patches merged as Trainer merges them: a strategic merge patch
(``pkg/runtime/core/trainingruntime.go``, ``mergeRuntimePatches``), whose lists of items merge
by each list's key in the Kubernetes types (``patchMergeKey``)."""

from __future__ import annotations

import copy
from typing import Any

from tests.kinds.trainjob.test_scheduling_plugins import beside
from tests.kinds.trainjob.test_trainjob import RUNTIME, node_container, the_jobset, trainjob


def patching(pod_spec: dict[str, Any]) -> dict[str, Any]:
    job = trainjob()
    job["spec"]["runtimePatches"] = [
        {
            "manager": "example.com/tool",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {"name": "node", "template": {"spec": {"template": {"spec": pod_spec}}}}
                        ]
                    }
                }
            },
        }
    ]
    given = copy.deepcopy(RUNTIME)
    del given["spec"]["podGroupPolicy"]
    pod = given["spec"]["template"]["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]
    pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    pod["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    pod["spec"]["schedulingGates"] = [{"name": "example.com/quota"}]
    return beside(job, given)


def test_volume_mounts_merge_by_mount_path_so_one_volume_mounts_twice():
    document = patching(
        {
            "containers": [
                {"name": "node", "volumeMounts": [{"name": "data", "mountPath": "/cache"}]}
            ]
        }
    )

    assert node_container(the_jobset(document))["volumeMounts"] == [
        {"name": "data", "mountPath": "/data"},
        {"name": "data", "mountPath": "/cache"},
    ]


def test_a_mount_at_the_same_path_replaces_the_runtimes():
    document = patching(
        {
            "containers": [
                {
                    "name": "node",
                    "volumeMounts": [{"name": "scratch", "mountPath": "/data", "readOnly": True}],
                }
            ],
            "volumes": [{"name": "scratch", "emptyDir": {"medium": "Memory"}}],
        }
    )

    assert node_container(the_jobset(document))["volumeMounts"] == [
        {"name": "scratch", "mountPath": "/data", "readOnly": True},
    ]


def test_scheduling_gates_merge_by_name():
    document = patching({"schedulingGates": [{"name": "example.com/topology"}]})
    pod = the_jobset(document)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]

    assert pod["spec"]["schedulingGates"] == [
        {"name": "example.com/quota"},
        {"name": "example.com/topology"},
    ]
