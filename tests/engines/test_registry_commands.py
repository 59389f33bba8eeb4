"""What each engine is told for a pull or a push: credentials and a registry's CA as its own
client takes them, and the digest a push reports."""

from __future__ import annotations

from pathlib import Path

from trainjobs.engines.docker import Docker
from trainjobs.engines.engine import RegistryAccess
from trainjobs.engines.podman import Podman

DIGEST = "sha256:" + "ab" * 32


def fake_client(tmp_path: Path, output: str) -> tuple[str, Path]:
    """An engine client that records its arguments, one per line, and prints ``output``."""
    log = tmp_path / "argv"
    client = tmp_path / "client"
    client.write_text(
        f'#!/bin/sh\nprintf "%s\\n" "$@" >> {log}\necho ---- >> {log}\nprintf "{output}"\n'
    )
    client.chmod(0o755)
    return str(client), log


def calls(log: Path) -> list[list[str]]:
    return [block.strip("\n").split("\n") for block in log.read_text().split("----\n") if block]


def test_podman_pulls_with_the_auth_file_and_the_registrys_ca_directory(tmp_path: Path):
    client, log = fake_client(tmp_path, "")
    access = RegistryAccess(tmp_path / "config.json", tmp_path / "certs.d" / "r.example:5000")

    Podman(client).pull("r.example:5000/team/train:1", access, lambda line: None)

    assert calls(log) == [
        [
            "pull",
            f"--authfile={tmp_path / 'config.json'}",
            f"--cert-dir={tmp_path / 'certs.d' / 'r.example:5000'}",
            "--",
            "r.example:5000/team/train:1",
        ]
    ]


def test_docker_pushes_a_tag_with_its_config_directory_and_reads_the_digest(tmp_path: Path):
    client, log = fake_client(tmp_path, f"1: Pushed\\n1: digest: {DIGEST} size: 528\\n")
    access = RegistryAccess(tmp_path / "config.json", tmp_path / "certs.d" / "r.example")
    lines: list[str] = []

    digest = Docker(client).push("team/train:1", "r.example/team/train:1", access, lines.append)

    assert digest == DIGEST
    assert lines == ["1: Pushed", f"1: digest: {DIGEST} size: 528"]
    assert calls(log) == [
        ["tag", "team/train:1", "r.example/team/train:1"],
        [f"--config={tmp_path}", "push", "--", "r.example/team/train:1"],
    ]
