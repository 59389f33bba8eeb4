"""How large a job may be: pods per job, MPI slots per pod, counts that fit their API types."""

from __future__ import annotations

import re

from trainjobs.core.errors import Problem

INT32_MAX = 2**31 - 1
"""Kubeflow's replica counts and slots are int32 fields: the API server refuses more."""
MAX_PODS = 1000
"""Pods in one job. Every pod gets its own objects and environment written out (a TFJob's
TF_CONFIG lists every pod, so its size grows with the square of the count); above this a
job takes minutes and gigabytes to render, so it is refused at once instead."""
_COUNT = re.compile("[0-9]{1,18}")
"""ASCII digits only, few enough for any int64 (every count here is bounded far lower)."""
_SPLIT = (
    f"a job may have at most {MAX_PODS} pods (each pod's objects and environment are written "
    "out); split it into smaller jobs"
)


def parse_count(text: str) -> int | None:
    """``text`` as a whole number when it is ASCII decimal digits only, else None.

    ``str.isdigit`` also takes superscripts and other scripts' digits (``'\u00b2'``, which
    ``int`` then refuses with a ValueError) and ``int`` takes signs, spaces, underscores and
    fullwidth digits: a count read from a string is parsed here instead."""
    return int(text) if _COUNT.fullmatch(text) else None


def replicas_problem(value: int, path: str) -> Problem | None:
    """A replica count above :data:`MAX_PODS` (checked before anything is built per pod)."""
    if value <= MAX_PODS:
        return None
    return Problem(path, f"must be at most {MAX_PODS} (got {value}): {_SPLIT}")


def total_pods_problem(counts: list[int], path: str) -> Problem | None:
    """Replica types that together exceed :data:`MAX_PODS`."""
    total = sum(counts)
    if total <= MAX_PODS:
        return None
    return Problem(path, f"{total} pods in all: {_SPLIT}")
