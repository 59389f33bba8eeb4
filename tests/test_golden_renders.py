"""Every spec in tests/corpus and jobs/ renders byte-for-byte as recorded in tests/golden/.

The recorded output is the whole answer of `trainjobs render FILE --out -` (standard output,
standard error and exit code) with the default options and with the alternative transports and
gang scheduler, so a change of shape (moving a kind's code, sharing a parser) shows up here as
any difference at all. After an intended change of output, regenerate with
``TRAINJOBS_UPDATE_GOLDEN=1 pytest tests/test_golden_renders.py`` and review the diff.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.conftest import REPO
from trainjobs.cli import main

GOLDEN = REPO / "tests" / "golden"
SPECS = sorted((REPO / "tests" / "corpus").glob("*.yaml")) + sorted((REPO / "jobs").glob("*.yaml"))
VARIANTS = {
    "default": [],
    "ssh-volcano": ["--mpi-transport", "ssh", "--gang-scheduler", "volcano"],
}


def answer(spec: Path, options: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    try:
        code = main(["render", str(spec.relative_to(REPO)), "--out", "-", *options])
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return f"# exit {code}\n# stderr\n{err}# stdout\n{out}"


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("spec", SPECS, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_render_matches_the_recorded_one(
    spec: Path, variant: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    got = answer(spec, VARIANTS[variant], capsys)
    recorded = GOLDEN / spec.parent.name / f"{spec.stem}.{variant}.txt"
    if os.environ.get("TRAINJOBS_UPDATE_GOLDEN") == "1":
        recorded.parent.mkdir(parents=True, exist_ok=True)
        recorded.write_text(got)
    assert got == recorded.read_text()


def test_every_recorded_render_has_its_spec() -> None:
    expected = {f"{s.parent.name}/{s.stem}.{v}.txt" for s in SPECS for v in VARIANTS}
    recorded = {str(p.relative_to(GOLDEN)) for p in GOLDEN.rglob("*.txt")}
    assert recorded == expected
