"""Tests wait at test time for the images `make test` builds beside the suite, in build order."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from tests.image_builds import collected_needs, status_path, wait_for_images
from trainjobs.images.builder import cpu_images

CHAINER = "trainjobs/chainer:7.8.1"
CHAINERMN = "trainjobs/chainermn:7.8.1"


def write_later(path: Path, text: str, delay_s: float) -> threading.Thread:
    def write() -> None:
        time.sleep(delay_s)
        with path.open("a", encoding="utf-8") as file:
            file.write(text)

    thread = threading.Thread(target=write)
    thread.start()
    return thread


def test_a_test_starts_once_its_image_is_built_while_the_next_one_builds(tmp_path: Path):
    log = tmp_path / "build.log"
    log.write_text(f"[images] {CHAINER}: building with podman\n", encoding="utf-8")
    writer = write_later(log, f"[images] {CHAINER}: built in 93s (log: x)\n", 0.3)
    started = time.monotonic()

    wait_for_images((CHAINER,), log, poll_s=0.05)

    assert time.monotonic() - started >= 0.3
    assert not status_path(log).exists()
    writer.join()


def test_an_image_already_up_to_date_is_ready(tmp_path: Path):
    log = tmp_path / "build.log"
    log.write_text(
        f"[images] {CHAINER}: up to date (recipe 0123456789ab)\n"
        f"[images] {CHAINERMN}: built in 301s (log: y)\n",
        encoding="utf-8",
    )
    wait_for_images((CHAINER, CHAINERMN), log, poll_s=0.05)


def test_a_test_of_every_image_waits_for_the_build_to_end(tmp_path: Path):
    log = tmp_path / "build.log"
    log.write_text(f"[images] {CHAINER}: built in 93s (log: x)\n", encoding="utf-8")
    writer = write_later(status_path(log), "0\n", 0.3)
    started = time.monotonic()

    wait_for_images((), log, poll_s=0.05)

    assert time.monotonic() - started >= 0.3
    writer.join()


def test_a_failed_build_fails_the_test_with_the_end_of_its_log(tmp_path: Path):
    log = tmp_path / "build.log"
    lines = [f"line {n}" for n in range(20)] + ["error: building trainjobs/chainermn failed"]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    status_path(log).write_text("1\n", encoding="utf-8")

    with pytest.raises(pytest.fail.Exception) as failed:
        wait_for_images((CHAINERMN,), log, poll_s=0.05)

    assert str(failed.value) == "\n".join(
        [f"the image build beside the suite failed (exit 1); the end of {log}:", *lines[-15:]]
    )


def test_the_serial_group_runs_what_needs_no_image_first_then_in_build_order(tmp_path: Path):
    modules = ["tests/local/container/test_runtime.py", "tests/images/test_build.py"]
    collected = [[test_id, needs] for test_id, needs in collected_needs(tmp_path, *modules).items()]
    order = [image.reference for image in cpu_images()]

    def position(needs: str) -> int:
        """-1 for no image, len(order) for every image, else the last one named."""
        if needs in ("-", "*"):
            return -1 if needs == "-" else len(order)
        return max(order.index(reference) for reference in needs.split(","))

    positions = [position(needs) for _, needs in collected]
    assert positions == sorted(positions)
    # Only test_build's tests of settings and messages need no image; every container run does.
    assert {test_id.split("::")[0] for test_id, needs in collected if needs == "-"} == {
        "tests/images/test_build.py"
    }
    assert next(needs for _, needs in collected if needs != "-") == CHAINER
    last = order[-1]
    assert collected[-1] == [
        "tests/images/test_build.py::test_no_build_setting_reaches_an_images_history_or_"
        f"configuration[{last}]",
        last,
    ]
