"""A run directory is trusted as the run records' directory is: the runtime (root) writes pods'
logs and files there, so no other user may own it or anything on the way to it. Tested from the
attacker's side, with a second real user (``nobody``) planting links while root runs."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.local.test_crash_safety import quick_job
from trainjobs.cli import main
from trainjobs.local.files import open_log, private_directory, redirectable

NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="needs root to act as a second user")

PLANTER = 'i=0; while [ $i -lt 6000 ]; do ln -s "$1" "$2" 2>/dev/null; sleep 0.01; i=$((i+1)); done'
"""Keeps a link at ``$2`` pointing at ``$1`` (for a minute at most), as the directory's owner
would plant one the moment root made the directory look safe (a shell: ``nobody`` may not run
this Python)."""


@contextmanager
def planted_by_nobody(link: Path, target: Path) -> Iterator[None]:
    """``nobody`` planting ``link -> target`` in a loop, for as long as the block runs."""
    planter = subprocess.Popen(
        ["sh", "-c", PLANTER, "sh", str(target), str(link)],
        user=NOBODY,
        group=NOBODY,
        extra_groups=[],
        start_new_session=True,  # its group, the loop's ln and sleep too, is stopped after
    )
    try:
        deadline = time.monotonic() + 10
        while not link.is_symlink() and time.monotonic() < deadline:
            time.sleep(0.01)
        assert link.is_symlink(), f"nobody could not plant {link}"
        yield
    finally:
        os.killpg(planter.pid, signal.SIGKILL)
        planter.wait()


@pytest.fixture
def tmp_path(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A directory ``nobody`` can reach (pytest's own are root's, 0700 on the way)."""
    base = Path(tempfile.mkdtemp(prefix="trainjobs-trust-", dir="/tmp"))
    base.chmod(0o755)
    yield base
    shutil.rmtree(base, ignore_errors=True)


def owned_by_nobody(path: Path, mode: int) -> Path:
    path.mkdir()
    os.chown(path, NOBODY, NOBODY)
    path.chmod(mode)
    return path


def snapshot(path: Path) -> tuple[int, int, list[str]]:
    status = os.lstat(path)
    return status.st_uid, stat.S_IMODE(status.st_mode), sorted(os.listdir(path))


@needs_root
def test_a_run_directory_another_user_owns_is_refused_with_their_link_planted(tmp_path, capsys):
    job = quick_job(tmp_path / "quick.yaml")
    theirs = owned_by_nobody(tmp_path / "theirs", 0o777)
    elsewhere = tmp_path / "elsewhere"
    with planted_by_nobody(theirs / "logs", elsewhere):
        before = snapshot(theirs)
        code = main(["run", str(job), "--run-dir", str(theirs), "--network", "loopback"])
        after = snapshot(theirs)
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: --run-dir {theirs}: is owned by uid 65534; a run directory must be yours: "
        "give a new directory (it is created private) or one of your own\n"
    )
    assert before == after == (NOBODY, 0o777, ["logs"])
    assert not elsewhere.exists()


@needs_root
def test_a_run_directory_below_another_users_directory_is_refused_creating_nothing(
    tmp_path, capsys
):
    job = quick_job(tmp_path / "quick.yaml")
    theirs = owned_by_nobody(tmp_path / "theirs", 0o755)
    code = main(["run", str(job), "--run-dir", str(theirs / "run"), "--network", "loopback"])
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: --run-dir {theirs / 'run'}: {theirs} is owned by uid 65534, so another user "
        "could redirect what the run writes; give a directory only you and root control (e.g. "
        "--run-dir under your home or /tmp)\n"
    )
    assert snapshot(theirs) == (NOBODY, 0o755, [])


@needs_root
def test_a_link_another_user_planted_in_a_sticky_directory_is_not_followed(tmp_path, capsys):
    job = quick_job(tmp_path / "quick.yaml")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)  # as /tmp
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    with planted_by_nobody(shared / "runs", victim):
        code = main(
            ["run", str(job), "--run-dir", str(shared / "runs" / "r"), "--network", "loopback"]
        )
    assert code == 2
    assert capsys.readouterr().err == (
        f"error: --run-dir {shared / 'runs' / 'r'}: {shared / 'runs'} is a symbolic link owned "
        "by uid 65534, so another user could redirect what the run writes; give a directory "
        "only you and root control (e.g. --run-dir under your home or /tmp)\n"
    )
    assert os.listdir(victim) == []


@needs_root
def test_the_default_run_directory_below_another_users_directory_is_refused(
    tmp_path, monkeypatch, capsys
):
    job = quick_job(tmp_path / "quick.yaml")
    checkout = owned_by_nobody(tmp_path / "checkout", 0o755)
    monkeypatch.chdir(checkout)
    assert main(["run", str(job), "--network", "loopback"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: the run directory out/runs/quick-20")
    assert err.endswith(
        f": {checkout} is owned by uid 65534, so another user could redirect what the run "
        "writes; give a directory only you and root control (e.g. --run-dir under your home "
        "or /tmp)\n"
    )
    assert snapshot(checkout) == (NOBODY, 0o755, [])


def test_a_path_through_directories_only_root_and_this_user_control_is_not_redirectable(
    tmp_path,
):
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to("real")  # this user's link, in this user's directory
    sticky = tmp_path / "sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    assert redirectable(tmp_path / "alias" / "run") == ""
    assert redirectable(tmp_path / "missing" / "deeper" / "run") == ""
    assert redirectable(sticky / "run") == ""


def test_a_directory_others_may_write_on_the_way_makes_a_path_redirectable(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    assert redirectable(shared / "run") == f"{shared} may be written by other users (mode 0777)"
    (tmp_path / "via").symlink_to(shared)
    assert redirectable(tmp_path / "via" / "run") == (
        f"{shared} may be written by other users (mode 0777)"
    )


def test_a_link_loop_on_the_way_is_reported_not_followed_forever(tmp_path):
    (tmp_path / "a").symlink_to("b")
    (tmp_path / "b").symlink_to("a")
    assert redirectable(tmp_path / "a" / "run").endswith(": too many levels of symbolic links")


def test_a_logs_directory_that_became_a_link_is_not_made_private_through_it(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "logs").symlink_to(elsewhere)
    with pytest.raises(OSError):
        private_directory(tmp_path / "logs")
    assert stat.S_IMODE(elsewhere.stat().st_mode) == 0o755


def test_a_log_file_that_became_a_link_is_not_written_through(tmp_path):
    target = tmp_path / "target"
    target.write_text("keep", encoding="utf-8")
    (tmp_path / "pod.log").symlink_to(target)
    with pytest.raises(OSError):
        open_log(tmp_path / "pod.log")
    assert target.read_text(encoding="utf-8") == "keep"
