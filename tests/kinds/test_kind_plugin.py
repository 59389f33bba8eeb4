"""A kind is a plugin: a kind's own folder and one registry entry put it on every surface.

EchoJob (``tests/toykind/``) exists only here; the fixture adds its module to the registry,
and nothing else in trainjobs knows of it.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

import trainjobs
from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.cli.overrides import apply_overrides
from trainjobs.core.errors import SpecError
from trainjobs.kinds.registry import KIND_MODULES, KINDS, parse_job

ECHO = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "EchoJob",
    "metadata": {"name": "echo"},
    "spec": {
        "replicas": 2,
        "template": {"spec": {"containers": [{"name": "echo", "image": "busybox:1.36"}]}},
    },
}


@pytest.fixture
def echo_kind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(KINDS, "modules", [*KIND_MODULES, "tests.toykind.kind"])
    yield
    for name in ("EchoJob", "EchoJobSpec"):  # the names `import trainjobs` cached
        vars(trainjobs).pop(name, None)


@pytest.fixture
def echo_file(tmp_path: Path) -> Path:
    path = tmp_path / "echo.yaml"
    path.write_text(yaml.safe_dump(ECHO))
    return path


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_validates(echo_file, capsys):
    assert main(["validate", str(echo_file)]) == 0
    assert capsys.readouterr().out == f"{echo_file}: valid EchoJob 'echo' (1 objects)\n"


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_renders(echo_file, capsys):
    assert main(["render", str(echo_file), "--out", "-"]) == 0
    (job,) = list(yaml.safe_load_all(capsys.readouterr().out))
    assert (job["kind"], job["metadata"]["name"], job["spec"]["completions"]) == ("Job", "echo", 2)


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_is_in_the_library():
    from tests.toykind.component import EchoJob
    from tests.toykind.spec import EchoJobSpec

    assert {"EchoJob", "EchoJobSpec"} <= set(trainjobs.__all__)
    assert (trainjobs.EchoJob, trainjobs.EchoJobSpec) == (EchoJob, EchoJobSpec)


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_is_in_the_provider_schema():
    from trainjobs.deploy.provider import schema

    served = schema()
    echo = served["resources"]["trainjobs:index:EchoJob"]
    assert echo["inputProperties"]["spec"]["$ref"] == "#/types/trainjobs:index:EchoJobSpecArgs"
    spec = served["types"]["trainjobs:index:EchoJobSpecArgs"]
    assert spec["properties"]["replicas"]["description"] == "Pods to run. Default: 1."
    assert spec["required"] == ["template"]


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_takes_set():
    changed = apply_overrides(ECHO, ["replicas.echo=3", "image=my/img:2"])
    assert changed["spec"]["replicas"] == 3
    assert changed["spec"]["template"]["spec"]["containers"][0]["image"] == "my/img:2"


@pytest.mark.usefixtures("echo_kind")
def test_a_new_kind_gets_a_crd(tmp_path, capsys):
    assert main(["crds", "--out", str(tmp_path)]) == 0
    crd = yaml.safe_load((tmp_path / "echojobs.kubeflow.org.yaml").read_text())
    (version,) = crd["spec"]["versions"]
    schema = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert (crd["spec"]["names"]["kind"], schema["required"]) == ("EchoJob", ["template"])


@pytest.mark.usefixtures("echo_kind")
def test_an_unknown_kind_is_told_the_new_one_too():
    with pytest.raises(SpecError) as caught:
        parse_job({"kind": "Nope"}, "nope.yaml")
    assert str(caught.value).splitlines()[1] == (
        "  kind: must be one of ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, "
        "PaddleJob, JAXJob, EchoJob (got 'Nope'); XGBoost and JAX jobs also run as a TrainJob "
        "with the xgboost-distributed or jax-distributed runtime"
    )


# ---------------------------------------------------------------------------------------------
# Nothing outside a kind's folder names a kind

PACKAGE = REPO / "components"

ALLOWED = {
    # Help of graph options that act on some kinds only (what each option changes).
    ("cli/jobs.py", "give TFJobs and PyTorchJobs a PodGroup their pods join"),
    ("cli/jobs.py", "how a ChainerJob's master starts MPI daemons"),
    ("cli/jobs.py", "the Kubeflow Trainer release (v2.0.0 on) whose default runtimes a TrainJob"),
    ("cli/run.py", "change the spec before it is validated"),
    # The example images say which example job runs them.
    ("images/catalogue.py", "PyTorch 2.13.0 on CPU with the digits training script"),
    ("images/catalogue.py", "TensorFlow 2.20 on CPU with the digits training script"),
    ("images/catalogue.py", "XGBoost 3.2, PaddlePaddle 3.3 and JAX 0.4.30 on CPU"),
    # What a document of a kind no entry reads is told: a retired kind what replaced it, any
    # other kind the TrainJob runtimes of frameworks whose v1 kinds some clusters lack.
    ("kinds/retired.py", "MXJob is retired"),
    ("kinds/retired.py", "XGBoost and JAX jobs also run as a TrainJob"),
}
"""(module, the start of a string that names a kind) allowed outside the kinds' folders."""


def _kind_packages() -> dict[str, str]:
    """Kind name -> its package (``trainjobs.kinds.tensorflow``)."""
    return {name: kind.exports[name].rsplit(".", 1)[0] for name, kind in KINDS.items()}


def _code(tree: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``tree`` that run: not docstrings (a string on its own as a statement is
    prose), not imports for type checkers only (``if TYPE_CHECKING:``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            continue
        yield node
        yield from _code(node)


def names_of_kinds(path: Path) -> list[str]:
    """What ``path`` says of specific kinds in code: imports of a kind's package, names
    (``TFJobArgs``) and string constants holding a kind's name."""
    packages = _kind_packages()
    pattern = re.compile(r"\b(" + "|".join(packages) + r")s?\b")
    identifier = re.compile(r"(?<![A-Za-z])(" + "|".join(packages) + r")(?![a-z])")
    relative = path.relative_to(PACKAGE).as_posix()
    found = []
    for node in _code(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            text = node.value
            if pattern.search(text) and not any(
                relative == module and text.startswith(start) for module, start in ALLOWED
            ):
                found.append(repr(text))
        name = (
            node.id
            if isinstance(node, ast.Name)
            else node.attr
            if isinstance(node, ast.Attribute)
            else node.name
            if isinstance(node, ast.ClassDef | ast.FunctionDef)
            else ""
        )
        if identifier.search(name):
            found.append(name)
        modules = []
        if isinstance(node, ast.ImportFrom) and node.module:
            modules = [node.module, *(f"{node.module}.{a.name}" for a in node.names)]
        elif isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        found += [
            f"import {module}"
            for module in modules
            if any(module == p or module.startswith(f"{p}.") for p in packages.values())
        ]
    return sorted(set(found))


def test_no_module_outside_a_kinds_folder_names_a_kind():
    folders = {PACKAGE.joinpath(*package.split(".")[1:]) for package in _kind_packages().values()}
    named = {
        path.relative_to(PACKAGE).as_posix(): found
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(folder in path.parents for folder in folders) and (found := names_of_kinds(path))
    }
    assert named == {}
