"""Training runtimes: Kubeflow Trainer's released ClusterTrainingRuntimes, and a user's own.

The released ones are data, one file per release from v2.0 (``releases/<tag>.yaml`` beside
this module): each release's ``manifests/base/runtimes`` at its tag in kubeflow/trainer (the
tag and commit head each file), read through the project's bounded YAML loader. The latest is
selected unless ``GraphOptions.trainer_version`` names another. A ``ClusterTrainingRuntime`` or
``TrainingRuntime`` document in the TrainJob's own file takes precedence over a released
runtime of the same kind and name, as one installed on the cluster would
(``pkg/runtime/core/clustertrainingruntime.go`` and ``trainingruntime.go`` look the runtime up
by name, then kind). A name the selected release lacks but an earlier one shipped is found in
the newest such release, with a warning: a cluster that installed it then still has it.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjobs.core.documents import load_documents
from trainjobs.core.errors import Problem, got
from trainjobs.core.graph import Manifest
from trainjobs.core.job_document import validate_section
from trainjobs.core.pod_rules import check_template_rules
from trainjobs.core.pod_schema import check_template_types
from trainjobs.kinds.trainjob.runtime_spec import TrainingRuntimeSpec
from trainjobs.kinds.trainjob.spec import API_VERSION, RUNTIME_KINDS, RuntimeRef

RELEASES = ("v2.0.0", "v2.0.1", "v2.1.0", "v2.2.0", "v2.2.1", "v2.3.0")
"""Kubeflow Trainer's releases whose runtimes are here, oldest first."""
LATEST = RELEASES[-1]
RELEASE_DIR = Path(__file__).with_name("releases")
NOT_RENDERED = ("torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b")
"""ClusterTrainingRuntimes Trainer installs (v2.0 on) that trainjobs does not render: the
torchtune ones (``manifests/base/runtimes/torchtune``). Their JobSet shares an ``initializer``
claim through ``volumeClaimPolicies``, which JobSet v0.12's controller creates and mounts
(``pkg/controllers/volume_claim_policy.go``), and Trainer's torch plugin rewrites a TrainJob's
``tune run`` command (``pkg/runtime/framework/plugins/torch/torch.go`` and ``torchtune.go``)."""


@dataclass(frozen=True)
class Runtime:
    """A (Cluster)TrainingRuntime: its MLPolicy, PodGroupPolicy and JobSet template."""

    kind: str
    name: str
    ml_policy: Manifest
    pod_group_policy: Manifest
    template: Manifest
    """``spec.template``: the JobSet's metadata and spec."""
    source: str
    """Where it was declared: the TrainJob's file, or Trainer's release."""
    namespace: str | None = None
    """A TrainingRuntime's namespace (None: the TrainJob's)."""

    @property
    def key(self) -> str:
        return f"{self.kind}/{self.name}"


def runtime_from(document: dict[str, Any], source: str, problems: list[Problem]) -> Runtime | None:
    """A runtime document, or None with a problem naming what is missing."""
    kind = str(document.get("kind"))
    name = (document.get("metadata") or {}).get("name")
    where = f"{kind}/{name}" if name else kind
    if document.get("apiVersion") != API_VERSION:
        problems.append(
            Problem(f"{where}.apiVersion", f"must be {API_VERSION} ({got(document, 'apiVersion')})")
        )
        return None
    spec = document.get("spec")
    if not isinstance(name, str) or not name:
        problems.append(Problem(f"{kind}.metadata.name", "required: the runtime's name"))
        return None
    template = spec.get("template") if isinstance(spec, dict) else None
    for path, value, holds in (
        ("spec.template", template, "the JobSet's spec"),
        ("spec.template.spec", _at(template, "spec"), "the JobSet's replicatedJobs"),
    ):
        if value is not None and not isinstance(value, dict):
            problems.append(
                Problem(f"{where}.{path}", f"must be a mapping with {holds} (got {value!r})")
            )
            return None
    jobs = _at(template, "spec", "replicatedJobs")
    if not isinstance(jobs, list) or not jobs or not all(isinstance(j, dict) for j in jobs):
        problems.append(
            Problem(
                f"{where}.spec.template.spec.replicatedJobs",
                "required: the JobSet's replicated Jobs (a list of mappings)",
            )
        )
        return None
    assert isinstance(spec, dict) and isinstance(template, dict)
    before = len(problems)
    for index, job in enumerate(jobs):
        path = f"{where}.spec.template.spec.replicatedJobs[{index}]"
        pod = _at(job, "template", "spec", "template")
        if not isinstance(job.get("name"), str) or not job["name"]:
            problems.append(Problem(f"{path}.name", "required: the replicated Job's name"))
        elif not isinstance(pod, dict) or not isinstance(pod.get("spec"), dict):
            problems.append(
                Problem(f"{path}.template.spec.template.spec", "required: the Job's pod spec")
            )
        elif not all(
            isinstance(c, dict)
            for group in ("initContainers", "containers")
            for c in pod["spec"].get(group) or []
        ):
            problems.append(
                Problem(f"{path}.template.spec.template.spec", "containers must be mappings")
            )
    if len(problems) > before:
        return None
    checked = validate_section(TrainingRuntimeSpec, spec, f"{where}.spec", problems)
    if checked is not None:
        problems += _network_topology_problems(checked, f"{where}.spec")
        problems += _env_injection_problems(checked, f"{where}.spec")
    if len(problems) > before:
        return None
    for index, job in enumerate(jobs):
        pod = job["template"]["spec"]["template"]
        path = f"{where}.spec.template.spec.replicatedJobs[{index}].template.spec.template"
        check_template_types(pod, path, problems, [])
        check_template_rules(pod, path, problems)
    if len(problems) > before:
        return None
    return Runtime(
        kind=kind,
        name=name,
        ml_policy=dict(spec.get("mlPolicy") or {}),
        pod_group_policy=dict(spec.get("podGroupPolicy") or {}),
        template=copy.deepcopy(template),
        source=source,
        namespace=(document.get("metadata") or {}).get("namespace"),
    )


