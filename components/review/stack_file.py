"""A stack file (``Pulumi.<stack>.yaml``) read back: its settings, secure ones encrypted."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainjobs.core.documents import load_mapping
from trainjobs.core.errors import UserError


def stack_settings(path: Path) -> dict[str, Any]:
    """The ``config`` section of a stack file, read within the bounds of any YAML input."""
    settings = load_mapping(path).get("config") or {}
    if not isinstance(settings, dict) or not all(isinstance(key, str) for key in settings):
        raise UserError(f"{path}: config: must be a mapping of setting names to values")
    return settings
