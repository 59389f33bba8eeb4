"""GPU node pools on EKS, and the scheduling profile GPU pods need to land on them.

A pool is an EKS managed node group of NVIDIA GPU instances plus the NVIDIA device plugin
DaemonSet that makes the kubelet advertise ``nvidia.com/gpu``. Its nodes carry the taint
``nvidia.com/gpu=true:NoSchedule`` (so CPU pods never occupy a GPU machine) and the label
``trainjobs.io/gpu-pool=<pool>``.

What a GPU pod needs to run there is the pool's :class:`SchedulingProfile`: a plain value
(tolerations, nodeSelector, GPU resource name, GPUs per node) that the infrastructure stack
exports and job stacks read from their config. :func:`apply_scheduling` adds it to every pod
template of a job's graph that asks for GPUs, the way the TFJob design lets administrators
inject cluster-wide GPU defaults: job specs only say how many GPUs they want.
"""

from __future__ import annotations

import copy
import difflib
import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from components.errors import Problem, UserError
from components.graph import MANAGED_BY, Graph, Manifest, Node
from components.specs import GPU_RESOURCE, OwnModel, problem_from_pydantic

POOL_LABEL = "trainjobs.io/gpu-pool"
"""Node label naming the pool a node belongs to; GPU pods select their pool with it."""
GPU_TAINT_KEY = GPU_RESOURCE
DEFAULT_AMI_TYPE = "AL2023_x86_64_NVIDIA"
DEVICE_PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"
DEVICE_PLUGIN_NAMESPACE = "kube-system"
DEVICE_PLUGIN_DIR = "/var/lib/kubelet/device-plugins"
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


@dataclass(frozen=True)
class GpuInstanceType:
    """What a pool needs to know about an EC2 GPU instance type (from describe-instance-types)."""

    gpus: int
    gpu: str
    gpu_memory_mib: int
    efa: bool
    arch: str = "x86_64"