TOPOLOGY_MODES = ("hard", "soft")
"""The CRD's enum on ``podGroupPolicy.volcano.networkTopology.mode``."""


def _network_topology_problems(spec: TrainingRuntimeSpec, path: str) -> list[Problem]:
    """The API server refuses a mode outside the CRD's enum (kubeflow/trainer v2.3.0
    ``manifests/base/crds/trainer.kubeflow.org_clustertrainingruntimes.yaml``)."""
    policy = spec.pod_group_policy
    volcano = policy.volcano if policy is not None else None
    topology = volcano.network_topology if volcano is not None else None
    if topology is None or topology.mode is None or topology.mode in TOPOLOGY_MODES:
        return []
    supported = ", ".join(json.dumps(mode) for mode in TOPOLOGY_MODES)
    return [
        Problem(
            f"{path}.podGroupPolicy.volcano.networkTopology.mode",
            f"Unsupported value: {json.dumps(topology.mode)}: supported values: {supported}",
        )
    ]


def _env_injection_problems(spec: TrainingRuntimeSpec, path: str) -> list[Problem]:
    """The CRD's rule on ``mlPolicy.torch.envInjection.targets[].containerNames``: the
    ``node`` container always gets the env, so it may not be named (kubeflow/trainer v2.3.0
    ``pkg/apis/trainer/v1alpha1/trainingruntime_types.go``, ``EnvInjectionTarget``)."""
    policy = spec.ml_policy
    torch = policy.torch if policy is not None else None
    injection = torch.env_injection if torch is not None else None
    if injection is None:
        return []
    return [
        Problem(
            f"{path}.mlPolicy.torch.envInjection.targets[{index}].containerNames",
            'Invalid value: "array": containerNames must not include the main node container '
            "because PET_* envs are always injected into it",
        )
        for index, target in enumerate(injection.targets)
        if "node" in target.container_names
    ]


def _at(value: Any, *keys: str) -> Any:
    """``value[k1][k2]...``, or None where a level is missing or is not a mapping."""
    for key in keys:
        value = value.get(key) if isinstance(value, dict) else None
    return value


@functools.cache
def shipped(release: str = LATEST) -> tuple[Runtime, ...]:
    """The ClusterTrainingRuntimes Kubeflow Trainer ``release`` installs."""
    problems: list[Problem] = []
    found = [
        runtime_from(document, f"Kubeflow Trainer {release}", problems)
        for document in load_documents(RELEASE_DIR / f"{release}.yaml")
    ]
    assert not problems, problems
    return tuple(runtime for runtime in found if runtime is not None)


TORCH_FIELDS_BEFORE_V2_2 = ("numProcPerNode", "elasticPolicy")
"""``TorchMLPolicySource``'s fields in v2.0 and v2.1; v2.2.0's ``trainingruntime_types.go``
leaves the struct empty, and v2.3.0 adds ``envInjection``."""


def since(release: str, first: str) -> bool:
    """Whether ``release`` is ``first`` or later."""
    return RELEASES.index(release) >= RELEASES.index(first)


