"""TrainJob (``trainer.kubeflow.org/v1alpha1``) spec models, checked as Trainer checks them.

Kubeflow Trainer v2's TrainJob names a training runtime (``runtimeRef``) and overrides its
trainer. The models take the fields of every release: ``labels``, ``annotations`` and
``podSpecOverrides`` (v2.0) or ``podTemplateOverrides`` (v2.1), then ``runtimePatches``
(v2.2 and later, pinned here: v2.3.0, commit 658725bdae5c7e3a0854d93ac6ff492e109a22ab).
``numProcPerNode`` is an int, or before v2.2 also ``auto``, ``cpu`` or ``gpu``.

Sources (kubeflow/trainer at v2.3.0 unless said): ``pkg/apis/trainer/v1alpha1/trainjob_types.go``
(the CRD's rules: name, managedBy, storageUri, numNodes), ``pkg/webhooks/trainjob_webhook.go``
and the plugins' ``Validate`` (reserved env names); v2.1.0's ``trainjob_types.go`` and
``torch.go`` for the older fields.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from trainjobs.core import bounds, documents
from trainjobs.core.errors import Problem, got
from trainjobs.core.job_document import named, validate_section
from trainjobs.core.models import ObjectMeta
from trainjobs.core.pod_rules import check_annotation_keys, check_labels
from trainjobs.core.set_paths import SetPaths, spec_of
from trainjobs.core.spec_model import SpecModel, known_fields, unknown_fields

KIND = "TrainJob"
GROUP = "trainer.kubeflow.org"
API_VERSION = f"{GROUP}/v1alpha1"
MANAGERS = ("trainer.kubeflow.org/trainjob-controller", "kueue.x-k8s.io/multikueue")
RUNTIME_KINDS = documents.RUNTIME_KINDS
PROC_NAMES = ("auto", "cpu", "gpu")
_DNS_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://.+$")


class RuntimeRef(SpecModel):
    name: str = ""
    """The training runtime's name."""
    api_group: str = GROUP
    kind: str = "ClusterTrainingRuntime"
    """ClusterTrainingRuntime (default) or TrainingRuntime (in the TrainJob's namespace)."""


class InitializerSource(SpecModel):
    storage_uri: str | None = None
    """Where the initializer downloads from (``hf://...``, ``s3://...``)."""
    env: list[dict[str, Any]] = Field(default_factory=list)
    secret_ref: dict[str, Any] | None = None


class Initializer(SpecModel):
    dataset: InitializerSource | None = None
    model: InitializerSource | None = None


class Trainer(SpecModel):
    image: str | None = None
    command: list[str] | None = None
    args: list[str] | None = None
    env: list[dict[str, Any]] = Field(default_factory=list)
    num_nodes: int | None = None
    resources_per_node: dict[str, Any] | None = None
    num_proc_per_node: int | str | None = None
    """Processes per node: an int, or (before v2.2) auto, cpu or gpu."""


class MetaPatch(SpecModel):
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)


class ContainerPatch(SpecModel):
    """A container's fields a patch may set (v2.2+ ``ContainerPatch``; v2.0 and v2.1
    ``ContainerOverride`` without ``securityContext``): matched to the runtime's by name."""

    name: str = ""
    env: list[dict[str, Any]] | None = None
    volume_mounts: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None


class PodSpecPatch(SpecModel):
    """A pod spec's fields a patch may set (v2.2+ ``PodSpecPatch``, v2.1
    ``PodTemplateSpecOverride``, v2.0 ``PodSpecOverride``)."""

    containers: list[ContainerPatch] | None = None
    init_containers: list[ContainerPatch] | None = None
    service_account_name: str | None = None
    node_selector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[dict[str, Any]] | None = None
    volumes: list[dict[str, Any]] | None = None
    image_pull_secrets: list[dict[str, Any]] | None = None
    security_context: dict[str, Any] | None = None
    scheduling_gates: list[dict[str, Any]] | None = None
    termination_grace_period_seconds: int | None = None


class PodTemplatePatch(SpecModel):
    metadata: MetaPatch | None = None
    spec: PodSpecPatch | None = None


class JobSpecPatch(SpecModel):
    template: PodTemplatePatch | None = None


class JobTemplatePatch(SpecModel):
    metadata: MetaPatch | None = None
    spec: JobSpecPatch | None = None


class ReplicatedJobPatch(SpecModel):
    name: str = ""
    template: JobTemplatePatch | None = None


class JobSetSpecPatch(SpecModel):
    replicated_jobs: list[ReplicatedJobPatch] = Field(default_factory=list)


