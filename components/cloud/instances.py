"""EC2 GPU instance types trainjobs knows: GPUs, GPU model, architecture, EFA."""

from __future__ import annotations

from dataclasses import dataclass


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
