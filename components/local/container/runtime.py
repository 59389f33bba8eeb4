"""The container runtime: each pod of a run a real pod on a container engine.

A sibling of the process runtime behind :class:`trainjobs.local.pod_runtime.PodRuntime`.
Everything that decides the job is the run's (:class:`trainjobs.local.runtime.Run`: Job and
StatefulSet semantics, retries, deadline, outcome, logs, ``summary.json``, the scale-to-0,
signals); this runtime says only what a pod and the network are (:mod:`.pod`, :mod:`.network`)
and serves the exec path (:mod:`.api`).

Crash safety: every pod, container and network the run creates carries the run's id and its
owner (this process, :mod:`trainjobs.engines.owners`) as labels the engine stores with the
object in the same call that creates it, so nothing of a run exists unrecorded. A run that is
killed (SIGKILL) leaves them behind with an owner that is gone; the next container run, or
``trainjobs clean``, removes them (:mod:`.cleanup`) and says so.
"""

from __future__ import annotations

import shutil
import sys
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import OWNER_LABEL, RUN_LABEL, Engine
from trainjobs.engines.owners import owner_token
from trainjobs.engines.registry import find_engine
from trainjobs.kinds.registry import JobDefinition
from trainjobs.local.cluster import ClusterPlan, PodPlan
from trainjobs.local.container.api import ApiServer
from trainjobs.local.container.cleanup import remove_stale
from trainjobs.local.container.images import check_references, local_images
from trainjobs.local.container.network import ContainerNetwork
from trainjobs.local.container.pod import ContainerPodRun, EngineRun, create_sandboxes
from trainjobs.local.network import PodHost, PodName
from trainjobs.local.pod_run import LocalPod
from trainjobs.local.pods import LogSink
from trainjobs.local.run_context import RunContext
from trainjobs.local.runtime import Run, RunOptions, clean_up_after_killed_runs


class ContainerRuntime:
    """Pods as engine pods on a private engine network (see the module docstring)."""

    def __init__(self, engine: Engine, images: dict[str, str], stale: Future[list[str]]) -> None:
        self.engine = engine
        self.images = images
        """The job's image references -> the local images that run them."""
        self.stale = stale
        """What killed runs left on the engine, removed while the images were checked."""
        self.owner = owner_token()
        self.pods: list[ContainerPodRun] = []
        """Every pod made, in order (the API stand-in serves them)."""
        self.on_engine: EngineRun | None = None
        """What the pods share, once the run's network is made."""

    def network_mode(self, plan: ClusterPlan) -> str:
        return self.engine.name

    def check_ssh_transport(self, mode: str) -> None:
        """The images bring ssh and sshd; this machine only makes the run's key pair."""
        if shutil.which("ssh-keygen") is None:
            raise UserError(
                "--mpi-transport ssh makes the run's key pair with ssh-keygen, which is not "
                "on this machine: install Debian's openssh-client (make system-deps as root)"
            )

    def make_network(self, run: RunContext, mode: str, pods: list[PodName]) -> ContainerNetwork:
        labels = {RUN_LABEL: run.run_id, OWNER_LABEL: self.owner}
        network = ContainerNetwork(
            self.engine, run.run_id, run.plan.namespace, pods, labels, run.run_dir / "network"
        )
        api = ApiServer(run.run_dir, run.plan, self.pods, self.engine)
        self.on_engine = EngineRun(self.engine, self.images, labels, network, api)
        return network

    def make_pod(self, run: RunContext, plan: PodPlan, host: PodHost) -> ContainerPodRun:
        assert self.on_engine is not None, "the run's network is made before its pods"
        pod = ContainerPodRun(plan, host, run, self.on_engine)
        self.pods.append(pod)
        return pod

    def report_cleanup(self, sink: LogSink) -> None:
        removed = self.stale.result()
        if removed:
            sink.event(f"removed what killed runs left on {self.engine.name}: {', '.join(removed)}")

    def provision(self, pods: Sequence[LocalPod]) -> None:
        """The first pods' engine pods, made together: each ``podman pod create`` and ``pod
        start`` waits mostly on the engine, so made one by one they added up to seconds. The
        master's containers still start only once its pod's turn comes, and its cluster waiter
        still waits for the workers, as on a cluster."""
        made = [pod for pod in pods if isinstance(pod, ContainerPodRun)]
        for pod in made:
            pod.record()
        pids = create_sandboxes(self.engine, [pod.pod_request() for pod in made])
        for pod in made:
            pod.provisioned = pids[pod.engine_name]

    def abandon(self) -> None:
        """Refused before anything started: the subnet lock goes too."""
        if self.on_engine is not None:
            self.on_engine.network.release()

    def close(self) -> list[str]:
        left: list[str] = []
        if self.on_engine is None:
            return left
        try:
            self.on_engine.api.close()
        finally:
            # Once every engine pod is gone: nothing of the pods' volumes stays.
            for pod in self.pods:
                left += pod.remove_volumes()
        return left


def container_run(job: JobDefinition, plan: ClusterPlan, options: RunOptions) -> Run:
    """A container run of ``job``, its images ready (built first where trainjobs can)."""
    if options.network != "auto":
        raise UserError(
            f"--network {options.network}: container runs always use a private engine network"
        )
    check_references(plan, options.image_aliases)
    engine = find_engine(options.engine)
    stream = options.stream or sys.stdout

    def say(line: str) -> None:
        print(f"[trainjobs] {line}", file=stream, flush=True)

    clean_up_after_killed_runs(say)
    # Independent engine calls overlap: what killed runs left on the engine is listed and
    # removed while the images are checked (waited for before the run creates anything).
    with ThreadPoolExecutor(max_workers=1) as pool:
        stale = pool.submit(remove_stale, engine)
        images = local_images(plan, engine, options.image_aliases, say, options.pull_secrets)
    return Run(job, plan, options, ContainerRuntime(engine, images, stale))
