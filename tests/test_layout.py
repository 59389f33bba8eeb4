"""The package layout shows the architecture: modules say what they are, imports form no
cycle, and the docs' layout table names every subpackage that exists."""

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


def all_imports(path: Path, known: set[str]) -> set[str]:
    """The trainjobs modules a module imports anywhere: at top level, inside functions
    (imported when called, which still ties the two modules together) and under
    ``if TYPE_CHECKING:`` (never imported at run time, but the two modules still know each
    other: one types against the other, so neither can be read or moved alone)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module in known:
            found.add(node.module)
            found.update({f"{node.module}.{a.name}" for a in node.names} & known)
        elif isinstance(node, ast.Import):
            found.update({alias.name for alias in node.names} & known)
    return found


def import_cycles(graph: dict[str, set[str]]) -> list[str]:
    """Each import cycle of ``graph`` (module -> modules it imports), once per entry point."""
    cycles: list[str] = []

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
    return cycles


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
    assert import_cycles(graph) == []


def test_no_import_cycles_through_imports_inside_functions_or_for_type_checking():
    """A function-level import only defers a cycle, and a ``TYPE_CHECKING`` one only hides it
    from the interpreter: the two modules still depend on each other."""
    found = modules()
    # A package importing its own submodules (`from trainjobs.cli import run`) is no cycle.
    graph = {name: all_imports(path, set(found)) - {name} for name, path in found.items()}
    assert import_cycles(graph) == []


def test_function_level_and_type_checking_imports_count(tmp_path):
    module = tmp_path / "module.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import hinted\n"
        "def later():\n    from trainjobs.core import errors\n    import deferred\n",
        encoding="utf-8",
    )
    known = {"hinted", "deferred", "trainjobs.core", "trainjobs.core.errors"}
    assert all_imports(module, known) == known
    assert import_cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a -> b -> c -> a"]


def test_cycle_check_sees_a_cycle(tmp_path):
    # The check itself: two modules that import each other at top level form a cycle.
    first, second = tmp_path / "first.py", tmp_path / "second.py"
    first.write_text("from trainjobs.core import errors\nimport second\n", encoding="utf-8")
    second.write_text("import first\n", encoding="utf-8")
    assert runtime_imports(first, {"second", "trainjobs.core"}) == {"second", "trainjobs.core"}
    assert runtime_imports(second, {"first"}) == {"first"}


def test_the_docs_layout_table_names_every_subpackage():
    page = (REPO / "docs" / "contributing.md").read_text(encoding="utf-8")
    table = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"`(components/[a-z_/]+/)`", table))
    packages = {
        f"{path.parent.relative_to(REPO)}/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    }
    assert listed == packages