def prune_for_release(runtime: Runtime, release: str) -> list[Problem]:
    """Remove, as the API server of ``release``'s CRD prunes them, the torch policy's fields
    that release does not have; a warning for each."""
    torch = runtime.ml_policy.get("torch")
    if not isinstance(torch, dict):
        return []
    found = []
    where = f"{runtime.key}.spec.mlPolicy.torch"
    absent = f"not a field of Kubeflow Trainer {release}'s runtime"
    for field in TORCH_FIELDS_BEFORE_V2_2 if since(release, "v2.2.0") else ():
        if torch.pop(field, None) is not None:
            fix = "; set the TrainJob's spec.trainer.numProcPerNode instead"
            found.append(
                Problem(
                    f"{where}.{field}",
                    f"{absent} (v2.2 removed it), so the API server prunes it"
                    + (fix if field == "numProcPerNode" else ""),
                )
            )
    if not since(release, "v2.3.0") and torch.pop("envInjection", None) is not None:
        found.append(
            Problem(
                f"{where}.envInjection",
                f"{absent} (v2.3 added it), so the API server prunes it and no container but "
                "the node's gets the PET_* env; select v2.3.0 with --trainer-version or "
                "trainjobs:trainerVersion",
            )
        )
    return found


def release_problem(release: str) -> Problem | None:
    """A release whose runtimes are not here."""
    if release in RELEASES:
        return None
    return Problem(
        "trainerVersion",
        f"{release!r} is not a Kubeflow Trainer release trainjobs has the runtimes of; choose "
        f"one of {', '.join(RELEASES)}",
    )


@dataclass(frozen=True)
class Found:
    runtime: Runtime
    warning: Problem | None = None
    """Set when an earlier release than the selected one shipped it."""


def lookup(
    ref: RuntimeRef, given: list[Runtime], namespace: str, release: str = LATEST
) -> Found | None:
    """The runtime ``ref`` names: one given beside the TrainJob first, then one ``release``
    installs, then the newest earlier release's of that name. A TrainingRuntime is
    namespaced: only one in the TrainJob's namespace is found."""
    found = _named(ref, [*given, *shipped(release)], namespace)
    if found is not None:
        return Found(found)
    for earlier in reversed(RELEASES[: RELEASES.index(release)]):
        found = _named(ref, list(shipped(earlier)), namespace)
        if found is not None:
            return Found(found, _earlier_release(ref, earlier, release))
    return None


def _named(ref: RuntimeRef, runtimes: list[Runtime], namespace: str) -> Runtime | None:
    for runtime in runtimes:
        if runtime.kind == ref.kind and runtime.name == ref.name:
            if runtime.kind == "TrainingRuntime" and runtime.namespace not in (None, namespace):
                continue
            return copy.deepcopy(runtime)
    return None


def _earlier_release(ref: RuntimeRef, earlier: str, release: str) -> Problem:
    return Problem(
        "spec.runtimeRef.name",
        f"{ref.kind} {json.dumps(ref.name)} is one Kubeflow Trainer {earlier} installs (the "
        f"newest release that does), not {release}: it is rendered as {earlier} ships it; "
        f"select that release with --trainer-version {earlier} (stack config "
        "trainjobs:trainerVersion), or on a cluster of a later release install it from that "
        "release's manifests/base/runtimes",
    )


def missing(ref: RuntimeRef, given: list[Runtime], release: str = LATEST) -> Problem:
    """Trainer's reason for a runtime it cannot find, and the runtimes there are."""
    if ref.kind not in RUNTIME_KINDS or ref.api_group != "trainer.kubeflow.org":
        return Problem("spec.runtimeRef", f"unsupported runtime: {ref.kind}.{ref.api_group}")
    resource = ref.kind[0].lower() + ref.kind[1:]
    there = sorted({runtime.key for runtime in [*given, *shipped(release)]})
    if ref.kind == "ClusterTrainingRuntime" and ref.name in NOT_RENDERED:
        return Problem(
            "spec.runtimeRef",
            f'ClusterTrainingRuntime "{ref.name}" is one of Kubeflow Trainer {release}\'s '
            "torchtune fine-tuning runtimes, which trainjobs does not render: the "
            "'initializer' claim its JobSet's volumeClaimPolicies has JobSet's controller "
            "create, and the `tune run` command Trainer builds from a TrainJob's trainer, are "
            "not reproduced here; give a ClusterTrainingRuntime of that name beside the "
            "TrainJob in its file, with an 'initializer' volume in its pods in place of "
            "volumeClaimPolicies and the full `tune run` command in its node container, or use "
            "one of "
            f"{', '.join(there)}",
        )
    return Problem(
        "spec.runtimeRef",
        f'{resource.lower()}s.trainer.kubeflow.org "{ref.name}" not found: specified '
        f"{resource} must be created before the TrainJob is created; the runtimes there are "
        f"{', '.join(there)} (Kubeflow Trainer {release}'s, and those given beside the "
        "TrainJob in its file)",
    )
