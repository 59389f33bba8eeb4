"""What a replica-typed kind declares, and the typed plan its versions are read into.

Kubeflow's replica-typed kinds (TFJob, PyTorchJob, and XGBoostJob, PaddleJob, JAXJob after
them) share one shape: a map of replica type to ``ReplicaSpec`` beside a run policy
(training-operator, ``pkg/apis/kubeflow.org/v1/common_types.go``). A kind declares what
differs: its replica types, default container, port, restart policy and clean-pod policy,
and its own rules (who decides success, the env its operator sets) as :data:`MapRules`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from pydantic.alias_generators import to_camel

from trainjobs.core.errors import Problem
from trainjobs.core.graph import GraphOptions, Manifest
from trainjobs.core.labels import OperatorLabels
from trainjobs.core.replica_spec import (
    EnvTarget,
    MasterRole,
    ReplicaGroup,
    RunSettings,
    Success,
    leader_else_worker_0,
)
from trainjobs.core.spec_model import SpecModel


class ListReplicaSpec(SpecModel):
    """What every kind's ``v1alpha1`` ``replicaSpecs`` entry has; each kind adds its own."""

    case_insensitive = True
    replicas: int | None = None
    """Number of pods. Default: 1."""


@dataclass(frozen=True)
class JobContext:
    """The job a spec section belongs to: what every reader needs besides the section."""

    job: str
    namespace: str
    version: str
    options: GraphOptions


@dataclass(frozen=True)
class VersionPlan:
    """What a version's reader decides: the part of the plan that differs per kind."""

    groups: list[ReplicaGroup]
    run: RunSettings
    success: Success
    env: dict[tuple[str, int], list[Manifest]]
    """The operator's env for each (replica type, index), in the operator's order."""
    env_target: EnvTarget
    assets: dict[str, str] = field(default_factory=dict)
    """Files of the assets ConfigMap, when a replica needs one (TFJob v1alpha1's default PS)."""


@dataclass(frozen=True)
class ReplicaMap:
    """A replica map read with the kind's defaults: the groups in the spec's order."""

    run: RunSettings
    groups: list[ReplicaGroup]
    written: dict[str, str]
    """Lowercase replica type -> the key as the spec wrote it, for every accepted key (also
    those whose replica spec was refused)."""

    def group(self, replica_type: str) -> ReplicaGroup | None:
        return next((g for g in self.groups if g.type == replica_type), None)


MapRules = Callable[
    [SpecModel, ReplicaMap, JobContext, list[Problem], list[Problem]], VersionPlan | None
]
"""A kind's own rules over its read replica map (``spec``, the map, the job, problems,
warnings): its checks, who decides success, its operator's env; None when problems were found."""

ListReader = Callable[[SpecModel, JobContext, list[Problem], list[Problem]], VersionPlan | None]
"""The ``v1alpha1`` list shape's reader (TFJob, PyTorchJob), when the kind had that version."""


@dataclass(frozen=True)
class ReplicaKind:
    """One replica-typed kind: what its operator defaults, checks and names per version."""

    name: str
    """The kind, e.g. ``TFJob``."""
    versions: tuple[str, ...]
    """The ``kubeflow.org`` versions accepted."""
    spec_models: Mapping[str, type[SpecModel]]
    """Each version's ``spec`` model."""
    operator_labels: Mapping[str, OperatorLabels]
    """The pod labels each version's operators wrote besides ``training.kubeflow.org/*``."""
    replica_map: str
    """The spec models' attribute holding the replica map, e.g. ``tf_replica_specs``."""
    replica_types: tuple[str, ...]
    """The replica types as the operator spells them, e.g. ``("Master", "Worker")``."""
    default_container: str
    """The container that gets the port and the env (``tensorflow``, ``pytorch``)."""
    port_name: str
    default_port: int
    default_restart_policy: str
    """A replica's restartPolicy when it gives none."""
    default_clean_pod_policy: Mapping[str, str]
    """``cleanPodPolicy`` per version when the spec gives none."""
    empty_map: str
    """The problem's message when the replica map is missing or empty."""
    example_type: str
    """How to name a replica type in a fix, e.g. ``Worker:``."""
    rules: MapRules
    lenient_types: bool = False
    """Keys match the types without regard to case and other keys run as written, with a
    warning (tf-operator); otherwise a key must be one of the types exactly."""
    single_replica_types: tuple[str, ...] = ()
    """Replica types whose count must be 1, e.g. PyTorchJob's Master."""
    read_list: ListReader | None = None
    """The ``v1alpha1`` list shape's reader, when the kind had that version."""
    master_role: MasterRole = leader_else_worker_0
    """Which pod gets ``job-role: master`` (the controller's ``IsMasterRole``)."""

    @property
    def replica_map_path(self) -> str:
        """The replica map's path in a document, e.g. ``spec.tfReplicaSpecs``."""
        return f"spec.{to_camel(self.replica_map)}"
