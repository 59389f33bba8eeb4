"""The ssh transport in local runs: a key pair made for the run, and sshd's needs on this machine.

A cluster gets the job's ssh-auth Secret from Pulumi (a key made at deploy time); a local run
makes its own key pair with ``ssh-keygen`` when it starts, keeps it only in the run
directory's private ``ssh/`` directory and in the pods' Secret volumes (files 0600 or the
volume's mode, directories 0700), and removes all of it when the run ends (a killed run's, the
clean-up after it: see :mod:`trainjobs.local.ledger`). Each worker pod's
sshd is Debian's, started by the generated ``sshd.sh`` in the pod's network namespace, so
every pod needs an address of its own: the ssh transport runs on pod network namespaces only.

sshd running as root (as local pods do) needs its privilege-separation directory
``/run/sshd``; Debian's service creates it at boot, which a machine without systemd never
does. It is created here when missing (empty, 0755, as the service makes it) and left in
place, like ``/run/netns``, which ``ip netns`` creates.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from trainjobs.core.errors import EnvironmentFailure, UserError
from trainjobs.core.graph import Manifest
from trainjobs.kinds.mpi import ssh_assets
from trainjobs.local.ledger import resource_kind

PRIVSEP_DIR = Path("/run/sshd")
_PROGRAMS = {
    "ssh": "openssh-client",
    "ssh-keygen": "openssh-client",
    ssh_assets.SSHD_BINARY: "openssh-server",
}


def ssh_secrets(secrets: dict[str, Manifest]) -> list[str]:
    """The names of the job's Secrets that carry the ssh transport's key pair."""
    return sorted(
        name for name, secret in secrets.items() if secret.get("type") == ssh_assets.SECRET_TYPE
    )


def check_available(network_mode: str) -> None:
    """Refuse, before anything starts, what cannot work here."""
    if network_mode != "netns":
        raise UserError(
            "--mpi-transport ssh: every worker's sshd listens on port "
            f"{ssh_assets.SSH_PORT} at the pod's own address, which needs pod network "
            "namespaces (root, iproute2 and util-linux: make system-deps); use "
            "--mpi-transport kubectl here"
        )
    missing = sorted(
        {package for program, package in _PROGRAMS.items() if shutil.which(program) is None}
    )
    if missing:
        raise UserError(
            f"--mpi-transport ssh needs Debian's {' '.join(missing)} on this machine "
            "(the chainermn images install them): run `make system-deps` as root"
        )


@resource_kind("ssh-keys")
def _remove_keys(entry: dict[str, list[str]]) -> list[str]:
    """A killed run's key pair and the Secret volumes that held copies of it."""
    removed = []
    for directory in map(Path, entry["directories"]):
        if directory.is_dir() and not directory.is_symlink():
            shutil.rmtree(directory, ignore_errors=True)
            removed.append(f"key directory {directory}")
    return removed


def prepare_sshd() -> None:
    """sshd as root refuses to start without its privilege-separation directory."""
    if os.geteuid() == 0 and not PRIVSEP_DIR.is_dir():
        PRIVSEP_DIR.mkdir(mode=0o755)


class RunKeys:
    """The run's key pair: made in ``<run>/ssh`` (0700), gone with :meth:`remove`."""

    def __init__(self, run_dir: Path, job: str, alias: str) -> None:
        self.directory = run_dir / "ssh"
        self.directory.mkdir(mode=0o700)
        key = self.directory / "id_ed25519"
        made = subprocess.run(
            [
                "ssh-keygen",
                "-q",
                "-t",
                ssh_assets.KEY_ALGORITHM.lower(),
                "-N",
                "",
                "-C",
                f"{job} (trainjobs local run)",
                "-f",
                str(key),
            ],
            capture_output=True,
            text=True,
        )
        if made.returncode != 0:
            reason = made.stderr.strip().splitlines()[-1:] or [f"exit code {made.returncode}"]
            raise EnvironmentFailure(f"ssh-keygen could not make the run's key pair: {reason[0]}")
        self.files = ssh_assets.secret_files(
            alias,
            key.read_text(encoding="ascii"),
            key.with_suffix(".pub").read_text(encoding="ascii"),
        )

    def remove(self) -> list[str]:
        """Delete the key pair; what could not be deleted, as leftovers."""
        shutil.rmtree(self.directory, ignore_errors=True)
        return [f"key directory {self.directory}"] if self.directory.exists() else []
