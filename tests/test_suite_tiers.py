"""`make test` leaves out the tests that train frameworks beyond the core's, and builds only
the images its own tests run; `make test-frameworks` runs the rest (tests/conftest.py)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO, core_images
from tests.image_builds import collected_needs
from trainjobs.images.builder import cpu_images

MODULES = (
    "tests/local/container/test_runtime.py",
    "tests/local/container/test_xgboost_paddle_jax.py",
    "tests/images/test_build.py",
    "tests/local/test_replicas.py",
)


def collected(tmp_path: Path, markers: str) -> dict[str, str]:
    """Test id -> the images it needs ("-" none, "*" every one), as `pytest -m MARKERS` picks."""
    return collected_needs(tmp_path, "-m", markers, *MODULES)


def test_make_test_builds_exactly_the_images_of_the_core():
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    listed = re.search(r"^CORE_IMAGES := (.*)$", makefile, re.MULTILINE)
    assert listed is not None
    core = ["trainjobs/chainer:7.8.1", "trainjobs/chainermn:7.8.1"]
    assert listed.group(1).split() == core_images() == core
    assert "\ntest: SUITE_IMAGES := $(CORE_IMAGES)\n" in makefile
    assert "\ntest: SUITE_MARKERS := not frameworks\n" in makefile
    assert "\ntest-frameworks: SUITE_MARKERS := frameworks\n" in makefile


def test_the_gate_runs_only_core_images_and_the_other_tier_each_framework(tmp_path: Path):
    gate = collected(tmp_path, "not frameworks")
    frameworks = collected(tmp_path, "frameworks")
    core = set(core_images())
    others = {image.reference for image in cpu_images()} - core

    assert not gate.keys() & frameworks.keys()
    assert {needs for needs in gate.values() if needs != "-"} <= core
    # Every image beyond the core's is run by the frameworks tier, and only there.
    named = {image for needs in frameworks.values() for image in needs.split(",")}
    assert others <= named
    # The process runs of the PyTorch and TensorFlow examples are in that tier too; the
    # shell-script replica tests, which need the core alone, stay in the gate.
    assert "tests/local/test_replicas.py::test_the_torchrun_example_trains_over_two_nodes" in (
        frameworks
    )
    assert (
        "tests/local/test_replicas.py::test_exit_code_1_in_a_worker_fails_the_whole_job_at_once"
        "_without_retry"
    ) in gate


def collection_order(tmp_path: Path, *paths: str) -> list[str]:
    """The module of each test ``pytest --collect-only`` lists, in its order."""
    return [test_id.split("::")[0] for test_id in collected_needs(tmp_path, *paths)]


def test_the_serial_group_is_collected_first_so_a_worker_starts_on_it_at_once(tmp_path: Path):
    modules = collection_order(tmp_path, "tests/test_layout.py", "tests/local/test_history.py")
    history = modules.count("tests/local/test_history.py")
    assert history > 0 and modules.count("tests/test_layout.py") > 0
    assert set(modules[:history]) == {"tests/local/test_history.py"}


def test_the_serial_worker_reaches_the_engine_after_the_process_runs(tmp_path: Path):
    """While `make test` builds images beside the suite, the engine's storage lock stalls
    even a test that runs no image: the serial worker gets there last."""
    modules = collection_order(
        tmp_path, "tests/engines/test_engines.py", "tests/local/test_history.py"
    )
    history = modules.count("tests/local/test_history.py")
    assert history > 0 and modules.count("tests/engines/test_engines.py") > 0
    assert set(modules[:history]) == {"tests/local/test_history.py"}
