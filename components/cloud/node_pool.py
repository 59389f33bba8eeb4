"""A GPU node pool's configuration (an EKS managed node group), validated up front."""

from __future__ import annotations

import difflib
import re
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from trainjobs.cloud.device_plugin import DEVICE_PLUGIN_IMAGE
from trainjobs.cloud.instances import INSTANCE_TYPES
from trainjobs.cloud.scheduling import GPU_TAINT_KEY, POOL_LABEL, SchedulingProfile, Toleration
from trainjobs.core.errors import ConfigError, Problem
from trainjobs.core.models import OwnModel, config_problem
from trainjobs.core.names import DNS1123_LABEL
from trainjobs.core.pod_template import GPU_RESOURCE

DEFAULT_AMI_TYPE = "AL2023_x86_64_NVIDIA"


POOL_NAME_MAX = 42
"""`nvidia-device-plugin-<pool>` must fit a 63-character DaemonSet name."""


# EKS AMI types with an NVIDIA driver, and the CPU architecture each is built for.
# Bottlerocket's NVIDIA variants run the device plugin as a host service, so no DaemonSet.
GPU_AMI_TYPES: dict[str, str] = {
    "AL2023_x86_64_NVIDIA": "x86_64",
    "AL2023_ARM_64_NVIDIA": "arm64",
    "BOTTLEROCKET_x86_64_NVIDIA": "x86_64",
    "BOTTLEROCKET_ARM_64_NVIDIA": "arm64",
}


# Amazon Linux 2 AMIs reached end of support in November 2025: no more driver or security
# updates, and new Kubernetes versions get no AL2 AMIs at all.
END_OF_LIFE_AMI_TYPES = ("AL2_x86_64_GPU", "AL2_x86_64", "AL2_ARM_64")


# Root device of each AMI family: AL2023 keeps images on its root volume; Bottlerocket's
# root is a small read-only OS volume and images live on a second (data) volume.
DATA_DEVICE = {"AL2023": "/dev/xvda", "BOTTLEROCKET": "/dev/xvdb"}


_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")


_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")


_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")