# Every EC2 instance type with whole NVIDIA GPUs, as describe-instance-types reports it
# (tests compare this table with the AWS data moto ships). Fractional-GPU types (g6f, gr6f)
# are left out: the device plugin does not advertise them as nvidia.com/gpu.
INSTANCE_TYPES: dict[str, GpuInstanceType] = {
    "g4dn.xlarge": GpuInstanceType(1, "T4", 16384, efa=False),
    "g4dn.2xlarge": GpuInstanceType(1, "T4", 16384, efa=False),
    "g4dn.4xlarge": GpuInstanceType(1, "T4", 16384, efa=False),
    "g4dn.8xlarge": GpuInstanceType(1, "T4", 16384, efa=True),
    "g4dn.12xlarge": GpuInstanceType(4, "T4", 16384, efa=True),
    "g4dn.16xlarge": GpuInstanceType(1, "T4", 16384, efa=True),
    "g4dn.metal": GpuInstanceType(8, "T4", 16384, efa=True),
    "g5.xlarge": GpuInstanceType(1, "A10G", 22888, efa=False),
    "g5.2xlarge": GpuInstanceType(1, "A10G", 22888, efa=False),
    "g5.4xlarge": GpuInstanceType(1, "A10G", 22888, efa=False),
    "g5.8xlarge": GpuInstanceType(1, "A10G", 22888, efa=True),
    "g5.12xlarge": GpuInstanceType(4, "A10G", 22888, efa=True),
    "g5.16xlarge": GpuInstanceType(1, "A10G", 22888, efa=True),
    "g5.24xlarge": GpuInstanceType(4, "A10G", 22888, efa=True),
    "g5.48xlarge": GpuInstanceType(8, "A10G", 22888, efa=True),
    "g5g.xlarge": GpuInstanceType(1, "T4g", 16384, efa=False, arch="arm64"),
    "g5g.2xlarge": GpuInstanceType(1, "T4g", 16384, efa=False, arch="arm64"),
    "g5g.4xlarge": GpuInstanceType(1, "T4g", 16384, efa=False, arch="arm64"),
    "g5g.8xlarge": GpuInstanceType(1, "T4g", 16384, efa=False, arch="arm64"),
    "g5g.16xlarge": GpuInstanceType(2, "T4g", 16384, efa=False, arch="arm64"),
    "g5g.metal": GpuInstanceType(2, "T4g", 16384, efa=False, arch="arm64"),
    "g6.xlarge": GpuInstanceType(1, "L4", 22888, efa=False),
    "g6.2xlarge": GpuInstanceType(1, "L4", 22888, efa=False),
    "g6.4xlarge": GpuInstanceType(1, "L4", 22888, efa=False),
    "g6.8xlarge": GpuInstanceType(1, "L4", 22888, efa=True),
    "g6.12xlarge": GpuInstanceType(4, "L4", 22888, efa=True),
    "g6.16xlarge": GpuInstanceType(1, "L4", 22888, efa=True),
    "g6.24xlarge": GpuInstanceType(4, "L4", 22888, efa=True),
    "g6.48xlarge": GpuInstanceType(8, "L4", 22888, efa=True),
    "g6e.xlarge": GpuInstanceType(1, "L40S", 45776, efa=False),
    "g6e.2xlarge": GpuInstanceType(1, "L40S", 45776, efa=False),
    "g6e.4xlarge": GpuInstanceType(1, "L40S", 45776, efa=False),
    "g6e.8xlarge": GpuInstanceType(1, "L40S", 45776, efa=True),
    "g6e.12xlarge": GpuInstanceType(4, "L40S", 45776, efa=True),
    "g6e.16xlarge": GpuInstanceType(1, "L40S", 45776, efa=True),
    "g6e.24xlarge": GpuInstanceType(4, "L40S", 45776, efa=True),
    "g6e.48xlarge": GpuInstanceType(8, "L40S", 45776, efa=True),
    "g7.2xlarge": GpuInstanceType(1, "RTX PRO 4500", 32768, efa=False),
    "g7.4xlarge": GpuInstanceType(1, "RTX PRO 4500", 32768, efa=False),
    "g7.8xlarge": GpuInstanceType(1, "RTX PRO 4500", 32768, efa=True),
    "g7.12xlarge": GpuInstanceType(2, "RTX PRO 4500", 32768, efa=True),
    "g7.24xlarge": GpuInstanceType(4, "RTX PRO 4500", 32768, efa=True),
    "g7.48xlarge": GpuInstanceType(8, "RTX PRO 4500", 32768, efa=True),
    "g7e.2xlarge": GpuInstanceType(1, "RTX PRO Server 6000", 98304, efa=False),
    "g7e.4xlarge": GpuInstanceType(1, "RTX PRO Server 6000", 98304, efa=False),
    "g7e.8xlarge": GpuInstanceType(1, "RTX PRO Server 6000", 98304, efa=True),
    "g7e.12xlarge": GpuInstanceType(2, "RTX PRO Server 6000", 98304, efa=True),
    "g7e.24xlarge": GpuInstanceType(4, "RTX PRO Server 6000", 98304, efa=True),
    "g7e.48xlarge": GpuInstanceType(8, "RTX PRO Server 6000", 98304, efa=True),
    "gr6.4xlarge": GpuInstanceType(1, "L4", 22888, efa=False),
    "gr6.8xlarge": GpuInstanceType(1, "L4", 22888, efa=True),
    "p3dn.24xlarge": GpuInstanceType(8, "V100", 32768, efa=True),
    "p4d.24xlarge": GpuInstanceType(8, "A100", 40960, efa=True),
    "p4de.24xlarge": GpuInstanceType(8, "A100", 81920, efa=True),
    "p5.4xlarge": GpuInstanceType(1, "H100", 81920, efa=True),
    "p5.48xlarge": GpuInstanceType(8, "H100", 81920, efa=True),
    "p5e.48xlarge": GpuInstanceType(8, "H200", 144384, efa=True),
    "p5en.48xlarge": GpuInstanceType(8, "H200", 144384, efa=True),
    "p6-b200.48xlarge": GpuInstanceType(8, "B200", 183359, efa=True),
    "p6-b300.48xlarge": GpuInstanceType(8, "B300", 275040, efa=True),
}

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_ROLE_ARN = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]+$")
_SUBNET_ID = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SECURITY_GROUP_ID = re.compile(r"^sg-[0-9a-f]{8,17}$")


def _problem(error: Any) -> Problem:
    """A pydantic error as a Problem, with messages for the checks our config models add."""
    problem = problem_from_pydantic(error)
    if error["type"] == "literal_error":
        expected = error["ctx"]["expected"]
        return Problem(problem.path, f"must be {expected} (got {error['input']!r})")
    if error["type"] == "too_short":
        return Problem(problem.path, "at least one is required")
    return problem


