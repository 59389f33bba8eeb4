"""One parser for the replica-typed kinds: the envelope, the replica map, the typed plan.

Each kind's operator reads its replica map the same way (training-operator's
``pkg/controller.v1/common`` and the older per-kind operators before it): every key a replica
type, each value a ``ReplicaSpec`` defaulted to one replica, the kind's restart policy and its
default container and port. What a kind decides on top (who decides success, the env it sets,
its own checks) is the kind's :data:`~.declaration.MapRules`.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic.alias_generators import to_camel

from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.graph import GraphOptions
from trainjobs.core.job_document import read_envelope, validate_section
from trainjobs.core.jobset import QUEUE_LABEL, UnsharedEnv, is_queued, shared_env
from trainjobs.core.replica_spec import (
    ReplicaGroup,
    ReplicaJobPlan,
    ReplicaSpec,
    ReplicaSpecBeforeV1,
    check_names,
    check_replicas,
    check_restart_policy,
    env_override_warnings,
    gang_for,
    misplaced_replica_fields,
    replica_group,
    restart_for,
    run_settings,
    template_restart_warning,
)
from trainjobs.core.spec_model import SpecModel, unknown_fields
from trainjobs.kinds.replica.declaration import (
    JobContext,
    ListReplicaSpec,
    ReplicaKind,
    ReplicaMap,
    VersionPlan,
)


def parse(
    kind: ReplicaKind, document: dict[str, Any], source: str, namespace: str, options: GraphOptions
) -> ReplicaJobPlan:
    """A document of ``kind`` read as its version's operator read it. Raises SpecError listing
    every problem."""
    problems: list[Problem] = []
    warnings: list[Problem] = []
    envelope = read_envelope(document, kind.name, kind.versions, problems, warnings)
    if envelope is None:
        raise SpecError(source, problems, warnings)
    version = envelope.version
    spec = validate_section(kind.spec_models[version], envelope.spec, "spec", problems)
    if spec is None:
        raise SpecError(source, problems, warnings)
    warnings += unknown_fields(spec, "spec", f"{kind.name} kubeflow.org/{version}")
    job = envelope.name
    context = JobContext(job, envelope.namespace or namespace, version, options)
    if version == "v1alpha1" and kind.read_list is not None:
        plan = kind.read_list(spec, context, problems, warnings)
    else:
        replicas = _read_map(kind, spec, version, problems, warnings)
        plan = None if replicas is None else kind.rules(spec, replicas, context, problems, warnings)
    if plan is None or problems:
        raise SpecError(source, problems, warnings)
    queued = is_queued(envelope.labels)
    problems += check_names(job, plan.groups, queued=queued)
    if queued:
        problems += _unshared_env_problems(plan)
    warnings += env_override_warnings(plan.groups, plan.env, plan.env_target)
    gang = gang_for(
        plan.groups, plan.run, options.gang_scheduler, options.gang_scheduler_name, warnings
    )
    if problems:
        raise SpecError(source, problems, warnings)
    return ReplicaJobPlan(
        kind=kind.name,
        api_version=f"kubeflow.org/{version}",
        job=job,
        namespace=context.namespace,
        labels=envelope.labels,
        groups=plan.groups,
        run=plan.run,
        success=plan.success,
        env=plan.env,
        env_target=plan.env_target,
        assets=plan.assets,
        gang=gang,
        operator_labels=kind.operator_labels[version],
        master_role=kind.master_role,
        warnings=warnings,
    )


def _read_map(
    kind: ReplicaKind,
    spec: SpecModel,
    version: str,
    problems: list[Problem],
    warnings: list[Problem],
) -> ReplicaMap | None:
    """The run policy and the replica map (v1alpha2 onwards), each replica given the kind's
    defaults; None when the map is missing, empty or has no replica type above its fields."""
    run = run_settings(spec, kind.default_clean_pod_policy[version], problems)
    replica_specs: dict[str, Any] = getattr(spec, kind.replica_map, {})
    if not replica_specs:
        problems.append(Problem(kind.replica_map_path, kind.empty_map))
        return None
    misplaced = misplaced_replica_fields(replica_specs, kind.replica_map_path, kind.example_type)
    if misplaced is not None:
        problems.append(misplaced)
        return None
    model = ReplicaSpec if version == "v1" else ReplicaSpecBeforeV1
    groups: list[ReplicaGroup] = []
    written: dict[str, str] = {}
    for key, raw in replica_specs.items():
        path = f"{kind.replica_map_path}.{key}"
        replica_type = _replica_type(kind, key, path, problems, warnings)
        if replica_type is None:
            continue
        if replica_type in written:
            first = f"{kind.replica_map_path}.{written[replica_type]}"
            problems.append(Problem(path, f"the same replica type as {first}"))
            continue
        written[replica_type] = str(key)
        replica = validate_section(model, raw, path, problems)
        if replica is None:
            continue
        warnings += unknown_fields(replica, path, f"{kind.name} kubeflow.org/{version}")
        policy = check_restart_policy(
            replica.restart_policy, kind.default_restart_policy, f"{path}.restartPolicy", problems
        )
        replicas = check_replicas(replica.replicas, f"{path}.replicas", problems)
        if key in kind.single_replica_types and replicas != 1:
            problems.append(
                Problem(f"{path}.replicas", f"must be 1 (got {replicas}); add Workers instead")
            )
        groups.append(
            replica_group(
                replica_type=replica_type,
                replicas=replicas,
                template=replica.template,
                restart=restart_for(policy, run.backoff_limit),
                source_path=path,
                default_container=kind.default_container,
                port_name=kind.port_name,
                default_port=kind.default_port,
                problems=problems,
                warnings=warnings,
            )
        )
    warnings += [w for g in groups if (w := template_restart_warning(g)) is not None]
    return ReplicaMap(run, groups, written)


def _replica_type(
    kind: ReplicaKind, key: Any, path: str, problems: list[Problem], warnings: list[Problem]
) -> str | None:
    """The lowercase replica type of a map key, or None (with a problem) when the kind's
    operator refuses the key."""
    if kind.lenient_types:
        if str(key).lower() not in (t.lower() for t in kind.replica_types):
            warnings.append(
                Problem(
                    path,
                    f"{key!r} is not a {kind.name} replica type "
                    f"({', '.join(kind.replica_types)}); Kubeflow runs it as written, so it "
                    "runs here too",
                )
            )
        return str(key).lower()
    # pytorch-operator and training-operator (but 1.3-1.5) refuse other spellings.
    if key in kind.replica_types:
        return str(key).lower()
    close = next((t for t in kind.replica_types if t.lower() == str(key).lower()), None)
    fix = f"write {close!r}" if close else f"use {' or '.join(kind.replica_types)}"
    problems.append(Problem(path, f"{key!r} is not a {kind.name} replica type: {fix}"))
    return None


Entry = TypeVar("Entry", bound=ListReplicaSpec)


@dataclass(frozen=True)
class ListEntry(Generic[Entry]):
    """One checked entry of a ``v1alpha1`` ``replicaSpecs`` list."""

    path: str
    type: str
    """MASTER, WORKER or PS, as v1alpha1 spelled them."""
    entry: Entry
    replicas: int


def list_entries(
    kind: str,
    entries: list[Any],
    model: type[Entry],
    type_field: str,
    types: tuple[str, ...],
    problems: list[Problem],
    warnings: list[Problem],
) -> Iterator[ListEntry[Entry]]:
    """The ``v1alpha1`` list shape's entries, each validated as ``model`` with its replica type
    (``type_field``, default MASTER) one of ``types`` and given once, and one MASTER at most.

    Entries are yielded one at a time, so that a kind's problems with one entry come before
    those with the next, as its operator reported them."""
    seen: dict[str, int] = {}
    for position, raw in enumerate(entries):
        path = f"spec.replicaSpecs[{position}]"
        entry = validate_section(model, raw, path, problems)
        if entry is None:
            continue
        warnings += unknown_fields(entry, path, f"{kind} kubeflow.org/v1alpha1")
        wire = to_camel(type_field)
        type_name = getattr(entry, type_field) or "MASTER"
        if type_name not in types:
            problems.append(
                Problem(
                    f"{path}.{wire}",
                    f"must be one of {', '.join(types)} (got {type_name!r})",
                )
            )
            continue
        if type_name in seen:
            problems.append(
                Problem(
                    f"{path}.{wire}",
                    f"{type_name} is already defined by spec.replicaSpecs[{seen[type_name]}]; "
                    "merge them into one entry",
                )
            )
            continue
        seen[type_name] = position
        replicas = check_replicas(entry.replicas, f"{path}.replicas", problems)
        if type_name == "MASTER" and replicas != 1:
            problems.append(
                Problem(f"{path}.replicas", f"must be 1 for the MASTER (got {replicas})")
            )
        yield ListEntry(path, type_name, entry, replicas)


def _unshared_env_problems(plan: VersionPlan) -> list[Problem]:
    """Queued, each replica type's pods share one template (a JobSet's replicated Job), so
    the operator's env of each pod must be the same text around the pod's index."""
    problems: list[Problem] = []
    offset = 0
    for group in plan.groups:
        per_index = [plan.env.get((group.type, index), []) for index in range(group.replicas)]
        try:
            shared_env(per_index, offset)
        except UnsharedEnv as unshared:
            problems.append(
                Problem(
                    f"metadata.labels.{QUEUE_LABEL}",
                    f"queued, the job runs as one JobSet whose {group.type!r} pods share one "
                    f"template, but the env its operator sets, {unshared.name}, differs between "
                    "them in more than their index; remove the label to run the job unqueued",
                )
            )
        offset += group.replicas
    return problems
