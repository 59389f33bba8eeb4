"""Image references: whether one names a version tag, and whether it is pinned by digest."""

from __future__ import annotations

import re

DIGEST_REFERENCE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def is_digest_pinned(reference: str) -> bool:
    """Whether ``reference`` names one image by content (``<repository>@sha256:<64 hex>``)."""
    return DIGEST_REFERENCE.fullmatch(reference) is not None


def has_version_tag(reference: str) -> bool:
    last = reference.rpartition("/")[2]
    return ":" in last and last.split(":", 1)[1] != "latest"
