"""Signals during a local run: SIGINT, SIGTERM and SIGHUP stop it through its clean-up."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: the run stops and cleans up."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


def signal_number(name: str) -> int:
    return int(signal.Signals[name]) if name in signal.Signals.__members__ else 2


Handlers = dict[int, Any]


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def install_signal_handlers() -> Handlers:
    """SIGINT, SIGTERM and SIGHUP (the terminal went away) end the run through the same
    clean-up; the default action of each would kill the runtime and strand its pods
    (main thread only: Python delivers signals there)."""
    if not in_main_thread():
        return {}
    previous: dict[int, Any] = {}
    for signum in STOP_SIGNALS:
        previous[signum] = signal.signal(signum, raise_interrupted)
    return previous


def install_cleanup_handlers(hurry_up: Callable[[], None]) -> None:
    """During the clean-up a stop signal only hurries it (no grace periods): the clean-up
    itself always runs to its end."""
    if not in_main_thread():
        return

    def hurry(signum: int, frame: FrameType | None) -> None:
        hurry_up()

    for signum in STOP_SIGNALS:
        signal.signal(signum, hurry)


def restore_signal_handlers(previous: Handlers) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