class JobSetTemplatePatch(SpecModel):
    metadata: MetaPatch | None = None
    spec: JobSetSpecPatch | None = None


class TrainingRuntimeSpecPatch(SpecModel):
    template: JobSetTemplatePatch | None = None


class RuntimePatch(SpecModel):
    manager: str = ""
    time: str | None = None
    training_runtime_spec: TrainingRuntimeSpecPatch | None = None


class TargetJob(SpecModel):
    name: str = ""


class PodTemplateOverride(SpecModel):
    """v2.1: a pod template's metadata and spec for the target Jobs."""

    target_jobs: list[TargetJob] = Field(default_factory=list)
    metadata: MetaPatch | None = None
    spec: PodSpecPatch | None = None


class PodSpecOverride(PodSpecPatch):
    """v2.0: the pod spec's fields inline, for the target Jobs."""

    target_jobs: list[TargetJob] = Field(default_factory=list)


def as_patches(models: list[Any]) -> list[dict[str, Any]]:
    """The validated patches as the wire's plain mappings, without the fields Trainer's CRD
    does not have: its API server prunes them (a structural schema), so they never reach the
    JobSet, as the warning about each says."""
    return [known_fields(model) for model in models]


class TrainJobSpec(SpecModel):
    """A TrainJob's ``spec`` (``trainer.kubeflow.org/v1alpha1``): the runtime it names and the
    trainer's overrides of that runtime."""

    runtime_ref: RuntimeRef = Field(default_factory=RuntimeRef)
    initializer: Initializer | None = None
    trainer: Trainer | None = None
    runtime_patches: list[RuntimePatch] = Field(default_factory=list)
    """v2.2+: patches to the runtime's JobSet template, by manager."""
    pod_template_overrides: list[PodTemplateOverride] = Field(default_factory=list)
    """v2.1: pod template overrides for target replicated Jobs."""
    pod_spec_overrides: list[PodSpecOverride] = Field(default_factory=list)
    """v2.0: pod spec overrides for target replicated Jobs."""
    labels: dict[str, str] = Field(default_factory=dict)
    """v2.0-v2.1: labels of the JobSet."""
    annotations: dict[str, str] = Field(default_factory=dict)
    """v2.0-v2.1: annotations of the JobSet."""
    suspend: bool | None = None
    active_deadline_seconds: int | None = None
    managed_by: str | None = None


TRAINER_SET_NAME = "trainer"
"""The one replica type `--set` knows in a TrainJob: its ``spec.trainer``."""


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: the TrainJob's own trainer fields, ``numNodes`` and ``image``.
    Trainer sets that image on the node container of the runtime's trainer-step Job only; the
    runtime's other Jobs (initializers, MPI nodes beside a launcher) keep their images."""
    trainer = spec_of(document).get("trainer")
    if not isinstance(document.get("spec"), dict) or not isinstance(trainer, dict | None):
        return SetPaths()
    at = ("spec", "trainer")
    return SetPaths({TRAINER_SET_NAME: (*at, "numNodes")}, {TRAINER_SET_NAME: [(*at, "image")]})


@dataclass(frozen=True)
class TrainJobSpecDocument:
    """A TrainJob as read: its name, namespace, labels and spec."""

    name: str
    namespace: str | None
    labels: dict[str, str]
    annotations: dict[str, str]
    spec: TrainJobSpec


def read(
    document: dict[str, Any], problems: list[Problem], warnings: list[Problem]
) -> TrainJobSpecDocument | None:
    """The TrainJob's envelope and spec, with a problem per rule the API server enforces."""
    api_version = document.get("apiVersion")
    if api_version != API_VERSION:
        problems.append(
            Problem("apiVersion", f"must be {API_VERSION} ({got(document, 'apiVersion')})")
        )
    for key in document:
        if key not in ("apiVersion", "kind", "metadata", "spec", "status"):
            warnings.append(
                Problem(str(key), "not a field of a Kubernetes object: it has no effect here")
            )
    metadata = named(document.get("metadata"), warnings)
    meta = validate_section(ObjectMeta, metadata, "metadata", problems)
    if meta is not None:
        problems += _name_problems(meta.name)
    spec = validate_section(TrainJobSpec, document.get("spec"), "spec", problems)
    if spec is None or meta is None:
        return None
    warnings += unknown_fields(spec, "spec", f"{KIND} {API_VERSION}")
    problems += _spec_problems(spec)
    warnings += _release_warnings(spec)
    return TrainJobSpecDocument(
        meta.name, meta.namespace, dict(meta.labels), dict(meta.annotations), spec
    )


