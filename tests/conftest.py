"""Shared test helpers: the repository root, a minimal valid job, schema validation."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

REPO = Path(__file__).resolve().parent.parent
# Kubernetes versions every manifest must validate against: the oldest we support and the
# newest the installed schemas know.
KUBERNETES_VERSIONS = ("1.30.0", kubernetes_validate.utils.latest_version())

MINIMAL_JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1alpha1",
    "kind": "ChainerJob",
    "metadata": {"name": "demo"},
    "spec": {
        "master": {
            "template": {"spec": {"containers": [{"image": "img:1", "command": ["mpiexec"]}]}}
        },
        "worker": {"replicas": 2, "template": {"spec": {"containers": [{"image": "img:1"}]}}},
    },
}


@pytest.fixture
def job() -> dict[str, Any]:
    """A fresh copy of a minimal valid distributed ChainerJob (master + 2 workers)."""
    return copy.deepcopy(MINIMAL_JOB)


def schema_problems(manifest: dict[str, Any]) -> list[str]:
    """First line of each strict schema violation, per Kubernetes version (empty if valid)."""
    problems = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            name = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
            problems.append(f"{version} {name}: {str(error).splitlines()[0]}")
    return problems
