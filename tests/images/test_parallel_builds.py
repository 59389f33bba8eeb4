"""`trainjobs images build --jobs N`: the first image alone, then up to N builds at once.

The engine here records the builds it is asked for and holds each one until the builds the
test expects to overlap have all started, so overlap is shown, not timed."""

from __future__ import annotations

import threading

import pytest

from trainjobs.cli import main
from trainjobs.engines.engine import BuildRequest, EngineError
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.builder import cpu_images
from trainjobs.images.local_images import build_images

IMAGES = cpu_images()


class RecordingEngine:
    """Builds nothing: each build after the first waits until ``overlap`` builds run at once,
    or every build has started (or 10 s, and the test fails on what it then saw)."""

    name = "podman"

    def __init__(self, overlap: int, failing: str | None = None) -> None:
        self.overlap = overlap
        self.failing = failing
        self.lock = threading.Lock()
        self.running: list[str] = []
        self.events: list[tuple[str, str]] = []
        self.most_at_once = 0
        self.all_started = threading.Condition(self.lock)

    def image_exists(self, reference: str) -> bool:
        return False

    def image_label(self, reference: str, key: str) -> None:
        return None

    def forget_images(self) -> None:
        pass

    def build(self, request: BuildRequest, output) -> None:
        with self.lock:
            self.events.append(("start", request.tag))
            self.running.append(request.tag)
            self.most_at_once = max(self.most_at_once, len(self.running))
            self.all_started.notify_all()
            started = len([event for event in self.events if event[0] == "start"])
            self.all_started.wait_for(
                lambda: (
                    request.tag == IMAGES[0].reference
                    or self.most_at_once >= self.overlap
                    or started == len(IMAGES)
                ),
                timeout=10,
            )
            self.running.remove(request.tag)
            self.events.append(("end", request.tag))
        if request.tag == self.failing:
            raise EngineError("`podman build` failed (exit 1): no space left on device")


def test_the_first_image_is_built_alone_then_two_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr("trainjobs.images.builder.LOG_DIR", tmp_path)
    engine = RecordingEngine(overlap=2)

    built = build_images(engine, IMAGES, BuildSettings(), lambda line: None, jobs=2)

    assert built == [image.reference for image in IMAGES]
    first = IMAGES[0].reference
    assert engine.events[:2] == [("start", first), ("end", first)]
    assert engine.most_at_once == 2


def test_one_job_builds_one_image_after_another(tmp_path, monkeypatch):
    monkeypatch.setattr("trainjobs.images.builder.LOG_DIR", tmp_path)
    engine = RecordingEngine(overlap=1)

    build_images(engine, IMAGES, BuildSettings(), lambda line: None)

    assert engine.events == [
        (event, image.reference) for image in IMAGES for event in ("start", "end")
    ]


def test_a_failed_build_among_parallel_ones_is_raised_after_the_others_ended(tmp_path, monkeypatch):
    monkeypatch.setattr("trainjobs.images.builder.LOG_DIR", tmp_path)
    failing = IMAGES[1].reference
    engine = RecordingEngine(overlap=2, failing=failing)

    with pytest.raises(EngineError, match=f"building {failing} failed"):
        build_images(engine, IMAGES, BuildSettings(), lambda line: None, jobs=2)

    ended = [tag for event, tag in engine.events if event == "end"]
    assert sorted(ended) == sorted(image.reference for image in IMAGES)


@pytest.mark.parametrize("value", ["0", "17", "two", "²", "-1"])
def test_a_jobs_count_that_is_no_count_of_builds_exits_2_naming_it(value, capsys):
    with pytest.raises(SystemExit) as exited:
        main(["images", "build", "--jobs", value])

    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"trainjobs images build: error: argument --jobs: {value!r} is no number of builds "
        "from 1 to 16"
    )
