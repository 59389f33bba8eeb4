"""GPU node pools (under the Pulumi SDK's mock runtime) and the scheduling profile GPU pods get."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path

import boto3
import pytest
import yaml
from moto import mock_aws

from tests.conftest import REPO, schema_problems
from trainjobs.cloud.device_plugin import device_plugin_daemonset
from trainjobs.cloud.instances import INSTANCE_TYPES, GpuInstanceType
from trainjobs.cloud.node_pool import GpuNodePoolConfig
from trainjobs.cloud.scheduling import GpuPod, SchedulingProfile, apply_scheduling, gpu_pods
from trainjobs.core.errors import ConfigError, SpecError, UserError
from trainjobs.kinds.registry import JobDefinition, load_job, parse_job
from trainjobs.review.preview import PreviewResult, Registration, run_preview

INFRA = REPO / "infra"
POOL = "trainjobs:index:GpuNodePool"
NODE_GROUP = "aws:eks/nodeGroup:NodeGroup"
DAEMONSET = "kubernetes:apps/v1:DaemonSet"
GPU_TOLERATION = {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
A100_PROFILE = {
    "pool": "a100",
    "gpuResource": "nvidia.com/gpu",
    "gpusPerNode": 8,
    "nodeSelector": {"trainjobs.io/gpu-pool": "a100"},
    "tolerations": [GPU_TOLERATION],
    "instanceTypes": ["p4d.24xlarge"],
    "subnetIds": ["subnet-0a1b2c3d4e5f60001"],
}
CLUSTER = {
    "clusterName": "training",
    "nodeRoleArn": "arn:aws:iam::123456789012:role/training-gpu-nodes",
    "subnetIds": ["subnet-0a1b2c3d4e5f60001"],
}


def the(result: PreviewResult, type_: str) -> Registration:
    (found,) = [r for r in result.resources if r.type == type_]
    return found


@pytest.fixture(scope="module")
def l4() -> PreviewResult:
    return run_preview("gpu-l4", INFRA)


@pytest.fixture(scope="module")
def a100() -> PreviewResult:
    return run_preview("gpu-a100", INFRA)


def infra_project(tmp_path: Path, pools: list[dict]) -> Path:
    """An infra project with the real program and one stack `test` with these pools."""
    shutil.copy(INFRA / "__main__.py", tmp_path / "__main__.py")
    shutil.copy(INFRA / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    config = {f"trainjobs-infra:{key}": value for key, value in CLUSTER.items()}
    config["trainjobs-infra:pools"] = pools
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def pool_config(**fields) -> GpuNodePoolConfig:
    return GpuNodePoolConfig.parse(
        {**CLUSTER, "name": "l4", "instanceTypes": ["g6.xlarge"], **fields}, "pool"
    )


def pool_problems(**fields) -> list[str]:
    with pytest.raises(ConfigError) as raised:
        pool_config(**fields)
    return [str(problem) for problem in raised.value.problems]


# The node group


def test_node_group_uses_the_al2023_nvidia_ami_by_default(l4):
    assert the(l4, NODE_GROUP).inputs["amiType"] == "AL2023_x86_64_NVIDIA"


def test_node_group_taints_its_nodes_so_only_gpu_pods_land_there(l4):
    assert the(l4, NODE_GROUP).inputs["taints"] == [
        {"effect": "NO_SCHEDULE", "key": "nvidia.com/gpu", "value": "true"}
    ]


def test_node_group_labels_nodes_with_the_pool_and_the_users_labels(l4):
    assert the(l4, NODE_GROUP).inputs["labels"] == {
        "trainjobs.io/gpu": "l4",
        "trainjobs.io/gpu-pool": "l4",
    }


def test_node_group_scaling_capacity_and_placement_come_from_the_stack(l4):
    inputs = the(l4, NODE_GROUP).inputs
    assert inputs["scalingConfig"] == {"desiredSize": 1, "maxSize": 8, "minSize": 0}
    assert inputs["capacityType"] == "SPOT"
    assert inputs["instanceTypes"] == ["g6.xlarge"]
    assert inputs["clusterName"] == "training"
    assert inputs["nodeRoleArn"] == "arn:aws:iam::123456789012:role/training-gpu-nodes"
    assert inputs["subnetIds"] == ["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
    assert inputs["diskSize"] == 200


def test_pool_is_one_component_owning_its_node_group_and_device_plugin(l4):
    pool = the(l4, POOL)
    assert [(r.type, r.name) for r in l4.resources] == [
        (POOL, "l4"),
        (NODE_GROUP, "l4"),
        (DAEMONSET, "nvidia-device-plugin-l4"),
    ]
    assert {r.parent for r in l4.resources if r is not pool} == {pool.urn}


def test_efa_pool_launches_nodes_with_an_efa_interface_in_a_cluster_placement_group(a100):
    assert the(a100, "aws:ec2/placementGroup:PlacementGroup").inputs == {"strategy": "cluster"}
    template = the(a100, "aws:ec2/launchTemplate:LaunchTemplate").inputs
    assert template["networkInterfaces"] == [
        {
            "deleteOnTermination": "true",
            "deviceIndex": 0,
            "interfaceType": "efa",
            "securityGroups": ["sg-0a1b2c3d4e5f60001"],
        }
    ]
    assert template["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "ebs": {"deleteOnTermination": "true", "volumeSize": 200, "volumeType": "gp3"},
        }
    ]
    node_group = the(a100, NODE_GROUP).inputs
    assert node_group["launchTemplate"]["id"] == "a100-efa"
    assert "diskSize" not in node_group  # EKS refuses a disk size next to a launch template


def test_infra_stack_exports_each_pools_scheduling_profile(a100):
    assert a100.outputs == {"schedulingProfiles": {"a100": A100_PROFILE}}


# The NVIDIA device plugin


def test_device_plugin_daemonset_is_pinned_tolerant_critical_and_mounts_the_plugin_dir(l4):
    assert the(l4, DAEMONSET).inputs == {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "labels": {
                "app.kubernetes.io/instance": "l4",
                "app.kubernetes.io/managed-by": "trainjobs",
                "app.kubernetes.io/name": "nvidia-device-plugin",
            },
            "name": "nvidia-device-plugin-l4",
            "namespace": "kube-system",
        },
        "spec": {
            "selector": {
                "matchLabels": {
                    "app.kubernetes.io/instance": "l4",
                    "app.kubernetes.io/name": "nvidia-device-plugin",
                }
            },
            "template": {
                "metadata": {
                    "labels": {
                        "app.kubernetes.io/instance": "l4",
                        "app.kubernetes.io/managed-by": "trainjobs",
                        "app.kubernetes.io/name": "nvidia-device-plugin",
                    }
                },
                "spec": {
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "image": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0",
                            "name": "nvidia-device-plugin",
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {
                                    "mountPath": "/var/lib/kubelet/device-plugins",
                                    "name": "device-plugin",
                                }
                            ],
                        }
                    ],
                    "nodeSelector": {"trainjobs.io/gpu-pool": "l4"},
                    "priorityClassName": "system-node-critical",
                    "tolerations": [GPU_TOLERATION],
                    "volumes": [
                        {
                            "hostPath": {
                                "path": "/var/lib/kubelet/device-plugins",
                                "type": "Directory",
                            },
                            "name": "device-plugin",
                        }
                    ],
                },
            },
            "updateStrategy": {"type": "RollingUpdate"},
        },
    }


def test_device_plugin_daemonset_passes_strict_schema_validation(l4):
    assert schema_problems(the(l4, DAEMONSET).inputs) == []
    assert (
        schema_problems(
            device_plugin_daemonset(pool_config().name, pool_config().device_plugin_image)
        )
        == []
    )


def test_bottlerocket_pool_relies_on_the_device_plugin_built_into_the_ami(tmp_path):
    project = infra_project(
        tmp_path,
        [{"name": "l4", "instanceTypes": ["g6.xlarge"], "amiType": "BOTTLEROCKET_x86_64_NVIDIA"}],
    )
    result = run_preview("test", project)
    assert [r.type for r in result.resources] == [POOL, NODE_GROUP]
    assert the(result, NODE_GROUP).inputs["amiType"] == "BOTTLEROCKET_x86_64_NVIDIA"


# Pool config validation: one message per problem, naming the field, the value and the fix


def test_end_of_life_al2_gpu_ami_is_refused():
    assert pool_problems(amiType="AL2_x86_64_GPU") == [
        "amiType: 'AL2_x86_64_GPU' is an Amazon Linux 2 AMI, which reached end of support in "
        "November 2025; use 'AL2023_x86_64_NVIDIA' (the default) or 'BOTTLEROCKET_x86_64_NVIDIA'"
    ]


def test_an_ami_without_nvidia_drivers_is_refused():
    assert pool_problems(amiType="AL2023_x86_64_STANDARD") == [
        "amiType: 'AL2023_x86_64_STANDARD' is not an EKS AMI type with NVIDIA drivers; use one "
        "of AL2023_x86_64_NVIDIA, AL2023_ARM_64_NVIDIA, BOTTLEROCKET_x86_64_NVIDIA, "
        "BOTTLEROCKET_ARM_64_NVIDIA"
    ]


def test_an_unknown_instance_type_is_refused_with_the_closest_known_one():
    assert pool_problems(instanceTypes=["p4d.24xlarg"]) == [
        "instanceTypes: 'p4d.24xlarg' is not an EC2 instance type with NVIDIA GPUs; "
        "did you mean 'p4d.24xlarge'?"
    ]


def test_desired_size_must_lie_between_min_and_max():
    assert pool_problems(minSize=1, desiredSize=5, maxSize=4) == [
        "desiredSize: must be between minSize (1) and maxSize (4) (got 5)"
    ]


def test_max_size_below_min_size_is_refused():
    assert pool_problems(minSize=3, desiredSize=3, maxSize=2) == [
        "maxSize: must be at least minSize (3) (got 2)"
    ]


def test_capacity_type_is_on_demand_or_spot():
    assert pool_problems(capacityType="spot") == [
        "capacityType: must be 'ON_DEMAND' or 'SPOT' (got 'spot')"
    ]


def test_efa_needs_efa_instance_types_security_groups_and_a_single_subnet():
    assert pool_problems(
        efa=True, subnetIds=["subnet-0a1b2c3d4e5f60001", "subnet-0a1b2c3d4e5f60002"]
    ) == [
        "instanceTypes[0]: 'g6.xlarge' does not support EFA; set efa: false or choose an EFA "
        "instance type such as 'p4d.24xlarge'",
        "securityGroupIds: required when efa is true: a launch template with an EFA interface "
        "must name the node security groups (at least the cluster security group)",
        "subnetIds: an EFA pool runs in a cluster placement group, which lives in one "
        "availability zone: give exactly one subnet (got 2)",
    ]


def test_an_arm_instance_type_needs_an_arm_ami():
    assert pool_problems(instanceTypes=["g5g.xlarge"]) == [
        "instanceTypes[0]: 'g5g.xlarge' is arm64 but amiType 'AL2023_x86_64_NVIDIA' is for "
        "x86_64; use an AMI type for arm64 (AL2023_ARM_64_NVIDIA)"
    ]


def test_instance_types_of_one_pool_must_have_the_same_gpu_count():
    assert pool_problems(instanceTypes=["g6.xlarge", "g6.12xlarge"]) == [
        "instanceTypes: all instance types of a pool need the same number of GPUs per node "
        "(got g6.xlarge: 1, g6.12xlarge: 4); declare one pool per size"
    ]


def test_the_device_plugin_image_must_be_pinned():
    assert pool_problems(devicePluginImage="nvcr.io/nvidia/k8s-device-plugin:latest") == [
        "devicePluginImage: pin the image by version tag or digest, e.g. "
        "'nvcr.io/nvidia/k8s-device-plugin:v0.19.0' (got 'nvcr.io/nvidia/k8s-device-plugin:latest')"
    ]


def test_unknown_pool_fields_and_malformed_ids_are_refused():
    assert pool_problems(maxNodes=3, nodeRoleArn="training-gpu-nodes", subnetIds=["sn-1"]) == [
        "nodeRoleArn: must be an IAM role ARN such as arn:aws:iam::123456789012:role/eks-gpu-nodes "
        "(got 'training-gpu-nodes')",
        "subnetIds: subnet IDs look like 'subnet-0123456789abcdef0' (got ['sn-1'])",
        "maxNodes: unknown field 'maxNodes'; check the spelling (see crds/)",
    ]


def test_an_invalid_pool_fails_the_infra_preview_with_every_problem(tmp_path):
    project = infra_project(
        tmp_path,
        [
            {
                "name": "a100",
                "instanceTypes": ["p4d.24xlarge"],
                "amiType": "AL2_x86_64_GPU",
                "maxSize": 0,
            }
        ],
    )
    with pytest.raises(UserError) as raised:
        run_preview("test", project)
    assert str(raised.value) == (
        "trainjobs-infra:pools[0]: invalid GPU pool (2 problem(s))\n"
        "  amiType: 'AL2_x86_64_GPU' is an Amazon Linux 2 AMI, which reached end of support in "
        "November 2025; use 'AL2023_x86_64_NVIDIA' (the default) or 'BOTTLEROCKET_x86_64_NVIDIA'\n"
        "  maxSize: must be at least 1 (got 0)"
    )


def test_known_instance_types_match_aws_data(monkeypatch):
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        ec2 = boto3.client("ec2")
        described = ec2.describe_instance_types(InstanceTypes=list(INSTANCE_TYPES))["InstanceTypes"]
    from_aws = {}
    for item in described:
        (gpu,) = item["GpuInfo"]["Gpus"]
        from_aws[item["InstanceType"]] = GpuInstanceType(
            gpu["Count"],
            gpu["Name"],
            gpu["MemoryInfo"]["SizeInMiB"],
            efa=item["NetworkInfo"]["EfaSupported"],
            arch=item["ProcessorInfo"]["SupportedArchitectures"][0],
        )
    assert from_aws == INSTANCE_TYPES
    assert (INSTANCE_TYPES["p4d.24xlarge"].gpus, INSTANCE_TYPES["g6.xlarge"].gpus) == (8, 1)


# The scheduling profile


def test_profile_round_trips_through_stack_config_as_an_object_or_json():
    profile = SchedulingProfile.from_config(A100_PROFILE)
    assert profile is not None
    assert profile.to_config() == A100_PROFILE
    assert SchedulingProfile.from_config(json.dumps(A100_PROFILE)) == profile
    assert SchedulingProfile.from_config(None) is None


def test_a_pools_profile_names_its_label_taint_and_gpus_per_node():
    config = pool_config(instanceTypes=["g6.12xlarge"])
    assert config.scheduling_profile().to_config() == {
        "pool": "l4",
        "gpuResource": "nvidia.com/gpu",
        "gpusPerNode": 4,
        "nodeSelector": {"trainjobs.io/gpu-pool": "l4"},
        "tolerations": [GPU_TOLERATION],
        "instanceTypes": ["g6.12xlarge"],
        "subnetIds": ["subnet-0a1b2c3d4e5f60001"],
    }


def test_an_invalid_profile_in_stack_config_is_a_clear_error():
    broken = {
        **A100_PROFILE,
        "gpusPerNode": 0,
        "tolerations": [{"key": "x", "effect": "NO_SCHEDULE"}],
    }
    with pytest.raises(ConfigError) as raised:
        SchedulingProfile.from_config(broken)
    assert str(raised.value) == (
        "trainjobs:gpuPool: invalid GPU scheduling profile (2 problem(s))\n"
        "  gpusPerNode: must be greater than 0 (got 0)\n"
        "  tolerations[0].effect: must be 'NoSchedule', 'PreferNoSchedule' or 'NoExecute' "
        "(got 'NO_SCHEDULE')"
    )


# Applying the profile to job graphs


@pytest.fixture
def profile() -> SchedulingProfile:
    loaded = SchedulingProfile.from_config(A100_PROFILE)
    assert loaded is not None
    return loaded


def pod_specs(graph) -> dict[str, dict]:
    return {
        node.key: (node.manifest["spec"]["template"]["spec"])
        for node in graph.nodes
        if node.kind in ("Job", "StatefulSet")
    }


def gpu_job() -> JobDefinition:
    return load_job(REPO / "jobs" / "chainermn-gpu.yaml")


def test_gpu_pods_get_the_pools_toleration_and_node_selector(profile):
    scheduled = pod_specs(apply_scheduling(gpu_job().graph, profile))
    for key in ("StatefulSet/chainermn-gpu-worker", "Job/chainermn-gpu-master"):
        assert scheduled[key]["tolerations"] == [GPU_TOLERATION]
        assert scheduled[key]["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}
        assert scheduled[key]["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}


def test_hostfile_slots_follow_the_gpu_limit_of_each_pod(profile):
    graph = apply_scheduling(gpu_job().graph, profile)
    assert graph.get("ConfigMap/chainermn-gpu-assets").manifest["data"]["hostfile"] == (
        "chainermn-gpu-master slots=8\nchainermn-gpu-worker-0 slots=8\n"
    )


def test_pods_without_gpus_stay_off_the_gpu_pool(profile):
    graph = load_job(REPO / "jobs" / "chainermn-mnist.yaml").graph
    assert apply_scheduling(graph, profile).manifests() == graph.manifests()


def test_users_node_selector_and_tolerations_are_kept_and_not_duplicated(profile):
    document = yaml.safe_load((REPO / "jobs" / "chainermn-gpu.yaml").read_text())
    pod = document["spec"]["worker"]["template"]["spec"]
    pod["nodeSelector"] = {"trainjobs.io/gpu-pool": "reserved", "zone": "a"}
    pod["tolerations"] = [GPU_TOLERATION, {"key": "dedicated", "operator": "Exists"}]
    graph = parse_job(document, "gpu.yaml").graph
    worker = pod_specs(apply_scheduling(graph, profile))["StatefulSet/chainermn-gpu-worker"]
    assert worker["nodeSelector"] == {"trainjobs.io/gpu-pool": "reserved", "zone": "a"}
    assert worker["tolerations"] == [GPU_TOLERATION, {"key": "dedicated", "operator": "Exists"}]


def test_a_pod_asking_for_more_gpus_than_a_node_has_is_refused(profile):
    document = yaml.safe_load((REPO / "jobs" / "chainermn-gpu.yaml").read_text())
    document["spec"]["worker"]["template"]["spec"]["containers"][0]["resources"] = {
        "limits": {"nvidia.com/gpu": 16}
    }
    with pytest.raises(UserError) as raised:
        apply_scheduling(parse_job(document, "gpu.yaml").graph, profile)
    assert str(raised.value) == (
        "ChainerJob chainermn-gpu: StatefulSet/chainermn-gpu-worker: a pod requests 16 "
        "nvidia.com/gpu but the nodes of GPU pool 'a100' have 8; a pod runs on one node, so "
        "request at most 8 and add replicas instead"
    )


def test_a_fractional_gpu_count_in_any_container_is_refused_before_any_pool_is_applied():
    document = yaml.safe_load((REPO / "jobs" / "chainermn-gpu.yaml").read_text())
    pod = document["spec"]["worker"]["template"]["spec"]
    pod["containers"][0]["name"] = "chainer"
    pod["containers"].append(
        {"name": "sidecar", "image": "img:1", "resources": {"limits": {"nvidia.com/gpu": "0.5"}}}
    )
    with pytest.raises(SpecError) as raised:
        parse_job(document, "gpu.yaml")
    assert [str(problem) for problem in raised.value.problems] == [
        "spec.worker.template.spec.containers[1].resources.limits.nvidia.com/gpu: Invalid value: "
        '"0.5": must be an integer'
    ]


def test_applying_the_profile_leaves_the_original_graph_untouched(profile):
    graph = gpu_job().graph
    before = copy.deepcopy(graph.manifests())
    apply_scheduling(graph, profile)
    assert graph.manifests() == before


def test_tf_and_pytorch_gpu_replicas_are_scheduled_and_cpu_replicas_are_not(profile):
    tf = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())
    for replica in ("Chief", "Worker"):
        container = tf["spec"]["tfReplicaSpecs"][replica]["template"]["spec"]["containers"][0]
        container["resources"] = {"limits": {"nvidia.com/gpu": 2}}
    torch = yaml.safe_load((REPO / "jobs" / "pytorch-mnist.yaml").read_text())
    for spec in torch["spec"]["pytorchReplicaSpecs"].values():
        spec["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    scheduled = {}
    for document in (tf, torch):
        scheduled.update(pod_specs(apply_scheduling(parse_job(document, "x.yaml").graph, profile)))
    assert {key: "tolerations" in pod for key, pod in scheduled.items()} == {
        "Job/tf-mnist-chief-0": True,
        "Job/tf-mnist-worker-0": True,
        "Job/tf-mnist-worker-1": True,
        "Job/tf-mnist-ps-0": False,
        "Job/pytorch-mnist-master-0": True,
        "Job/pytorch-mnist-worker-0": True,
    }


def test_gpu_pods_lists_each_pod_template_that_asks_for_gpus():
    graph = gpu_job().graph
    assert gpu_pods(graph) == [
        GpuPod("StatefulSet/chainermn-gpu-worker", 8),
        GpuPod("Job/chainermn-gpu-master", 8),
    ]


def test_scheduled_gpu_job_manifests_pass_strict_schema_validation(profile):
    manifests = apply_scheduling(gpu_job().graph, profile).manifests()
    assert [p for m in manifests for p in schema_problems(m)] == []


SCHEDULED_PROGRAM = """
import dataclasses
import pulumi
from trainjobs.kinds.registry import JobDefinition, load_job, parse_job
from trainjobs.deploy.component import TrainingJob
from trainjobs.cloud.scheduling import SchedulingProfile, apply_scheduling

