"""A job document's envelope: apiVersion, kind, metadata and spec, read for any kind.

The spec section is validated with the model of the document's version; problems carry
their full field path. Fields the API server manages (``status``, server-set metadata such
as ``creationTimestamp`` in a document saved with ``kubectl get -o yaml``) are accepted and
ignored, as ``kubectl apply`` would.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from trainjobs.core.errors import Problem, got
from trainjobs.core.models import ObjectMeta, problem_from_pydantic
from trainjobs.core.names import namespace_problems
from trainjobs.core.pod_rules import check_annotation_keys, check_labels

GROUP = "kubeflow.org"
ENVELOPE = ("apiVersion", "kind", "metadata", "spec", "status")

Model = TypeVar("Model", bound=BaseModel)


@dataclass(frozen=True)
class Envelope:
    version: str
    """The apiVersion's version part (``v1``, ``v1alpha1``...)."""
    name: str
    namespace: str | None
    labels: dict[str, str]
    spec: dict[str, Any]


def read_envelope(
    document: Mapping[str, Any],
    kind: str,
    versions: tuple[str, ...],
    problems: list[Problem],
    warnings: list[Problem],
) -> Envelope | None:
    """The version, metadata and raw spec; None (with problems) when they cannot be read."""
    api_version = document.get("apiVersion")
    group, _, version = str(api_version).rpartition("/")
    if group != GROUP or version not in versions:
        accepted = ", ".join(f"{GROUP}/{v}" for v in versions)
        why = (
            f"{api_version!r} is another project's {kind}, not Kubeflow's"
            if isinstance(api_version, str) and group and group != GROUP
            else got(document, "apiVersion")
        )
        problems.append(Problem("apiVersion", f"must be one of {accepted} ({why})"))
    for key in document:
        if key not in ENVELOPE:
            warnings.append(
                Problem(str(key), "not a field of a Kubernetes object: it has no effect here")
            )
    meta = _metadata(document.get("metadata"), problems, warnings)
    if meta is not None:
        problems += metadata_problems(meta)
    spec = document.get("spec")
    if not isinstance(spec, dict):
        problems.append(Problem("spec", f"required: the {kind}'s spec ({got(document, 'spec')})"))
        return None
    if problems or meta is None:
        return None
    return Envelope(version, meta.name, meta.namespace, dict(meta.labels), spec)


def metadata_problems(meta: ObjectMeta) -> list[Problem]:
    """The job's namespace, labels and annotation keys, as the API server checks them (the
    name has its own, stricter check: :func:`~trainjobs.core.names.job_name_problem`)."""
    problems: list[Problem] = []
    if meta.namespace:
        problems += namespace_problems(meta.namespace, "metadata.namespace")
    check_labels(dict(meta.labels), "metadata.labels", problems)
    check_annotation_keys(dict(meta.annotations), "metadata.annotations", problems)
    return problems


def named(metadata: Any, warnings: list[Problem]) -> Any:
    """``metadata`` with the name a ``generateName`` stands for, and a warning saying so; any
    other value as it is. The API server would append a random suffix on each create; a stack
    creates its job once and names every object (hostfiles, RBAC resourceNames) after it, so
    the prefix, without its trailing dash, is the name."""
    if not isinstance(metadata, dict) or metadata.get("name") or not metadata.get("generateName"):
        return metadata
    name = str(metadata["generateName"]).rstrip("-")
    warnings.append(
        Problem(
            "metadata.generateName",
            f"a stack creates its job once, under fixed names: the job is named {name!r}",
        )
    )
    return {**metadata, "name": name}


def _metadata(value: Any, problems: list[Problem], warnings: list[Problem]) -> ObjectMeta | None:
    value = named(value, warnings)
    if value is None:
        problems.append(Problem("metadata.name", "required: the job's name"))
        return None
    try:
        return ObjectMeta.model_validate(value)
    except ValidationError as error:
        problems.extend(_prefixed(error, "metadata"))
        return None


def validate_section(
    model: type[Model], data: Any, path: str, problems: list[Problem]
) -> Model | None:
    """``data`` as ``model``, or None with a problem per error, each prefixed with ``path``."""
    try:
        return model.model_validate(data if data is not None else {})
    except ValidationError as error:
        problems.extend(_prefixed(error, path))
        return None


def _prefixed(error: ValidationError, path: str) -> list[Problem]:
    found = []
    for detail in error.errors():
        problem = problem_from_pydantic(detail)
        where = f"{path}.{problem.path}" if problem.path else path
        found.append(Problem(where.replace(".[", "["), problem.message))
    return found
