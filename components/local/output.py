"""What a local run shows on the terminal: trainjobs' lines and the pods' lines but known noise.

With ``--quiet`` none of the pods' lines are shown. The log files keep every line.

Known noise is output that says nothing about the job on this machine and that its source
cannot be told to drop from here:

- TensorFlow's C++ info and warning logging (server start, each session's options as a
  multi-line protobuf dump): TensorFlow 2.20 writes most of it through absl logging, which
  ``TF_CPP_MIN_LOG_LEVEL`` does not govern and no environment variable turns off;
- PyTorch's ``[c10d] The hostname of the client socket cannot be retrieved``, should a
  pod's peer have no name (local pods' hosts files give every peer one);
- Open MPI's ``plm:rsh: Warning: setpgid(...) failed`` on a busy machine (see the README).
"""

from __future__ import annotations

import re
from typing import Protocol


class TextStream(Protocol):
    """Where a run's output goes: the terminal, a pipe, or a :class:`TerminalFilter` of one."""

    def write(self, text: str, /) -> int: ...

    def flush(self) -> None: ...

    def isatty(self) -> bool: ...


RUNTIME_PREFIX = "[trainjobs] "
POD_LINE = re.compile(r"\[(?P<pod>[a-z0-9.-]+)\] (?P<text>.*)", re.S)
NOISE = re.compile(
    r"(?:"
    # TensorFlow's C++ (tsl) logging: "2026-11-25 10:00:00.123456: I tensorflow/...cc:42] ..."
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+\.cc:\d+\] "
    # absl logging of XLA and gRPC: "I0000 00:00:1764064800.123456   42 file.cc:42] ..."
    r"|[IW]\d{4} \d\d:\d\d:\d+\.\d+ +\d+ \S+\.cc:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
    # PyTorch's c10d, where a peer's address has no name (the hosts files now give one)
    r"|\[W\d{4} [\d:.]+ socket\.cpp:\d+\] \[c10d\] The hostname of the client socket "
    r"cannot be retrieved"
    r"|\[[a-z0-9.-]+:\d+\] plm:rsh: Warning: setpgid\(\d+,\d+\) failed in parent"
    r")"
)
# The rest of a multi-line log record (a protobuf text dump) after a noise line.
CONTINUATION = re.compile(r"(?:\s.*|\}|[a-z_]+ \{|[a-z_]+: \S.*|)")


class TerminalFilter:
    """A text stream that passes on whole lines that are to be shown."""

    def __init__(self, stream: TextStream, quiet: bool = False, noise: bool = True) -> None:
        self.stream = stream
        self.quiet = quiet
        self.noise = noise
        self._partial = ""
        self._in_noise: set[str] = set()
        """Pods whose last line was noise: their protobuf continuation lines are noise too."""

    def shown(self, line: str) -> bool:
        if line.startswith(RUNTIME_PREFIX):
            return True
        if self.quiet:
            return False
        match = POD_LINE.fullmatch(line)
        if not self.noise or match is None:
            return True
        pod, text = match["pod"], match["text"]
        if NOISE.match(text) or (pod in self._in_noise and CONTINUATION.fullmatch(text)):
            self._in_noise.add(pod)
            return False
        self._in_noise.discard(pod)
        return True

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        shown = "".join(f"{line}\n" for line in lines if self.shown(line))
        if shown:
            self.stream.write(shown)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        """The wrapped stream's: pod output is escaped on a terminal, filtered or not."""
        return self.stream.isatty()
