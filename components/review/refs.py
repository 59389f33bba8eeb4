"""Previews of a git ref, each side evaluated with its own code, for diffs against a base."""

from __future__ import annotations

import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from trainjobs.core.errors import UserError
from trainjobs.core.manifests import prepare_output_dir
from trainjobs.review.compare import Comparison, compare, config_changes
from trainjobs.review.replacement import ProviderSettings
from trainjobs.review.snapshot import Snapshot, load_preview

# Runs `trainjobs preview` with a project directory first on sys.path, so that each side of a
# diff is evaluated with its own components/ package when it has one.
_PREVIEW_SCRIPT = """
import sys
sys.path.insert(0, sys.argv[1])
from trainjobs.cli import main
sys.exit(main(["preview", "--stack", sys.argv[2], "--project", sys.argv[1], "--out", sys.argv[3]]))
"""


def preview_in_subprocess(project_dir: Path, stack: str, out_dir: Path, side: str) -> None:
    completed = subprocess.run(
        [sys.executable, "-c", _PREVIEW_SCRIPT, str(project_dir), stack, str(out_dir)],
        cwd=project_dir,
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        detail = completed.stderr.strip().removeprefix("error: ")
        raise UserError(f"preview of stack {stack} at {side} failed:\n{detail}")


def _git(directory: Path, *args: str) -> str:
    try:
        completed = subprocess.run(
            ["git", "-C", str(directory), *args], capture_output=True, text=True, check=False
        )
    except FileNotFoundError:
        raise UserError("`trainjobs diff --base` needs git on PATH") from None
    if completed.returncode != 0:
        raise UserError(f"git {' '.join(args)}: {completed.stderr.strip()}")
    return completed.stdout.strip()


def export_ref(project_dir: Path, ref: str, into: Path) -> Path:
    """Write the repository's tree at `ref` into `into`; returns the project directory in it.

    `git archive` leaves no worktree or other state in the repository. Like any archive it
    skips paths marked `export-ignore` and the contents of submodules.
    """
    project_dir = project_dir.resolve()
    top = Path(_git(project_dir, "rev-parse", "--show-toplevel"))
    prefix = _git(project_dir, "rev-parse", "--show-prefix")
    try:
        commit = _git(top, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")
    except UserError:
        raise UserError(f"--base {ref}: not a commit in {top}") from None
    archive = subprocess.Popen(
        ["git", "-C", str(top), "archive", "--format=tar", commit], stdout=subprocess.PIPE
    )
    assert archive.stdout is not None
    try:
        with tarfile.open(fileobj=archive.stdout, mode="r|") as tar:
            tar.extractall(into, filter="data")
    except tarfile.FilterError as error:  # e.g. a committed link to an absolute path
        archive.kill()
        archive.wait()
        raise UserError(
            f"--base {ref}: {error}; the export keeps no file outside the project "
            "(commit the target or a relative link instead)"
        ) from None
    if archive.wait() != 0:
        raise UserError(f"git archive {ref} failed")
    return into / prefix


def diff_against_ref(
    project_dir: Path, stack: str, ref: str, previews: Path
) -> tuple[Comparison, list[str]]:
    """Preview `stack` at git `ref` and in the working tree; compare them.

    Each side runs in its own process with its own checkout first on sys.path, so a change to
    components/ shows up in the diff just like a change to a job spec. A project without a
    trainjobs package (this project's is a trainjobs -> components link) falls back to the
    installed trainjobs for both sides. A stack that
    does not exist at `ref` is compared with an empty stack (everything is created).
    """
    project_dir = project_dir.resolve()
    # The caller's path: each side's preview runs in that side's project directory.
    previews = previews.absolute()
    stack_file = f"Pulumi.{stack}.yaml"
    with tempfile.TemporaryDirectory(prefix="trainjobs-base-") as checkout:
        base_project = export_ref(project_dir, ref, Path(checkout))
        prepare_output_dir(previews, "--previews")
        exists = (base_project / stack_file).is_file()
        if exists:
            preview_in_subprocess(base_project, stack, previews / "base", ref)
            base = load_preview(previews / "base")
        else:
            base = Snapshot(stack, {})
        preview_in_subprocess(project_dir, stack, previews / "head", "the working tree")
        head = load_preview(previews / "head")
        # A setting either side's program made secret is masked on both sides.
        secret = set(base.secret_config) | set(head.secret_config)
        config = config_changes(base_project / stack_file, project_dir / stack_file, secret)
    if not exists:
        config.insert(0, f"stack `{stack}` does not exist at `{ref}`: everything is new")
    return compare(base, head, ProviderSettings.from_stack(project_dir, stack)), config