class GpuNodePoolConfig(OwnModel):
    """One GPU node pool: an EKS managed node group and its device plugin (camelCase in YAML)."""

    name: str = Field(description="Pool name: a DNS-1123 label of at most 42 characters.")
    cluster_name: str = Field(description="The existing EKS cluster the pool joins.")
    node_role_arn: str = Field(description="IAM role of the nodes (arn:aws:iam::<acct>:role/...).")
    subnet_ids: tuple[str, ...] = Field(min_length=1, description="Subnets the nodes run in.")
    instance_types: tuple[str, ...] = Field(
        min_length=1, description="EC2 GPU instance types; all with the same GPU count."
    )
    ami_type: str = Field(
        default=DEFAULT_AMI_TYPE,
        description="EKS AMI type with NVIDIA drivers. Default: AL2023_x86_64_NVIDIA.",
    )
    capacity_type: Literal["ON_DEMAND", "SPOT"] = Field(
        default="ON_DEMAND", description="ON_DEMAND (default) or SPOT."
    )
    min_size: int = Field(default=0, ge=0, description="Fewest nodes. Default: 0.")
    desired_size: int = Field(default=1, ge=0, description="Nodes to start with. Default: 1.")
    max_size: int = Field(default=1, ge=1, description="Most nodes. Default: 1.")
    labels: dict[str, str] = Field(
        default_factory=dict, description="Extra node labels (trainjobs.io/gpu-pool is set)."
    )
    efa: bool = Field(
        default=False,
        description="Elastic Fabric Adapter networking: a launch template with an EFA "
        "interface and a cluster placement group (one subnet, EFA instance types).",
    )
    security_group_ids: tuple[str, ...] = Field(
        default=(), description="Node security groups; required with efa (e.g. the cluster's)."
    )
    disk_size_gib: int = Field(
        default=200, ge=20, description="Node disk for images (CUDA images are large)."
    )
    kubernetes_version: str | None = Field(
        default=None, description="Kubelet version. Default: the cluster's."
    )
    device_plugin: bool | None = Field(
        default=None,
        description="Deploy the NVIDIA device plugin DaemonSet. Default: yes, except on "
        "Bottlerocket, whose NVIDIA variants run it on the host.",
    )
    device_plugin_image: str = Field(
        default=DEVICE_PLUGIN_IMAGE, description="The device plugin image, pinned by version."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="AWS tags.")

    @field_validator("name")
    @classmethod
    def _pool_name(cls, value: str) -> str:
        if not DNS1123_LABEL.fullmatch(value) or len(value) > POOL_NAME_MAX:
            raise ValueError(
                f"{value!r} must be a DNS-1123 label of at most {POOL_NAME_MAX} characters "
                "(lowercase letters, digits and '-'); it names the device plugin DaemonSet"
            )
        return value

    @field_validator("node_role_arn")
    @classmethod
    def _role_arn(cls, value: str) -> str:
        if not _ROLE_ARN.fullmatch(value):
            raise ValueError(
                f"must be an IAM role ARN such as arn:aws:iam::123456789012:role/eks-gpu-nodes "
                f"(got {value!r})"
            )
        return value

    @field_validator("subnet_ids")
    @classmethod
    def _subnets(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [item for item in value if not _SUBNET_ID.fullmatch(item)]
        if bad:
            raise ValueError(f"subnet IDs look like 'subnet-0123456789abcdef0' (got {bad})")
        return value

    @field_validator("security_group_ids")
    @classmethod
    def _security_groups(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        bad = [item for item in value if not _SECURITY_GROUP_ID.fullmatch(item)]
        if bad:
            raise ValueError(f"security group IDs look like 'sg-0123456789abcdef0' (got {bad})")
        return value

    @field_validator("ami_type")
    @classmethod
    def _gpu_ami(cls, value: str) -> str:
        if value in END_OF_LIFE_AMI_TYPES:
            raise ValueError(
                f"{value!r} is an Amazon Linux 2 AMI, which reached end of support in November "
                f"2025; use {DEFAULT_AMI_TYPE!r} (the default) or 'BOTTLEROCKET_x86_64_NVIDIA'"
            )
        if value not in GPU_AMI_TYPES:
            raise ValueError(
                f"{value!r} is not an EKS AMI type with NVIDIA drivers; use one of "
                f"{', '.join(GPU_AMI_TYPES)}"
            )
        return value

    @field_validator("instance_types")
    @classmethod
    def _known_instance_types(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for item in value:
            if item not in INSTANCE_TYPES:
                close = difflib.get_close_matches(item, INSTANCE_TYPES, n=1)
                hint = f"did you mean {close[0]!r}?" if close else "e.g. 'g6.xlarge' (1x L4)"
                raise ValueError(f"{item!r} is not an EC2 instance type with NVIDIA GPUs; {hint}")
        return value

    @field_validator("device_plugin_image")
    @classmethod
    def _pinned_image(cls, value: str) -> str:
        tag = value.rsplit("/", 1)[-1].partition(":")[2]
        if "@sha256:" not in value and (not tag or tag == "latest"):
            raise ValueError(
                f"pin the image by version tag or digest, e.g. {DEVICE_PLUGIN_IMAGE!r} "
                f"(got {value!r})"
            )
        return value

    @classmethod
    def parse(cls, value: Any, source: str) -> GpuNodePoolConfig:
        """Validate a pool's config; raises :class:`ConfigError` listing every problem."""
        if not isinstance(value, dict):
            raise ConfigError(source, "GPU pool", [Problem("", "must be a mapping")])
        try:
            config = cls.model_validate(value)
        except ValidationError as error:
            problems = [config_problem(e) for e in error.errors()]
            raise ConfigError(source, "GPU pool", problems) from None
        problems = config._cross_field_problems()
        if problems:
            raise ConfigError(source, "GPU pool", problems)
        return config

    def _cross_field_problems(self) -> list[Problem]:
        problems = []
        if self.max_size < self.min_size:
            problems.append(
                Problem(
                    "maxSize", f"must be at least minSize ({self.min_size}) (got {self.max_size})"
                )
            )
        elif not self.min_size <= self.desired_size <= self.max_size:
            problems.append(
                Problem(
                    "desiredSize",
                    f"must be between minSize ({self.min_size}) and maxSize ({self.max_size}) "
                    f"(got {self.desired_size})",
                )
            )
        arch = GPU_AMI_TYPES[self.ami_type]
        for index, name in enumerate(self.instance_types):
            if INSTANCE_TYPES[name].arch != arch:
                problems.append(
                    Problem(
                        f"instanceTypes[{index}]",
                        f"{name!r} is {INSTANCE_TYPES[name].arch} but amiType "
                        f"{self.ami_type!r} is for {arch}; use an AMI type for "
                        f"{INSTANCE_TYPES[name].arch} ({self._ami_for(INSTANCE_TYPES[name].arch)})",
                    )
                )
            if self.efa and not INSTANCE_TYPES[name].efa:
                problems.append(
                    Problem(
                        f"instanceTypes[{index}]",
                        f"{name!r} does not support EFA; set efa: false or choose an EFA "
                        "instance type such as 'p4d.24xlarge'",
                    )
                )
        counts = {name: INSTANCE_TYPES[name].gpus for name in self.instance_types}
        if len(set(counts.values())) > 1:
            listed = ", ".join(f"{name}: {gpus}" for name, gpus in counts.items())
            problems.append(
                Problem(
                    "instanceTypes",
                    f"all instance types of a pool need the same number of GPUs per node "
                    f"(got {listed}); declare one pool per size",
                )
            )
        if self.efa and not self.security_group_ids:
            problems.append(
                Problem(
                    "securityGroupIds",
                    "required when efa is true: a launch template with an EFA interface must "
                    "name the node security groups (at least the cluster security group)",
                )
            )
        if self.efa and len(self.subnet_ids) != 1:
            problems.append(
                Problem(
                    "subnetIds",
                    "an EFA pool runs in a cluster placement group, which lives in one "
                    f"availability zone: give exactly one subnet (got {len(self.subnet_ids)})",
                )
            )
        return problems

    def _ami_for(self, arch: str) -> str:
        family = self.ami_type.split("_", 1)[0]
        return next(
            ami
            for ami, ami_arch in GPU_AMI_TYPES.items()
            if ami_arch == arch and ami.startswith(family)
        )

    @property
    def ami_family(self) -> str:
        return self.ami_type.split("_", 1)[0]

    @property
    def deploys_device_plugin(self) -> bool:
        if self.device_plugin is not None:
            return self.device_plugin
        return self.ami_family != "BOTTLEROCKET"

    @property
    def node_labels(self) -> dict[str, str]:
        return {**self.labels, POOL_LABEL: self.name}

    def scheduling_profile(self) -> SchedulingProfile:
        return SchedulingProfile(
            pool=self.name,
            gpu_resource=GPU_RESOURCE,
            gpus_per_node=INSTANCE_TYPES[self.instance_types[0]].gpus,
            node_selector={POOL_LABEL: self.name},
            tolerations=(Toleration(key=GPU_TAINT_KEY, operator="Exists", effect="NoSchedule"),),
            instance_types=self.instance_types,
            subnet_ids=self.subnet_ids,
        )
