"""Shared test helpers: the repository root, a minimal valid job, schema validation."""

from __future__ import annotations

import copy
import gzip
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.image_builds import MARKER, wait_if_building
from trainjobs.core.jobset import child_jobs
from trainjobs.engines.registry import available_engines
from trainjobs.images.builder import cpu_images
from trainjobs.local.ledger import STATE_ENV

REPO = Path(__file__).resolve().parent.parent
MINIMUM_KUBERNETES = "1.30"
"""The oldest Kubernetes trainjobs supports (docs/cluster.md, "On a real cluster")."""
# Kubernetes versions every manifest must validate against: the oldest we support and the
# newest the installed schemas know.
KUBERNETES_VERSIONS = (f"{MINIMUM_KUBERNETES}.0", kubernetes_validate.utils.latest_version())

JOB_FIELDS_OFF_AT_MINIMUM = {
    "successPolicy": "alpha and off in 1.30 (JobSuccessPolicy: beta, on, in 1.31; GA 1.33)",
    "managedBy": "alpha and off in 1.30 (JobManagedBy: beta, on, in 1.32)",
}
"""batch/v1 Job fields the schema of the minimum version knows but whose feature gate is off
by default there: the API server drops them, so no manifest may depend on them."""

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


SERIAL = (
    "tests/local/",
    "tests/engines/test_engines.py",
    "tests/images/test_build.py",
    "tests/kinds/chainer/test_mpi_plumbing.py",
    "tests/test_docs.py::test_every_getting_started_command_runs_as_written",
    "tests/test_hostile_input.py::test_every_command_answers_hostile_arguments_in_one_line",
)
"""Tests that start pods (network namespaces, processes as root), containers or MPI ranks.
`make test` runs the suite on every core with pytest-xdist (``--dist loadgroup``); these form
one group that a single worker runs one after another, as they would run alone, while the
pure tests spread over the workers (:func:`pytest_xdist_make_scheduler`)."""


FRAMEWORKS = "frameworks"
"""The marker of tests that run a framework beyond the core's Chainer (PyTorch, TensorFlow,
XGBoost, PaddlePaddle, JAX): they need its extra (`make setup-all`) or its image. `make test`
leaves them out (`-m "not frameworks"`) to stay a quick gate on a fresh machine, and builds
only :func:`core_images`; `make test-frameworks` runs them, and CI runs both. A test needing
an image beyond the core's gets the marker from its ``needs_images``; a test running such an
example as processes says so itself."""


def core_images() -> list[str]:
    """The CPU images whose local runs need the core install alone (`make setup`)."""
    return [image.reference for image in cpu_images() if image.local_setup == "make setup"]


ENGINE = ("tests/engines/test_engines.py", "tests/images/test_build.py", "tests/local/container/")
"""The serial tests that call the container engine."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    core = set(core_images())
    for item in items:
        if item.nodeid.startswith(SERIAL):
            item.add_marker(pytest.mark.serial)
        images = item.get_closest_marker(MARKER)
        if images is not None and not core.issuperset(images.args or ["every image"]):
            item.add_marker(FRAMEWORKS)
    # The serial group comes first, so that one worker starts on it at once (pytest-xdist
    # hands out groups in the order of their first test; the group is the longest, and the
    # pure tests fill the other worker meanwhile). Its worker runs what needs no engine
    # first, then the engine's tests, each once the image it needs was built: `make test`
    # builds them beside the suite in this order (tests/image_builds.py), and even a test
    # that runs no image waits while a build holds the engine's storage lock (70 s once). A
    # stable sort keeps the rest in collection order.
    items.sort(
        key=lambda item: (
            not item.nodeid.startswith(SERIAL),
            item.nodeid.startswith(ENGINE),
            _build_order(item),
        )
    )


def _build_order(item: pytest.Item) -> int:
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return 0
    order = [image.reference for image in cpu_images()]
    return 1 + max((order.index(name) for name in marker.args), default=len(order))


@cache
def _have_engine() -> bool:
    return bool(available_engines())


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test marked ``needs_images(REF...)`` (none named: every CPU image) skips where no
    engine exists, and otherwise waits for the images `make test` builds beside the suite;
    a hook, not a fixture, so it comes before module-scoped fixtures that run a job."""
    marker = item.get_closest_marker(MARKER)
    if marker is None:
        return
    if not _have_engine():
        pytest.skip("needs podman or docker (as root: make engine installs podman)")
    wait_if_building(marker.args)


