"""(Cluster)TrainingRuntime spec models, checked before a TrainJob is rendered from a runtime.

The shape Trainer's CRD gives a runtime's policies and JobSet template (kubeflow/trainer
v2.3.0 ``pkg/apis/trainer/v1alpha1/trainingruntime_types.go``, JobSet ``v1alpha2`` for the
template).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from trainjobs.core.spec_model import SpecModel


class Meta(SpecModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class MPIPolicy(SpecModel):
    num_proc_per_node: int | None = None
    mpi_implementation: str | None = None
    ssh_auth_mount_path: str | None = None
    run_launcher_as_node: bool | None = None


class EnvInjectionTarget(SpecModel):
    job_name: str = ""
    container_names: list[str] = Field(default_factory=list)


class EnvInjection(SpecModel):
    targets: list[EnvInjectionTarget] = Field(default_factory=list)


class TorchPolicy(SpecModel):
    """v2.3.0's ``TorchMLPolicySource``; earlier releases' ``numProcPerNode`` and
    ``elasticPolicy`` are read as they were."""

    env_injection: EnvInjection | None = None
    """Containers beside the trainer's ``node`` container that get the PET_* env."""
    num_proc_per_node: int | str | None = None
    elastic_policy: dict[str, Any] | None = None


class MLPolicy(SpecModel):
    num_nodes: int | None = None
    torch: TorchPolicy | None = None
    mpi: MPIPolicy | None = None
    jax: dict[str, Any] | None = None
    xgboost: dict[str, Any] | None = None
    flux: dict[str, Any] | None = None


class Coscheduling(SpecModel):
    schedule_timeout_seconds: int | None = None


class NetworkTopology(SpecModel):
    """Volcano's ``NetworkTopologySpec`` (volcano.sh/apis ``scheduling/v1beta1``), as Trainer's
    CRD carries it: ``mode`` hard or soft (default hard), ``highestTierAllowed`` (default 1)."""

    mode: str | None = None
    highest_tier_allowed: int | None = None


class VolcanoPolicy(SpecModel):
    network_topology: NetworkTopology | None = None


class PodGroupPolicy(SpecModel):
    coscheduling: Coscheduling | None = None
    volcano: VolcanoPolicy | None = None


class JobSpec(SpecModel):
    parallelism: int | None = None
    completions: int | None = None
    template: dict[str, Any]
    """The pod template: checked to the API server's schema and rules."""


class JobTemplate(SpecModel):
    metadata: Meta | None = None
    spec: JobSpec


class ReplicatedJob(SpecModel):
    name: str
    replicas: int = 1
    depends_on: list[dict[str, Any]] | None = None
    template: JobTemplate


class SuccessPolicy(SpecModel):
    operator: str = "All"
    target_replicated_jobs: list[str] = Field(default_factory=list)


class Network(SpecModel):
    enable_dns_hostnames: bool | None = Field(default=None, alias="enableDNSHostnames")
    subdomain: str | None = None
    publish_not_ready_addresses: bool | None = None


class JobSetSpec(SpecModel):
    replicated_jobs: list[ReplicatedJob]
    success_policy: SuccessPolicy | None = None
    network: Network | None = None
    suspend: bool | None = None


class JobSetTemplate(SpecModel):
    metadata: Meta | None = None
    spec: JobSetSpec


class TrainingRuntimeSpec(SpecModel):
    ml_policy: MLPolicy | None = None
    pod_group_policy: PodGroupPolicy | None = None
    template: JobSetTemplate
