"""The images a test runs, waited for at test time while `make test` builds them beside the suite.

`make test` starts ``trainjobs images build`` in the background as soon as the engine is set
up and runs the suite meanwhile (building the CPU images takes minutes); it names the build's
log in :data:`LOG_ENV` and writes the build's exit status to the log's path + ``.rc`` when it
ends. A test marked ``needs_images`` waits here for the images it names (none named: every
image of the build) before it starts, never at collection (that would block collection or
skip). The build says ``[images] REF: built in ...`` or ``[images] REF: up to date ...`` as
each image is ready (:mod:`trainjobs.images.builder`), in about
:func:`~trainjobs.images.builder.cpu_images` order (the first alone, then two at a time), so a
test needing the first image starts long before the last one is built. Without :data:`LOG_ENV` (pytest run by hand) nothing is
waited for: a container run builds the declared images it misses itself.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

LOG_ENV = "TRAINJOBS_TEST_IMAGE_LOG"
MARKER = "needs_images"
TIMEOUT_S = 3600.0
"""Longer than any build takes; past it the wait fails instead of hanging the suite."""


def status_path(log: Path) -> Path:
    return log.with_name(log.name + ".rc")


def ready(references: tuple[str, ...], log: Path) -> bool:
    """Whether the build's log says each of ``references`` is ready."""
    text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return bool(references) and all(
        f"[images] {reference}: built in " in text or f"[images] {reference}: up to date" in text
        for reference in references
    )


def wait_for_images(references: tuple[str, ...], log: Path, poll_s: float = 1.0) -> None:
    """Return once the build made ``references`` (or ended well); fail if it failed."""
    deadline = time.monotonic() + TIMEOUT_S
    while not ready(references, log):
        status = status_path(log)
        if status.is_file():
            code = status.read_text(encoding="utf-8").strip()
            if code == "0":
                return
            tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-15:]
            pytest.fail(
                f"the image build beside the suite failed (exit {code}); the end of {log}:\n"
                + "\n".join(tail),
                pytrace=False,
            )
        if time.monotonic() > deadline:
            pytest.fail(f"the image build beside the suite ran over {TIMEOUT_S:.0f} s: see {log}")
        time.sleep(poll_s)


def wait_if_building(references: tuple[str, ...]) -> None:
    """Wait for ``references`` where `make test` builds images beside the suite."""
    log = os.environ.get(LOG_ENV)
    if log:
        wait_for_images(references, Path(log))


_PROBE = """
def pytest_collection_finish(session):
    for item in session.items:
        marker = item.get_closest_marker("needs_images")
        needs = "-" if marker is None else ",".join(marker.args) or "*"
        print(f"collected {item.nodeid}\\t{needs}")
"""


def collected_needs(probe_dir: Path, *pytest_args: str) -> dict[str, str]:
    """Test id -> the images it needs ("-" none, "*" every one), in the order
    ``pytest --collect-only *pytest_args`` lists the tests (the probe plugin is written to
    ``probe_dir``)."""
    repo = Path(__file__).resolve().parent.parent
    (probe_dir / "needs_probe.py").write_text(_PROBE, encoding="utf-8")
    listed = subprocess.run(
        [
            *(sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "needs_probe"),
            *("-p", "no:cacheprovider", *pytest_args),
        ],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(probe_dir), str(repo)])},
    ).stdout.splitlines()
    pairs = (line.removeprefix("collected ").split("\t") for line in listed if "\t" in line)
    return {test_id: needs for test_id, needs in pairs}
