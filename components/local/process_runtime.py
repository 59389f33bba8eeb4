"""The process runtime: `trainjobs run --runtime process`, each pod's containers host processes.

Each pod is a sandbox in its own network namespace when root (:mod:`trainjobs.local.network`),
its containers host processes with their image paths mapped (:mod:`trainjobs.local.containers`,
:class:`trainjobs.local.pod_run.PodRun`). A sibling of the container runtime
(:mod:`trainjobs.local.container`) behind :class:`trainjobs.local.pod_runtime.PodRuntime`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from trainjobs.core.errors import UserError
from trainjobs.kinds.registry import JobDefinition
from trainjobs.local import ssh as local_ssh
from trainjobs.local.cluster import ClusterPlan, PodPlan
from trainjobs.local.image_packages import check_images
from trainjobs.local.network import (
    LoopbackNetwork,
    NamespaceNetwork,
    Network,
    PodHost,
    PodName,
    netns_available,
)
from trainjobs.local.pod_run import LocalPod, PodRun
from trainjobs.local.pods import LogSink
from trainjobs.local.results import RunResult
from trainjobs.local.run_context import RunContext
from trainjobs.local.runtime import Run, RunOptions, clean_up_after_killed_runs


def process_run(job: JobDefinition, plan: ClusterPlan, options: RunOptions) -> RunResult:
    """Run the job's pods as host processes (``--runtime process``) to its outcome; the
    dispatcher is :func:`trainjobs.local.start.run_job`."""
    check_images(plan, options.image_aliases)
    stream = options.stream or sys.stdout
    clean_up_after_killed_runs(lambda line: print(f"[trainjobs] {line}", file=stream))
    runtime = ProcessRuntime(options.network, options.image_aliases)
    return Run(job, plan, options, runtime).execute()


class ProcessRuntime:
    """Pods as sandboxes of host processes, on namespaces bridged together or on loopback."""

    def __init__(self, network: str, image_aliases: dict[str, str]) -> None:
        self.requested = network
        """netns, loopback, or auto (``--network``)."""
        self.image_aliases = image_aliases

    def network_mode(self, plan: ClusterPlan) -> str:
        requested = self.requested
        why_not = netns_available()
        if requested == "netns" and why_not:
            raise UserError(f"--network netns: unavailable here ({why_not}); use loopback")
        mode = ("loopback" if why_not else "netns") if requested == "auto" else requested
        named = next((pod.name for pod in plan.pods if pod.service_names), None)
        if mode == "loopback" and named is not None:
            why = why_not if requested == "auto" else "--network loopback was asked for"
            if not why_not:
                fix = "leave out --network loopback (they are the default here)"
            elif os.geteuid() == 0:
                fix = "install iproute2 and util-linux (make system-deps)"
            else:
                fix = "run it as root with iproute2 and util-linux (make system-deps)"
            raise UserError(
                f"pod {named} is reached by its Service's DNS name (TF_CONFIG, MASTER_ADDR), "
                "which needs an address of its own, which only pod network namespaces give, "
                f"and they are not used here ({why}); {fix}"
            )
        return mode

    def check_ssh_transport(self, mode: str) -> None:
        local_ssh.check_available(mode)

    def make_network(self, run: RunContext, mode: str, pods: list[PodName]) -> Network:
        """The pods' network: namespaces on a bridge, or loopback (see ``--network``)."""
        if mode == "netns":
            return NamespaceNetwork(run.run_id, run.plan.namespace, pods)
        return LoopbackNetwork(pods)

    def make_pod(self, run: RunContext, plan: PodPlan, host: PodHost) -> LocalPod:
        """A pod of this runtime: containers as host processes in the pod's namespaces."""
        return PodRun(plan, host, run, self.image_aliases)

    def report_cleanup(self, sink: LogSink) -> None:
        """Nothing beyond the ledger's clean-up, said before the run was made."""

    def provision(self, pods: Sequence[LocalPod]) -> None:
        """A host process's sandbox needs nothing made ahead."""

    def abandon(self) -> None:
        """Nothing is reserved before the network is up."""

    def close(self) -> list[str]:
        """The run's processes, namespaces and links are the run's own clean-up."""
        return []
