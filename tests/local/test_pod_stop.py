"""Stopping a run's pods: together, as the kubelets of a cluster do, not one after another."""

from __future__ import annotations

from types import SimpleNamespace

from trainjobs.local.pod_run import LocalPod, stop_pods


class FakePod(LocalPod):
    """A pod whose containers exit on SIGTERM or not, recording what is done to it."""

    def __init__(self, name: str, calls: list[str], exits_on_term: bool) -> None:
        self.name = name
        self.calls = calls
        self.exits_on_term = exits_on_term
        self.alive = True
        self.processes = {"main": None}
        self.run = SimpleNamespace(hurry=False)

    def running(self, container: str) -> bool:
        return self.alive

    def terminate(self) -> None:
        self.calls.append(f"TERM {self.name}")
        if self.exits_on_term:
            self.alive = False

    def kill_everything(self) -> None:
        self.calls.append(f"KILL {self.name}")
        self.alive = False


def test_every_pod_gets_sigterm_before_any_pod_is_killed() -> None:
    calls: list[str] = []
    stubborn = FakePod("ps-0", calls, exits_on_term=False)
    prompt = FakePod("worker-0", calls, exits_on_term=True)
    other = FakePod("worker-1", calls, exits_on_term=False)
    grace = {"ps-0": 0.2, "worker-0": 30.0, "worker-1": 0.0}

    stop_pods([stubborn, prompt, other], lambda pod: grace[pod.name])

    # worker-0 exited on SIGTERM and is cleaned up at once; worker-1 has no grace; ps-0 is
    # killed when its own grace has passed.
    assert calls == [
        "TERM ps-0",
        "TERM worker-0",
        "TERM worker-1",
        "KILL worker-0",
        "KILL worker-1",
        "KILL ps-0",
    ]


def test_a_second_interrupt_kills_every_pod_without_waiting_for_its_grace() -> None:
    calls: list[str] = []
    pods = [FakePod(name, calls, exits_on_term=False) for name in ("master", "worker-0")]
    for pod in pods:
        pod.run.hurry = True

    stop_pods(pods, lambda pod: 3600.0)

    assert calls == ["TERM master", "TERM worker-0", "KILL master", "KILL worker-0"]
