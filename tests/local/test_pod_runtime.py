"""The process and container runtimes are siblings behind one interface, neither built on
the other."""

from __future__ import annotations

from trainjobs.local.container.runtime import ContainerRuntime
from trainjobs.local.pod_runtime import PodRuntime
from trainjobs.local.process_runtime import ProcessRuntime

INTERFACE = [
    "network_mode",
    "check_ssh_transport",
    "make_network",
    "make_pod",
    "report_cleanup",
    "provision",
    "abandon",
    "close",
]


def test_the_interface_is_what_a_run_asks_of_its_runtime() -> None:
    assert [name for name in vars(PodRuntime) if not name.startswith("_")] == INTERFACE


def test_each_runtime_implements_the_whole_interface_itself() -> None:
    for runtime in (ProcessRuntime, ContainerRuntime):
        assert runtime.__bases__ == (object,)
        assert [name for name in INTERFACE if name not in vars(runtime)] == []