@pytest.hookimpl(tryfirst=True, optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` with :data:`SERIAL` as its one group. pytest-xdist 3.8 groups
    by renaming test ids (``<id>@<group>``), which pytest 9 no longer lets a plugin do, so
    each serial test would land on any worker; the scheduler groups them itself instead."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SerialGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return "serial" if nodeid.startswith(SERIAL) else nodeid

    return SerialGroup(config, log)


@pytest.fixture(scope="session", autouse=True)
def private_run_records(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Local runs of this test session keep their ledgers apart (the runs of other sessions
    on the machine are theirs to clean up); subprocesses inherit the setting."""
    directory = tmp_path_factory.mktemp("run-records")
    directory.chmod(0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv(STATE_ENV, str(directory))
        yield directory


@pytest.fixture(scope="session", autouse=True)
def private_answer_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Answers cached by this session's commands (:mod:`trainjobs.core.answer_cache`) stay
    in the session, not in the home of whoever runs it; subprocesses inherit the setting."""
    directory = tmp_path_factory.mktemp("answer-cache")
    directory.chmod(0o700)
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TRAINJOBS_CACHE_DIR", str(directory))
        yield directory


@contextmanager
def small_tmpfs(mount_point: Path, read_only: bool = False) -> Iterator[Path]:
    """A 64 KiB tmpfs at ``mount_point`` (root only; the test skips where it cannot mount)."""
    mount_point.mkdir()
    options = "ro,size=64k" if read_only else "size=64k"
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(mount_point)],
        capture_output=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=False)


@pytest.fixture
def job() -> dict[str, Any]:
    """A fresh copy of a minimal valid distributed ChainerJob (master + 2 workers)."""
    return copy.deepcopy(MINIMAL_JOB)


CRDS = REPO / "tests" / "fixtures" / "crds"
CRD_FILES = {
    ("jobset.x-k8s.io/v1alpha2", "JobSet"): "jobset.x-k8s.io_jobsets.yaml.gz",
    ("scheduling.volcano.sh/v1beta1", "PodGroup"): "volcano_scheduling.volcano.sh_podgroups.yaml",
    ("scheduling.x-k8s.io/v1alpha1", "PodGroup"): (
        "scheduler-plugins_scheduling.x-k8s.io_podgroups.yaml"
    ),
}


@cache
def crd_schema(api_version: str, kind: str) -> dict[str, Any]:
    """The openAPIV3Schema of a custom resource's version, from its CRD (tests/fixtures/crds)."""
    path = CRDS / CRD_FILES[(api_version, kind)]
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    crd = yaml.safe_load(text)
    version = api_version.rsplit("/", 1)[1]
    served = next(v for v in crd["spec"]["versions"] if v["name"] == version)
    # Strict at the top, as kubernetes-validate's strict schemas are: no unknown fields.
    return {**served["schema"]["openAPIV3Schema"], "additionalProperties": False}


def schema_problems(manifest: dict[str, Any]) -> list[str]:
    """First line of each strict schema violation, per Kubernetes version (empty if valid).

    A custom resource is checked against its CRD; a JobSet's child Jobs, as its controller
    makes them, against Kubernetes' own strict schemas too."""
    key = (manifest.get("apiVersion"), manifest.get("kind"))
    if key in CRD_FILES:
        name = f"{manifest['kind']}/{manifest['metadata']['name']}"
        errors = jsonschema.Draft7Validator(crd_schema(*key)).iter_errors(manifest)
        problems = sorted(f"{name}: {error.message}" for error in errors)
        if manifest["kind"] == "JobSet" and not problems:
            problems += [p for job in child_jobs(manifest) for p in schema_problems(job)]
        return problems
    problems = []
    for version in KUBERNETES_VERSIONS:
        try:
            kubernetes_validate.validate(manifest, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            name = f"{manifest.get('kind')}/{manifest.get('metadata', {}).get('name')}"
            problems.append(f"{version} {name}: {str(error).splitlines()[0]}")
    return problems
