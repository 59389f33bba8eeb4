"""What kinds share lives beside them, not inside one of them: the MPI graph (ChainerJob,
MPIJob) in kinds/mpi/, the replica-job parser (TFJob, PyTorchJob) in kinds/replica/."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

KINDS = REPO / "components" / "kinds"
SHARED = ("mpi", "replica")
PUBLIC_SURFACES = ("components/__init__.py", "components/deploy/jobs.py")
"""Modules that name each kind's spec models for the library's users."""


def kind_packages() -> set[str]:
    return {
        f"trainjobs.kinds.{path.parent.name}"
        for path in KINDS.glob("*/__init__.py")
        if path.parent.name not in SHARED
    }


def imported(path: Path) -> set[str]:
    """Every module a file imports, wherever the import is (TYPE_CHECKING ones too)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found |= {node.module} | {f"{node.module}.{alias.name}" for alias in node.names}
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
    return found


def kind_imports(paths: list[Path]) -> dict[str, list[str]]:
    packages = kind_packages()
    found = {}
    for path in paths:
        names = sorted(
            name
            for name in imported(path)
            if any(name == p or name.startswith(f"{p}.") for p in packages)
        )
        if names:
            found[str(path.relative_to(REPO))] = names
    return found


def test_the_shared_machinery_imports_no_kinds_package():
    shared = [path for name in SHARED for path in sorted((KINDS / name).rglob("*.py"))]
    assert kind_imports(shared) == {}


def test_outside_kinds_no_module_reaches_into_a_kinds_package():
    """The local runtime and the Pulumi component take the MPI transport's assets from
    kinds/mpi/; only the public surfaces name a kind's spec models."""
    outside = [
        path
        for path in sorted((REPO / "components").rglob("*.py"))
        if KINDS not in path.parents and str(path.relative_to(REPO)) not in PUBLIC_SURFACES
    ]
    assert kind_imports(outside) == {}
