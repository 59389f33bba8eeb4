"""The runtime's loop wakes when a container process exits, not only at its next tick."""

from __future__ import annotations

import subprocess
import time
from types import SimpleNamespace

from trainjobs.local.pods import wait_for_an_exit


def container(argv: list[str]) -> SimpleNamespace:
    """What the loop waits on: an object holding a container's process."""
    return SimpleNamespace(process=subprocess.Popen(argv))


def test_the_wait_ends_when_a_running_process_exits() -> None:
    quick, slow = container(["sleep", "0.2"]), container(["sleep", "60"])
    try:
        start = time.monotonic()
        wait_for_an_exit([slow, quick], timeout=30)
        # It returned on the exit, long before the 30 s it would otherwise have slept.
        assert time.monotonic() - start < 30
        assert quick.process.poll() == 0
        assert slow.process.poll() is None
    finally:
        slow.process.kill()
        slow.process.wait()


def test_a_process_that_already_exited_is_not_waited_on_so_the_loop_does_not_spin() -> None:
    done = container(["true"])
    done.process.wait()
    start = time.monotonic()
    wait_for_an_exit([done, SimpleNamespace(process=None)], timeout=0.3)
    # Nothing left running: it slept the whole tick instead of returning at once.
    assert time.monotonic() - start >= 0.3