def _release_warnings(spec: TrainJobSpec) -> list[Problem]:
    """A string ``numProcPerNode`` is v2.0's and v2.1's (``*intstr.IntOrString``); v2.2.0's
    ``trainjob_types.go`` makes it ``*int32``, which the CRD's schema types as an integer."""
    proc = spec.trainer.num_proc_per_node if spec.trainer is not None else None
    if not isinstance(proc, str) or proc not in PROC_NAMES:
        return []
    return [
        Problem(
            "spec.trainer.numProcPerNode",
            f"{json.dumps(proc)} is read by Kubeflow Trainer v2.0 and v2.1 (an int or "
            f"{', '.join(PROC_NAMES)}); from v2.2 the field is an int32 and the API server "
            "refuses a string: give the number of processes per node, e.g. numProcPerNode: 1",
        )
    ]


def _name_problems(name: str) -> list[Problem]:
    """The CRD's validation rules on ``metadata.name``, with their messages."""
    found = []
    if not _DNS_1035.match(name):
        found.append(Problem("metadata.name", "metadata.name must match RFC 1035 DNS label format"))
    if len(name) > 63:
        found.append(Problem("metadata.name", "metadata.name must be no more than 63 characters"))
    return found


def _spec_problems(spec: TrainJobSpec) -> list[Problem]:
    found: list[Problem] = []
    # The JobSet's labels and annotations (v2.0-v2.1), checked as its metadata's would be.
    check_labels(dict(spec.labels), "spec.labels", found)
    check_annotation_keys(dict(spec.annotations), "spec.annotations", found)
    if spec.managed_by is not None and spec.managed_by not in MANAGERS:
        found.append(
            Problem(
                "spec.managedBy",
                "ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
                "kueue.x-k8s.io/multikueue if set",
            )
        )
    if not spec.runtime_ref.name:
        found.append(Problem("spec.runtimeRef.name", "required: the training runtime's name"))
    if spec.runtime_ref.kind not in RUNTIME_KINDS:
        found.append(
            Problem(
                "spec.runtimeRef.kind",
                f"must be ClusterTrainingRuntime or TrainingRuntime "
                f"(got {spec.runtime_ref.kind!r}): Trainer has no runtime of that kind",
            )
        )
    trainer = spec.trainer
    sources = [("spec.trainer.env", trainer.env if trainer is not None else [])]
    if spec.initializer is not None:
        sources += [
            (f"spec.initializer.{which}.env", source.env)
            for which in ("dataset", "model")
            if (source := getattr(spec.initializer, which)) is not None
        ]
    for path, env in sources:
        found += [
            Problem(f"{path}[{index}].name", "Required value: an env var's name")
            for index, item in enumerate(env)
            if not isinstance(item.get("name"), str) or not item.get("name")
        ]
    if trainer is not None:
        too_many = (
            bounds.replicas_problem(trainer.num_nodes, "spec.trainer.numNodes")
            if trainer.num_nodes is not None
            else None
        )
        if too_many is not None:
            found.append(too_many)
        if trainer.num_nodes is not None and trainer.num_nodes < 1:
            found.append(
                Problem(
                    "spec.trainer.numNodes",
                    f"should be greater than or equal to 1 (got {trainer.num_nodes})",
                )
            )
        proc = trainer.num_proc_per_node
        # Trainer's CEL rule on the field (kubeflow/trainer 8f6c5f067, "reject zero and
        # negative numNodes and numProcPerNode", after v2.3.0) and its int32 type.
        if isinstance(proc, int) and proc < 1:
            found.append(
                Problem(
                    "spec.trainer.numProcPerNode",
                    "numProcPerNode must be greater than or equal to 1",
                )
            )
        elif isinstance(proc, int) and proc > bounds.INT32_MAX:
            found.append(
                Problem(
                    "spec.trainer.numProcPerNode",
                    f"must be at most {bounds.INT32_MAX} (got {proc}): it is an int32 field",
                )
            )
        if isinstance(proc, str) and proc not in PROC_NAMES:
            found.append(
                Problem(
                    "spec.trainer.numProcPerNode",
                    f"Invalid value: {json.dumps(proc)}: must have an int value or "
                    f"{list(PROC_NAMES)}",
                )
            )
    if spec.initializer is not None:
        for which in ("dataset", "model"):
            source = getattr(spec.initializer, which)
            uri = source.storage_uri if source is not None else None
            if uri and not _URI.match(uri):
                found.append(
                    Problem(
                        f"spec.initializer.{which}.storageUri",
                        "storageUri may be empty, or it must be a valid URI (scheme://...)",
                    )
                )
    return found
