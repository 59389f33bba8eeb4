"""The run's pod network takes a /24 no engine network holds, even with runs starting at once.

Before: the /24 was the run id's (one of 512) whatever the engine had, so a run failed
(``subnet ... is already used``) where another network held it, and two concurrent runs
collided about once in 512.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.local.container.test_isolation import IMAGE, needs_image
from tests.local.container.test_runtime import CONTAINER, ENGINE, single_pod, write_job
from trainjobs.cli import main
from trainjobs.engines.engine import OWNER_LABEL, RUN_LABEL
from trainjobs.engines.owners import owner_token
from trainjobs.local import ledger
from trainjobs.local.container.network import ContainerNetwork, free_subnet

RUN_ID = "0001fd"
"""Maps to 198.19.253.0/24 (the 509th /24 of 198.18.0.0/15)."""


def test_the_first_free_subnet_from_the_run_ids_is_taken():
    assert str(free_subnet([], RUN_ID)) == "198.19.253.0/24"
    taken = ["10.88.0.0/16", "198.19.253.0/24", "198.19.254.0/23", "fd00::/64"]
    assert str(free_subnet(taken, RUN_ID)) == "198.18.0.0/24"


@needs_image
def test_a_run_whose_subnet_another_network_holds_takes_a_free_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
):
    assert ENGINE is not None
    holder = {RUN_LABEL: "holder", OWNER_LABEL: owner_token()}
    ENGINE.create_network("tj-test-holder", "198.19.253.0/24", "198.19.253.1", holder)
    monkeypatch.setattr(ledger.secrets, "token_hex", lambda size: RUN_ID)
    job = write_job(tmp_path / "job.yaml", single_pod("subnet", IMAGE, ["hostname", "-i"]))
    try:
        code = main(["run", str(job), "--run-dir", str(tmp_path / "run"), *CONTAINER])
    finally:
        ENGINE.remove_networks(["tj-test-holder"])

    out = capsys.readouterr().out
    assert code == 0, out
    assert "[subnet-master-0] 198.19.254.2" in out.splitlines()


def test_runs_choosing_at_once_take_different_subnets(tmp_path: Path):
    assert ENGINE is not None
    chosen: list[str] = []
    networks: list[ContainerNetwork] = []

    def network(run_id: str) -> ContainerNetwork:
        made = ContainerNetwork(ENGINE, run_id, "default", [], {}, tmp_path / run_id)
        networks.append(made)
        chosen.append(str(made.subnet))
        return made

    first = network("0001fc")
    # The same /24 as the first's (the index is the id modulo 512): the second run's choice
    # waits for the first run's network to exist, then sees it.
    second = threading.Thread(target=network, args=("0201fc",))
    second.start()
    second.join(0.5)
    assert second.is_alive() and chosen == ["198.19.252.0/24"]
    try:
        first.up(ledger.Ledger(tmp_path / "ledger.json", {"created": []}))
        second.join(30)
        assert chosen == ["198.19.252.0/24", "198.19.253.0/24"]
    finally:
        for made in networks:
            made.release()
        ENGINE.remove_networks([f"tj-{first.run_id}"])


def test_runs_of_two_sessions_choosing_at_once_take_different_subnets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    # Two users of the engine (or two test sessions) keep their run records apart, but share
    # the engine's networks: the choice is made under one lock for the whole machine.
    assert ENGINE is not None
    chosen: list[str] = []
    networks: list[ContainerNetwork] = []

    def network(run_id: str) -> ContainerNetwork:
        made = ContainerNetwork(ENGINE, run_id, "default", [], {}, tmp_path / run_id)
        networks.append(made)
        chosen.append(str(made.subnet))
        return made

    for name in ("a", "b"):
        (tmp_path / name).mkdir(mode=0o700)
    monkeypatch.setenv(ledger.STATE_ENV, str(tmp_path / "a"))
    first = network("0001fa")
    monkeypatch.setenv(ledger.STATE_ENV, str(tmp_path / "b"))
    second = threading.Thread(target=network, args=("0201fa",))
    second.start()
    second.join(0.5)
    assert second.is_alive() and chosen == ["198.19.250.0/24"]
    try:
        first.up(ledger.Ledger(tmp_path / "ledger.json", {"created": []}))
        second.join(30)
        assert chosen == ["198.19.250.0/24", "198.19.251.0/24"]
    finally:
        for made in networks:
            made.release()
        ENGINE.remove_networks([f"tj-{first.run_id}"])
