"""The package layout shows the architecture: modules say what they are, imports form no
cycle, and the README's layout table names every subpackage that exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

PACKAGE = REPO / "components"


def module_name(path: Path) -> str:
    """The import name of a module under components/ (imported as ``trainjobs``)."""
    parts = ("trainjobs", *path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def runtime_imports(path: Path, known: set[str]) -> set[str]:
    """The trainjobs modules a module imports when it is imported: top-level statements only,
    not those under ``if TYPE_CHECKING:`` or inside functions (imported when called)."""
    found: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module in known:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names} & known
        elif isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names} & known
    return found


def test_every_module_opens_with_a_one_line_summary():
    long_or_missing = []
    for name, path in modules().items():
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")), clean=False)
        summary = (docstring or "").split("\n\n", 1)[0]
        if not summary.strip() or "\n" in summary.strip():
            long_or_missing.append(name)
    assert long_or_missing == []


def test_no_import_cycles():
    found = modules()
    graph = {name: runtime_imports(path, set(found)) for name, path in found.items()}
    cycles = []

    def visit(name: str, stack: list[str], done: set[str]) -> None:
        if name in stack:
            cycles.append(" -> ".join([*stack[stack.index(name) :], name]))
            return
        if name in done:
            return
        for imported in sorted(graph[name]):
            visit(imported, [*stack, name], done)
        done.add(name)

    done: set[str] = set()
    for name in sorted(graph):
        visit(name, [], done)
    assert cycles == []


def test_cycle_check_sees_a_cycle(tmp_path):
    # The check itself: two modules that import each other at top level form a cycle.
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from trainjobs.core import errors\nimport second\n", encoding="utf-8")
    second.write_text("import first\n", encoding="utf-8")
    assert runtime_imports(first, {"second", "trainjobs.core"}) == {"second", "trainjobs.core"}
    assert runtime_imports(second, {"first"}) == {"first"}


def test_readme_layout_table_names_every_subpackage():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = readme.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(components/[a-z_/]+/)`", table))
    packages = {
        f"{path.parent.relative_to(REPO)}/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    }
    assert listed == packages
