"""What a local run shows on the terminal: trainjobs' own lines, and the pods' lines that are
not known noise (or none of the pods' lines with ``--quiet``). The log files keep every line.

Known noise is output that says nothing about the job on this machine and that its source
cannot be told to drop from here:

- TensorFlow's C++ logging at startup (oneDNN, cuda drivers absent, cpu features): the
  examples set ``TF_CPP_MIN_LOG_LEVEL``, this catches jobs that do not;
- Open MPI's ``plm:rsh: Warning: setpgid(...) failed`` on a busy machine (see the README).
"""

from __future__ import annotations

import re
from typing import IO

RUNTIME_PREFIX = "[trainjobs] "
NOISE = re.compile(
    r"\[[a-z0-9.-]+\] (?:"
    # TensorFlow's C++ (tsl) logging: "2026-11-25 10:00:00.123456: I tensorflow/...cc:42] ..."
    r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d+: [IW] \S+\.cc:\d+\] "
    # absl logging of XLA and gRPC: "I0000 00:00:1764064800.123456   42 file.cc:42] ..."
    r"|[IW]\d{4} \d\d:\d\d:\d\d\.\d+ +\d+ \S+\.cc:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
    r"|\[[a-z0-9.-]+:\d+\] plm:rsh: Warning: setpgid\(\d+,\d+\) failed in parent"
    r")"
)


class TerminalFilter:
    """A text stream that passes on whole lines that are to be shown."""

    def __init__(self, stream: IO[str], quiet: bool = False, noise: bool = True) -> None:
        self.stream = stream
        self.quiet = quiet
        self.noise = noise
        self._partial = ""

    def shown(self, line: str) -> bool:
        if line.startswith(RUNTIME_PREFIX):
            return True
        if self.quiet:
            return False
        return not (self.noise and NOISE.match(line))

    def write(self, text: str) -> int:
        lines = (self._partial + text).split("\n")
        self._partial = lines.pop()
        shown = "".join(f"{line}\n" for line in lines if self.shown(line))
        if shown:
            self.stream.write(shown)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
