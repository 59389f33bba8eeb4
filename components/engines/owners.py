"""Which trainjobs process owns an engine object, and whether that process still lives.

A token ``<boot id>:<pid>:<start time>`` names one process of one boot exactly: a PID is
reused only by a process with another start time, and objects that outlive a reboot (podman
keeps stopped pods and networks) carry another boot's id. An object whose owner is gone was
left by a run that was killed (SIGKILL, a crash, a reboot) and may be removed.
"""

from __future__ import annotations

import os
from pathlib import Path

from trainjobs.core.bounds import parse_count

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def _boot_id() -> str:
    return BOOT_ID.read_text(encoding="ascii").strip()


def start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat (after the command name, which may hold spaces)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def owner_token(pid: int | None = None) -> str:
    pid = os.getpid() if pid is None else pid
    return f"{_boot_id()}:{pid}:{start_time(pid)}"


def owner_alive(token: str) -> bool:
    boot, _, rest = token.partition(":")
    pid, _, start = rest.partition(":")
    number = parse_count(pid)  # str.isdigit takes '\u00b2', which int refuses
    if boot != _boot_id() or number is None:
        return False
    return start_time(number) == start