profile = SchedulingProfile.from_config(pulumi.Config("trainjobs").get("gpuPool"))
job = load_job("jobs/chainermn-gpu.yaml")
TrainingJob(dataclasses.replace(job, graph=apply_scheduling(job.graph, profile)))
"""


def test_a_gpu_job_on_the_pool_under_pulumi_mocks(tmp_path):
    (tmp_path / "jobs").mkdir()
    shutil.copy(REPO / "jobs" / "chainermn-gpu.yaml", tmp_path / "jobs")
    (tmp_path / "__main__.py").write_text(SCHEDULED_PROGRAM)
    config = {"trainjobs:gpuPool": A100_PROFILE}
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    result = run_preview("test", tmp_path)
    objects = {r.name: r.inputs for r in result.kubernetes_objects()}
    for name in ("chainermn-gpu-worker", "chainermn-gpu-master"):
        pod = objects[name]["spec"]["template"]["spec"]
        assert pod["tolerations"] == [GPU_TOLERATION]
        assert pod["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}
        assert pod["containers"][0]["resources"] == {"limits": {"nvidia.com/gpu": 8}}
    assert objects["chainermn-gpu-assets"]["data"]["hostfile"] == (
        "chainermn-gpu-master slots=8\nchainermn-gpu-worker-0 slots=8\n"
    )
    assert [p for m in objects.values() for p in schema_problems(m)] == []


def test_the_gpu_job_stack_schedules_its_pods_on_the_pool():
    objects = {r.name: r.inputs for r in run_preview("chainermn-gpu", REPO).kubernetes_objects()}
    for name in ("chainermn-gpu-worker", "chainermn-gpu-master"):
        pod = objects[name]["spec"]["template"]["spec"]
        assert pod["tolerations"] == [GPU_TOLERATION]
        assert pod["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}


def test_the_example_gpu_stack_uses_the_profile_the_a100_infra_stack_exports(a100):
    stack = yaml.safe_load((REPO / "Pulumi.chainermn-gpu.yaml").read_text())
    assert stack["config"]["trainjobs:gpuPool"] == a100.outputs["schedulingProfiles"]["a100"]
