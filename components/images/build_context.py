"""Where the images trainjobs builds come from: the repository's images/ directory."""

from __future__ import annotations

from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
"""Image files are declared relative to the repository root."""

IMAGES_DIR = REPO_ROOT / "images"
"""Build context of every image trainjobs builds: Dockerfiles and the files images carry."""