class ConfigError(UserError):
    """Stack config that failed validation; carries every problem, each with its field path."""

    def __init__(self, source: str, what: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid {what} ({len(problems)} problem(s))"]
        lines += [f"  {problem}" for problem in problems]
        super().__init__("\n".join(lines))


class Toleration(OwnModel):
    """A Kubernetes toleration (core/v1 spelling: effect `NoSchedule`, not `NO_SCHEDULE`)."""

    key: str
    operator: Literal["Exists", "Equal"] = "Exists"
    value: str | None = None
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = None

    def manifest(self) -> Manifest:
        return self.model_dump(by_alias=True, exclude_none=True)


class SchedulingProfile(OwnModel):
    """Where GPU pods of a pool must go and what they must tolerate to get there.

    The infrastructure stack exports it (:meth:`to_config`); a job stack names it in
    ``trainjobs:gpuPool`` (:meth:`from_config`). Plain data: no Pulumi outputs, so a job's
    graph is complete before anything is registered.
    """

    pool: str = Field(description="The pool's name (the value of the trainjobs.io/gpu-pool label).")
    gpu_resource: str = Field(
        default=GPU_RESOURCE, description="Extended resource GPU pods request in their limits."
    )
    gpus_per_node: int = Field(gt=0, description="GPUs on each node: the most one pod can get.")
    node_selector: dict[str, str] = Field(description="Added to GPU pods' nodeSelector.")
    tolerations: tuple[Toleration, ...] = Field(description="Added to GPU pods' tolerations.")
    instance_types: tuple[str, ...] = Field(
        default=(), description="The pool's EC2 instance types (for pre-flight checks)."
    )
    subnet_ids: tuple[str, ...] = Field(
        default=(), description="The pool's subnets (for pre-flight checks)."
    )

    def to_config(self) -> dict[str, Any]:
        """The wire form: camelCase, as stack outputs and stack config carry it."""
        return self.model_dump(by_alias=True, exclude_none=True, mode="json")

    @classmethod
    def from_config(
        cls, value: str | dict[str, Any] | None, source: str = "trainjobs:gpuPool"
    ) -> SchedulingProfile | None:
        """Read a profile from stack config: an object, or its JSON (as the Pulumi CLI passes
        objects, and as `pulumi stack output schedulingProfiles --json` prints them)."""
        if value is None or value == "":
            return None
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except json.JSONDecodeError as error:
                raise ConfigError(
                    source, "GPU scheduling profile", [Problem("", f"not valid JSON: {error}")]
                ) from None
        if not isinstance(value, dict):
            raise ConfigError(
                source,
                "GPU scheduling profile",
                [Problem("", f"must be an object, the infra stack's profile (got {value!r})")],
            )
        try:
            return cls.model_validate(value)
        except ValidationError as error:
            problems = [_problem(e) for e in error.errors()]
            raise ConfigError(source, "GPU scheduling profile", problems) from None


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
        if not _DNS1123_LABEL.fullmatch(value) or len(value) > POOL_NAME_MAX:
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
            problems = [_problem(e) for e in error.errors()]
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


def device_plugin_daemonset(config: GpuNodePoolConfig) -> Manifest:
    """The NVIDIA device plugin for one pool, as plain data.

    It registers with the kubelet through the socket directory it mounts, then advertises
    each node's GPUs as ``nvidia.com/gpu``: without it GPU pods stay Pending on AL2023
    nodes. It must tolerate the pool's own GPU taint, and runs as ``system-node-critical``
    so the kubelet never evicts it to make room for a training pod.
    """
    selector = {
        "app.kubernetes.io/name": "nvidia-device-plugin",
        "app.kubernetes.io/instance": config.name,
    }
    labels = {**selector, "app.kubernetes.io/managed-by": MANAGED_BY}
    return {
        "apiVersion": "apps/v1",
        "kind": "DaemonSet",
        "metadata": {
            "name": f"nvidia-device-plugin-{config.name}",
            "namespace": DEVICE_PLUGIN_NAMESPACE,
            "labels": labels,
        },
        "spec": {
            "selector": {"matchLabels": selector},
            "updateStrategy": {"type": "RollingUpdate"},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "nodeSelector": {POOL_LABEL: config.name},
                    "tolerations": [
                        {"key": GPU_TAINT_KEY, "operator": "Exists", "effect": "NoSchedule"}
                    ],
                    "priorityClassName": "system-node-critical",
                    # The plugin talks to the kubelet's socket only, never to the API server.
                    "automountServiceAccountToken": False,
                    "containers": [
                        {
                            "name": "nvidia-device-plugin",
                            "image": config.device_plugin_image,
                            "securityContext": {
                                "allowPrivilegeEscalation": False,
                                "capabilities": {"drop": ["ALL"]},
                            },
                            "volumeMounts": [
                                {"name": "device-plugin", "mountPath": DEVICE_PLUGIN_DIR}
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "device-plugin",
                            "hostPath": {"path": DEVICE_PLUGIN_DIR, "type": "Directory"},
                        }
                    ],
                },
            },
        },
    }


