"""Writing manifests to disk: stable YAML and output directories that are safe to reuse."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainjobs.core.errors import EnvironmentFailure, UserError

# Marks a directory as trainjobs output, so a later run may clear it; any other non-empty
# directory is refused rather than overwritten.
MARKER = ".trainjobs-output"


# libyaml's emitter writes the same text about six times faster than the pure-Python one;
# rendering many jobs is dominated by it.
_SafeDumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _PlainDumper(_SafeDumper):  # type: ignore[misc, valid-type]
    """Block-style YAML without anchors; multi-line strings (scripts) as literal blocks."""

    def ignore_aliases(self, data: Any) -> bool:
        return True


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_PlainDumper.add_representer(str, _str_representer)


def dump_yaml(document: Any) -> str:
    return yaml.dump(document, Dumper=_PlainDumper, sort_keys=False, default_flow_style=False)


def prepare_output_dir(path: Path, flag: str = "--out") -> None:
    """Create `path`, or empty it if an earlier trainjobs run made it."""
    if path.is_symlink() and not path.exists():
        raise UserError(f"{flag} {path}: a symbolic link to nothing; give a directory")
    if path.exists() and not path.is_dir():
        raise UserError(f"{flag} {path}: exists and is not a directory")
    try:
        if path.exists():
            entries = list(path.iterdir())
            if entries and not (path / MARKER).exists():
                raise UserError(
                    f"{flag} {path}: directory is not empty and was not written by trainjobs; "
                    "choose a new or empty directory"
                )
            for entry in entries:
                if entry.is_file():
                    entry.unlink()
        path.mkdir(parents=True, exist_ok=True)
        (path / MARKER).write_text("written by trainjobs; safe to delete\n", encoding="utf-8")
    except OSError as error:
        raise EnvironmentFailure(f"{flag} {path}: {error.strerror}") from None


def manifest_filename(index: int, manifest: dict[str, Any], name: str | None = None) -> str:
    """``NN-Kind-name.yaml``; ``name`` (default: the object's) for an object whose name is not
    known yet (a preview)."""
    return f"{index:02d}-{manifest['kind']}-{name or manifest['metadata']['name']}.yaml"


def write_manifests(
    manifests: list[dict[str, Any]], out_dir: Path, names: list[str] | None = None
) -> list[Path]:
    """One file per object, numbered in creation order; ``names`` as
    :func:`manifest_filename`'s, one per object (default: the objects' own)."""
    written = []
    for index, manifest in enumerate(manifests, start=1):
        name = names[index - 1] if names is not None else None
        path = out_dir / manifest_filename(index, manifest, name)
        path.write_text(dump_yaml(manifest), encoding="utf-8")
        written.append(path)
    return written
