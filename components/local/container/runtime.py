"""A container run: the process runtime's run, with each pod a real pod on a container engine.

Everything that decides the job is shared with the process runtime
(:class:`trainjobs.local.runtime.Run`: Job and StatefulSet semantics, retries, deadline,
outcome, logs, ``summary.json``, the scale-to-0, signals); this run differs only in what a
pod and the network are (:mod:`.pod`, :mod:`.network`) and in the exec path (:mod:`.api`).

Crash safety: every pod, container and network the run creates carries the run's id and its
owner (this process, :mod:`trainjobs.engines.owners`) as labels the engine stores with the
object in the same call that creates it, so nothing of a run exists unrecorded. A run that is
killed (SIGKILL) leaves them behind with an owner that is gone; the next container run, or
``trainjobs clean``, removes them (:mod:`.cleanup`) and says so.
"""

from __future__ import annotations

import shutil
import sys
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
from trainjobs.local.container.pod import ContainerPodRun, create_sandboxes
from trainjobs.local.network import PodHost, PodName
from trainjobs.local.pod_run import PodRun
from trainjobs.local.results import RunResult
from trainjobs.local.runtime import Run, RunOptions, clean_up_after_killed_runs


class ContainerRun(Run):
    """One execution of a job on a container engine (see the module docstring)."""

    network: ContainerNetwork

    def __init__(
        self,
        job: JobDefinition,
        plan: ClusterPlan,
        options: RunOptions,
        engine: Engine,
        images: dict[str, str],
        stale: Future[list[str]],
    ) -> None:
        self.engine = engine
        self.stale = stale
        """What killed runs left on the engine, removed while the images were checked."""
        self.images = images
        """The job's image references -> the local images that run them."""
        self.owner = owner_token()
        self.api = ApiServer(self)
        self.recorded_pods: set[str] = set()
        """Engine pods already in the ledger (a pod made again is recorded once)."""
        super().__init__(job, plan, options)

    @property
    def labels(self) -> dict[str, str]:
        return {RUN_LABEL: self.run_id, OWNER_LABEL: self.owner}

    def _network_mode(self) -> str:
        return self.engine.name

    def make_network(self, mode: str, pods: list[PodName]) -> ContainerNetwork:
        return ContainerNetwork(
            self.engine,
            self.run_id,
            self.plan.namespace,
            pods,
            self.labels,
            self.run_dir / "network",
        )

    def make_pod(self, plan: PodPlan, host: PodHost) -> ContainerPodRun:  # type: ignore[override]
        return ContainerPodRun(plan, host, self)

    def provision(self, pods: list[PodRun]) -> None:
        """The first pods' engine pods, made together: each ``podman pod create`` and ``pod
        start`` waits mostly on the engine, so made one by one they added up to seconds. The
        master's containers still start only once its pod's turn comes, and its cluster waiter
        still waits for the workers, as on a cluster."""
        made: list[ContainerPodRun] = pods  # type: ignore[assignment]  # container pods
        for pod in made:
            pod.record()
        pids = create_sandboxes(self.engine, [pod.pod_request() for pod in made])
        for pod in made:
            pod.provisioned = pids[pod.engine_name]

    def _abandon(self, created: bool) -> None:
        """Refused before anything started: the subnet lock goes too."""
        network = getattr(self, "network", None)
        if network is not None:
            network.release()
        super()._abandon(created)

    def check_ssh_transport(self, mode: str) -> None:
        """The images bring ssh and sshd; this machine only makes the run's key pair."""
        if shutil.which("ssh-keygen") is None:
            raise UserError(
                "--mpi-transport ssh makes the run's key pair with ssh-keygen, which is not "
                "on this machine: install Debian's openssh-client (make system-deps as root)"
            )

    def execute(self) -> RunResult:
        removed = self.stale.result()
        if removed:
            self.sink.event(
                f"removed what killed runs left on {self.engine.name}: {', '.join(removed)}"
            )
        return super().execute()

    def _teardown(self) -> list[str]:
        left: list[str] = []
        try:
            left = super()._teardown()
        finally:
            try:
                self.api.close()
            finally:
                # Once every engine pod is gone: nothing of the pods' volumes stays.
                for pod in self.pods:
                    left += pod.remove_volumes()  # type: ignore[attr-defined]  # container pods
        return left


def container_run(job: JobDefinition, plan: ClusterPlan, options: RunOptions) -> ContainerRun:
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
        images = local_images(plan, engine, options.image_aliases, say)
    return ContainerRun(job, plan, options, engine, images, stale)