@dataclass(frozen=True)
class GpuPod:
    """A pod template of a graph that asks for GPUs."""

    workload: str
    """`Kind/name` of the object that holds the template."""
    gpus: int


def pod_template(manifest: Manifest) -> Manifest | None:
    """The pod template of a workload manifest (the manifest itself for a Pod), else None."""
    if manifest.get("kind") == "Pod":
        return manifest
    template = (manifest.get("spec") or {}).get("template")
    return template if isinstance(template, dict) and "spec" in template else None


def pod_gpus(pod_spec: Manifest, resource: str = GPU_RESOURCE) -> int:
    """GPUs a pod needs: its containers' together, or its largest init container's.

    Each container's limit counts (Kubernetes takes an extended resource's request from its
    limit); a request alone counts too. Extended resources are whole numbers.
    """

    def count(container: Manifest) -> int:
        resources = container.get("resources") or {}
        value = (resources.get("limits") or {}).get(resource)
        if value is None:
            value = (resources.get("requests") or {}).get(resource)
        if value is None:
            return 0
        try:
            gpus = int(str(value))
        except ValueError:
            gpus = -1
        if gpus < 0:
            raise UserError(
                f"container {container.get('name')!r}: {resource} must be a whole number of "
                f"GPUs (got {value!r})"
            )
        return gpus

    running = sum(count(c) for c in pod_spec.get("containers") or [])
    init = max((count(c) for c in pod_spec.get("initContainers") or []), default=0)
    return max(running, init)


def gpu_pods(graph: Graph, resource: str = GPU_RESOURCE) -> list[GpuPod]:
    """Every pod template of the graph that asks for GPUs, in graph order."""
    found = []
    for node in graph.nodes:
        template = pod_template(node.manifest)
        if template is None:
            continue
        try:
            gpus = pod_gpus(template["spec"], resource)
        except UserError as error:
            raise UserError(f"{graph.kind} {graph.job}: {node.key}: {error}") from None
        if gpus > 0:
            found.append(GpuPod(node.key, gpus))
    return found


def apply_scheduling(graph: Graph, profile: SchedulingProfile) -> Graph:
    """A copy of ``graph`` whose GPU pods carry the pool's tolerations and nodeSelector.

    Only pod templates that ask for ``profile.gpu_resource`` change: CPU replicas (a TFJob's
    parameter servers, say) stay off the GPU nodes. What a user set wins: a nodeSelector key
    they chose keeps their value, and a toleration they already have is not added twice.
    A pod that asks for more GPUs than one node has would stay Pending forever: that is a
    :class:`UserError` naming every such pod.
    """
    too_big = [
        f"{graph.kind} {graph.job}: {pod.workload}: a pod requests {pod.gpus} "
        f"{profile.gpu_resource} but the nodes of GPU pool {profile.pool!r} have "
        f"{profile.gpus_per_node}; a pod runs on one node, so request at most "
        f"{profile.gpus_per_node} and add replicas instead"
        for pod in gpu_pods(graph, profile.gpu_resource)
        if pod.gpus > profile.gpus_per_node
    ]
    if too_big:
        raise UserError("\n".join(too_big))
    scheduled = Graph(job=graph.job, kind=graph.kind, namespace=graph.namespace)
    for node in graph.nodes:
        manifest = copy.deepcopy(node.manifest)
        template = pod_template(manifest)
        if template is not None and pod_gpus(template["spec"], profile.gpu_resource) > 0:
            pod = template["spec"]
            pod["nodeSelector"] = {**profile.node_selector, **(pod.get("nodeSelector") or {})}
            tolerations = list(pod.get("tolerations") or [])
            for toleration in profile.tolerations:
                wanted = toleration.manifest()
                if wanted not in tolerations:
                    tolerations.append(wanted)
            pod["tolerations"] = tolerations
        scheduled.nodes.append(Node(manifest, node.depends_on))
    return scheduled
