"""Durations as people write them in stack settings and flags (24h, 90m, 30s, seconds)."""

from __future__ import annotations

import math
import re

from trainjobs.core.errors import UserError

_DURATION = re.compile(r"(?:(?P<h>\d+)h)?(?:(?P<m>\d+)m)?(?:(?P<s>\d+(?:\.\d+)?)s)?")


def parse_duration(value: str | float, *, key: str, fix: str) -> float:
    """Seconds from ``24h``, ``90m``, ``30s``, ``1h30m`` or a plain number of seconds.

    ``key`` names the setting and ``fix`` the command that sets it right, so a typo in a
    stack file or a flag gives one message that says where and how to fix it.
    """
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if re.fullmatch(r"\d+(?:\.\d+)?", text):
            seconds = float(text)
        elif text and (match := _DURATION.fullmatch(text)):
            seconds = (
                int(match["h"] or 0) * 3600 + int(match["m"] or 0) * 60 + float(match["s"] or 0)
            )
    if seconds is None or not math.isfinite(seconds) or seconds <= 0:
        raise UserError(
            f"{key}: {value!r} is not a positive duration; use seconds (3600) or a duration "
            f"such as 24h, 90m, 30s or 1h30m, e.g. `{fix}`"
        )
    return seconds


def format_duration(seconds: float) -> str:
    """``86400`` -> ``24h``, ``5400`` -> ``1h30m``, ``0.5`` -> ``0.5s``."""
    if 0 < seconds < 1:
        return f"{seconds:.3g}s"
    total = round(seconds)
    hours, rest = divmod(total, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{unit}" for n, unit in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts) or "0s"
