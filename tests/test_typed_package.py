"""Typed once installed: the wheel carries ``py.typed`` (PEP 561), so mypy reads trainjobs'
annotations in a user's program, in a virtualenv of its own with the wheel installed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REPO

USER_PROGRAM = """\
from trainjobs import PyTorchJob, PyTorchJobSpec, ReplicaSpec, RunPolicy

master = ReplicaSpec(replicas=1, restart_polcy="OnFailure")
worker = ReplicaSpec(replicas=2, restart_policy="OnFaliure")
replicas = {"Master": master, "Worker": worker}
spec = PyTorchJobSpec(run_policy=RunPolicy(clean_pod_policy="Runing"), pytorch_replica_specs=replicas)
PyTorchJob("mnist", spec)
"""

# A user's own mypy settings, as the project's are: pulumi_aws (an extra; the GPU pool's
# types) takes minutes to analyse and is read as Any.
USER_MYPY_CONFIG = """\
[mypy]
[mypy-pulumi_aws.*]
follow_imports = skip
ignore_missing_imports = True
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel of the checkout's sources, built from a copy of them: setuptools keeps what
    it built in the source tree's build/ and would package a file deleted since."""
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "components", source / "components", ignore=shutil.ignore_patterns("__pycache__")
    )
    (source / "trainjobs").symlink_to("components")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--wheel-dir", str(out), str(source)),
        ],
        check=True,
        capture_output=True,
    )
    (built,) = out.glob("trainjobs-*.whl")
    return built


def test_the_wheel_marks_the_package_typed(wheel: Path) -> None:
    assert "trainjobs/py.typed" in zipfile.ZipFile(wheel).namelist()


def outside_the_checkout() -> dict[str, str]:
    """The environment without PYTHONPATH, which may name the checkout."""
    return {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}


def new_virtualenv(path: Path, wheel: Path) -> Path:
    """A virtualenv with the wheel installed and nothing else of trainjobs: its dependencies
    come from this interpreter's site-packages on a .pth (a directory named by a .pth is only
    put on the path: its own .pth files, the editable install of the checkout among them, are
    not run)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    python = path / "bin" / "python"
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet"),
            *("--no-deps", "--no-index", str(wheel)),
        ],
        env=outside_the_checkout(),
        check=True,
        capture_output=True,
    )
    site = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    Path(site, "dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    return python


def test_mypy_on_a_user_program_with_the_installed_wheel_flags_misspelled_keywords_and_policies(
    wheel: Path, tmp_path: Path
) -> None:
    python = new_virtualenv(tmp_path / "venv", wheel)
    program = tmp_path / "program"
    program.mkdir()
    (program / "__main__.py").write_text(USER_PROGRAM)
    (program / "mypy.ini").write_text(USER_MYPY_CONFIG)
    where = subprocess.run(
        [str(python), "-c", "import trainjobs; print(trainjobs.__file__)"],
        cwd=program,
        env=outside_the_checkout(),
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    assert where.startswith(str(tmp_path / "venv" / "lib"))

    done = subprocess.run(
        [str(python), "-m", "mypy", "--cache-dir", str(tmp_path / "cache"), "__main__.py"],
        cwd=program,
        env=outside_the_checkout(),
        capture_output=True,
        text=True,
    )
    assert (done.returncode, done.stdout.splitlines()) == (
        1,
        [
            '__main__.py:3: error: Unexpected keyword argument "restart_polcy" for '
            '"ReplicaSpec"; did you mean "restart_policy"?  [call-arg]',
            '__main__.py:4: error: Argument "restart_policy" to "ReplicaSpec" has incompatible '
            "type \"Literal['OnFaliure']\"; expected \"Literal['Always', 'OnFailure', 'Never', "
            "'ExitCode'] | None\"  [arg-type]",
            '__main__.py:6: error: Argument "clean_pod_policy" to "RunPolicy" has incompatible '
            "type \"Literal['Runing']\"; expected \"Literal['None', 'Running', 'All'] | None\"  "
            "[arg-type]",
            "Found 3 errors in 1 file (checked 1 source file)",
        ],
    )


def test_kubeflows_enumerations_are_literals_for_the_type_checker(tmp_path: Path) -> None:
    program = tmp_path / "mpi.py"
    program.write_text(
        "from trainjobs import MPIJobSpec\n\n"
        'MPIJobSpec(mpi_implementation="OpenMpi", launcher_creation_policy="AtStart")\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), str(program)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert [line.rsplit("/", 1)[-1] for line in done.stdout.splitlines()] == [
        'mpi.py:3: error: Argument "mpi_implementation" to "MPIJobSpecV2Beta1" has incompatible '
        "type \"Literal['OpenMpi']\"; expected \"Literal['OpenMPI', 'Intel', 'MPICH'] | None\"  "
        "[arg-type]",
        'mpi.py:3: error: Argument "launcher_creation_policy" to "MPIJobSpecV2Beta1" has '
        "incompatible type \"Literal['AtStart']\"; expected \"Literal['AtStartup', "
        "'WaitForWorkersReady'] | None\"  [arg-type]",
        "Found 2 errors in 1 file (checked 1 source file)",
    ]
