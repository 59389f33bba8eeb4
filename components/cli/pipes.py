"""Standard output whose reader may leave early, as with `trainjobs validate ... | head -1`."""

from __future__ import annotations

import contextlib
import io
import os
from typing import TextIO


class ReaderMayLeave(io.TextIOBase):
    """stdout whose reader may leave early (`| head -1`): the command goes on quietly and
    keeps its exit code, as git and kubectl end with the first line's reader gone; what it
    still prints goes to /dev/null, so no later write or the interpreter's flush fails."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor
            os.dup2(devnull, self.stream.fileno())
        os.close(devnull)
        self.stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._gone()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()
