"""Reading job spec files: one YAML mapping per file, every failure a user error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from components.core.errors import Problem, SpecError


def load_file(path: str | Path) -> dict[str, Any]:
    """Read one YAML document; unreadable or non-mapping files are user errors."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise SpecError(source, [Problem("", f"cannot read file: {error.strerror}")]) from None
    try:
        documents = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        raise SpecError(source, [Problem("", f"not valid YAML: {error}")]) from None
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise SpecError(
            source, [Problem("", "expected exactly one YAML mapping (one job per file)")]
        )
    return documents[0]
