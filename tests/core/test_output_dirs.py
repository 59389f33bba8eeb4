"""Output directories that cannot be one (`--out`, `--previews`): one line, no traceback,
exit 2 for a path that is wrong, 1 when the machine refuses."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO, small_tmpfs
from trainjobs.cli import main

EXAMPLE = REPO / "jobs" / "chainer-mnist.yaml"


def render(out: Path) -> int:
    return main(["render", str(EXAMPLE), "--out", str(out)])


def test_render_into_a_dangling_symlink_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.symlink_to(tmp_path / "nowhere")
    assert render(out) == 2
    assert (
        capsys.readouterr().err
        == f"error: --out {out}: a symbolic link to nothing; give a directory\n"
    )


def test_render_into_a_file_is_refused(tmp_path, capsys):
    out = tmp_path / "out"
    out.write_text("x", encoding="utf-8")
    assert render(out) == 2
    assert capsys.readouterr().err == f"error: --out {out}: exists and is not a directory\n"


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    with small_tmpfs(tmp_path / "ro", read_only=True) as mount_point:
        yield mount_point


def test_render_onto_a_read_only_mount_fails_in_one_line(read_only, capsys):
    out = read_only / "out"
    assert render(out) == 1
    assert capsys.readouterr().err == f"error: --out {out}: Read-only file system\n"


def test_preview_onto_a_read_only_mount_fails_in_one_line(read_only, capsys):
    out = read_only / "out"
    code = main(["preview", "--stack", "chainer-mnist", "--project", str(REPO), "--out", str(out)])
    assert code == 1
    assert capsys.readouterr().err == f"error: --out {out}: Read-only file system\n"


def test_render_to_standard_output_is_one_yaml_stream_of_the_same_objects(tmp_path, capsys):
    job = str(REPO / "jobs" / "chainermn-mnist.yaml")
    assert main(["render", job, "--out", str(tmp_path / "files")]) == 0
    written = [yaml.safe_load(Path(line).read_text()) for line in capsys.readouterr().out.split()]
    assert main(["render", job, "--out", "-"]) == 0
    streamed = capsys.readouterr().out
    assert list(yaml.safe_load_all(streamed)) == written
    assert not (Path.cwd() / "-").exists()
