"""The GPU node pool as a Pulumi component: an EKS node group and the NVIDIA device plugin."""

from __future__ import annotations

from typing import Any

import pulumi

from trainjobs.cloud.device_plugin import device_plugin_daemonset
from trainjobs.cloud.node_pool import DATA_DEVICE, GpuNodePoolConfig
from trainjobs.cloud.scheduling import GPU_TAINT_KEY, POOL_LABEL, SchedulingProfile
from trainjobs.core.errors import ConfigError, UserError
from trainjobs.core.extras import import_extra


class GpuNodePool(pulumi.ComponentResource):
    """A GPU node pool on an existing EKS cluster, typed `trainjobs:index:GpuNodePool`.

    Children: the managed node group (plus, with EFA, its launch template and cluster
    placement group) and the NVIDIA device plugin DaemonSet. AWS resources are auto-named
    by Pulumi, so a change that replaces the node group brings the new nodes up before the
    old ones go; the nodes are found by label, never by node group name. Pass a Kubernetes
    provider for the cluster in ``opts.providers`` when the ambient kubeconfig is not it.
    """

    node_group: pulumi.CustomResource
    """The `aws.eks.NodeGroup` (pulumi_aws is loaded only when a pool is built)."""
    daemonset: pulumi.CustomResource | None
    """The device plugin's `kubernetes.apps.v1.DaemonSet`; None when the AMI brings its own."""
    scheduling_profile: SchedulingProfile
    profile: pulumi.Output[dict[str, Any]]

    def __init__(
        self, config: GpuNodePoolConfig, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        super().__init__("trainjobs:index:GpuNodePool", config.name, None, opts)
        # The AWS SDK is large and an extra: load it only for infrastructure.
        aws = import_extra("pulumi_aws", "a GPU node pool")
        import pulumi_kubernetes as k8s

        child = pulumi.ResourceOptions(parent=self)
        node_group_args: dict[str, Any] = {}
        if config.efa:
            placement = aws.ec2.PlacementGroup(
                f"{config.name}-placement", strategy="cluster", opts=child
            )
            template = aws.ec2.LaunchTemplate(
                f"{config.name}-efa",
                network_interfaces=[
                    {
                        "device_index": 0,
                        "interface_type": "efa",
                        "security_groups": list(config.security_group_ids),
                        "delete_on_termination": "true",
                    }
                ],
                block_device_mappings=[
                    {
                        "device_name": DATA_DEVICE[config.ami_family],
                        "ebs": {
                            "volume_size": config.disk_size_gib,
                            "volume_type": "gp3",
                            "delete_on_termination": "true",
                        },
                    }
                ],
                placement={"group_name": placement.name},
                opts=child,
            )
            # A launch template owns the disk; EKS refuses disk_size next to one.
            node_group_args["launch_template"] = {
                "id": template.id,
                "version": template.latest_version.apply(str),
            }
        else:
            node_group_args["disk_size"] = config.disk_size_gib
        self.node_group = aws.eks.NodeGroup(
            config.name,
            cluster_name=config.cluster_name,
            node_role_arn=config.node_role_arn,
            subnet_ids=list(config.subnet_ids),
            instance_types=list(config.instance_types),
            ami_type=config.ami_type,
            capacity_type=config.capacity_type,
            scaling_config={
                "min_size": config.min_size,
                "desired_size": config.desired_size,
                "max_size": config.max_size,
            },
            update_config={"max_unavailable": 1},
            labels=config.node_labels,
            # AWS spelling of nvidia.com/gpu=true:NoSchedule.
            taints=[{"key": GPU_TAINT_KEY, "value": "true", "effect": "NO_SCHEDULE"}],
            version=config.kubernetes_version,
            tags={**config.tags, POOL_LABEL: config.name},
            opts=child,
            **node_group_args,
        )
        self.daemonset = None
        if config.deploys_device_plugin:
            manifest = device_plugin_daemonset(config.name, config.device_plugin_image)
            self.daemonset = k8s.apps.v1.DaemonSet(
                manifest["metadata"]["name"],
                metadata=manifest["metadata"],
                spec=manifest["spec"],
                opts=child,
            )
        self.scheduling_profile = config.scheduling_profile()
        self.profile = pulumi.Output.from_input(self.scheduling_profile.to_config())
        self.register_outputs({"profile": self.profile})


INFRA_CONFIG = "trainjobs-infra"
"""Config namespace of the infrastructure project (infra/Pulumi.yaml)."""


def pool_configs(config: pulumi.Config) -> list[GpuNodePoolConfig]:
    """The pools of an infrastructure stack: `pools` (a list), each inheriting the stack's
    `clusterName`, `nodeRoleArn` and `subnetIds` unless it sets its own."""
    pools = config.get_object("pools")
    if not isinstance(pools, list) or not pools:
        raise UserError(
            f"stack config {INFRA_CONFIG}:pools must list at least one GPU pool, e.g. "
            "[{name: l4, instanceTypes: [g6.xlarge]}]"
        )
    shared = {
        "clusterName": config.get("clusterName"),
        "nodeRoleArn": config.get("nodeRoleArn"),
        "subnetIds": config.get_object("subnetIds"),
    }
    shared = {key: value for key, value in shared.items() if value is not None}
    parsed, errors, seen = [], [], set()
    for index, pool in enumerate(pools):
        source = f"{INFRA_CONFIG}:pools[{index}]"
        try:
            value = {**shared, **pool} if isinstance(pool, dict) else pool
            parsed.append(GpuNodePoolConfig.parse(value, source))
        except ConfigError as error:
            errors.append(str(error))
            continue
        if parsed[-1].name in seen:
            errors.append(f"{source}: pool name {parsed[-1].name!r} is used twice")
        seen.add(parsed[-1].name)
    if errors:
        raise UserError("\n".join(errors))
    return parsed


def pools_from_config() -> None:
    """The infrastructure program: one :class:`GpuNodePool` per configured pool, and the
    scheduling profiles job stacks need, exported as `schedulingProfiles` (pool -> profile)."""
    try:
        configs = pool_configs(pulumi.Config(INFRA_CONFIG))
    except UserError as error:
        raise pulumi.RunError(str(error)) from None
    pools = [GpuNodePool(config) for config in configs]
    pulumi.export(
        "schedulingProfiles",
        {pool.scheduling_profile.pool: pool.scheduling_profile.to_config() for pool in pools},
    )
