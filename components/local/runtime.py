"""`trainjobs run`: execute a job's resource graph on this machine, with Job semantics.

One local pod per replica (see :mod:`components.local.cluster`), each in its own network
namespace when root (:mod:`components.local.network`), containers as host processes with
their image paths mapped (:mod:`components.local.containers`), and the generated assets
(hostfile, rsh agent, cluster waiter, bootstrap script) used exactly as on a cluster, against
the kubectl stand-in (:mod:`components.local.kubectl`) whose "API server" is ``pods.json`` in
the run directory.

Kubernetes semantics kept, and where they live:

- StatefulSet pods (ChainerJob workers, TFJob parameter servers) start first and are restarted
  when their container exits (restartPolicy Always; the back-off is 0, 1, 2, 4... up to 10 s
  instead of 10 s to 5 min), and they are recreated if the whole pod dies;
- every Job (:class:`_JobRun`) runs a pod per completion index: the ChainerJob master, or
  each index of a TFJob/PyTorchJob replica type's Indexed Job. A pod runs its init containers
  in order (kubectl delivery, then the cluster waiter), then its containers; a failure is
  retried per restartPolicy (Never: a new pod for the index, init containers again;
  OnFailure: the failed container again, in the same pod) until the Job's failures exceed
  ``backoffLimit`` (default 6): Failed, reason BackoffLimitExceeded. ``podFailurePolicy``
  exit-code rules come first: FailJob fails the Job at once (reason PodFailurePolicy: the
  TFJob design's permanent exit codes 1-127), Ignore retries without counting. Locally there
  is no delay between retries;
- a Job is Complete when every index succeeded, or the indexes its ``successPolicy`` names
  (Kubeflow's "worker 0 decides" when there is no chief);
- ``activeDeadlineSeconds`` counts from the job's start across retries; on expiry the Job's
  pods are stopped: Failed, reason DeadlineExceeded;
- the completion Job's outcome is the job's outcome; a Failed condition of any other Job fails
  the job too, as Kubeflow fails a TFJob or PyTorchJob on any replica's permanent error;
- when the outcome is known every other pod is stopped (the scale-to-0);
- stopping a pod sends SIGTERM to each container's main process and, once it exits or after
  ``terminationGracePeriodSeconds`` (default 30), SIGKILL to everything left in the pod;
- pods that request ``nvidia.com/gpu`` stay Pending (Unschedulable): the local node offers
  no GPUs. A completion Job pod that cannot be scheduled fails the job at once, since
  nothing local could ever make room for it; unschedulable workers are left to the cluster
  waiter, which names them when it gives up.

Nothing leaks: whatever happens (success, failure, deadline, an exception, SIGINT or SIGTERM),
the ``finally`` path stops every pod, kills any process that still carries the run's marker
or sits in one of its namespaces, and removes namespaces, veths and the bridge; leftovers, if
any, are reported in the summary. A second Ctrl-C during that clean-up skips the grace period
but not the clean-up.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import secrets
import shutil
import signal
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from types import FrameType
from typing import IO, Any

from packaging.requirements import Requirement

from components import images
from components.errors import UserError
from components.jobtypes import JobDefinition
from components.local import containers
from components.local.cluster import (
    GPU_RESOURCE,
    ClusterPlan,
    ExitCodeRule,
    JobPlan,
    PodPlan,
    plan_cluster,
)
from components.local.kubectl import POD_ENV, REGISTRY_ENV
from components.local.network import (
    NETNS_RUN,
    LoopbackNetwork,
    NamespaceNetwork,
    PodHost,
    netns_available,
)
from components.local.pods import (
    ContainerProcess,
    LogSink,
    ProcessSpec,
    Sandbox,
    kill_all,
    pod_processes,
)
from components.manifests import write_manifests

CONTAINER_ENV = "TRAINJOBS_LOCAL_CONTAINER"
POLL_SECONDS = 0.05
MAX_RESTART_DELAY_SECONDS = 10.0
NETWORK_MODES = ("auto", "netns", "loopback")


@dataclass(frozen=True)
class RunOptions:
    run_dir: Path | None = None
    """Where pods' files, logs and the summary go. Default: out/runs/<job>-<timestamp>."""
    network: str = "auto"
    """netns (root), loopback, or auto: netns when available."""
    image_aliases: dict[str, str] = field(default_factory=dict)
    """Undeclared image reference -> declared reference to run it as."""
    stream: IO[str] | None = None
    """Where pod output and the summary go. Default: stdout."""


@dataclass(frozen=True)
class RunResult:
    job: str
    outcome: str
    """Succeeded, Failed or Interrupted."""
    reason: str
    """Completed, BackoffLimitExceeded, PodFailurePolicy, DeadlineExceeded, Unschedulable,
    Error (a fault of the runtime itself), or the signal that interrupted the run (SIGINT,
    SIGTERM, SIGHUP)."""
    message: str
    exit_code: int
    duration_seconds: float
    attempts: int
    """How many times a Job's pod command (or its init containers) ran, over every Job."""
    retries: int
    backoff_limit: int
    """The completion Job's."""
    run_dir: Path
    run_id: str
    network: str
    leftovers: list[str]
    jobs: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Per Job: its condition (Complete, Failed, or Active when stopped by the scale-to-0),
    reason, attempts, retries and succeeded indexes."""

    def summary(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "outcome": self.outcome,
            "reason": self.reason,
            "message": self.message,
            "exitCode": self.exit_code,
            "durationSeconds": round(self.duration_seconds, 3),
            "attempts": self.attempts,
            "retries": self.retries,
            "backoffLimit": self.backoff_limit,
            "runId": self.run_id,
            "network": self.network,
            "leftovers": self.leftovers,
            "jobs": self.jobs,
        }


class Interrupted(Exception):
    """SIGINT or SIGTERM arrived: the run stops and cleans up."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(signal_name)
        self.signal_name = signal_name


@dataclass
class _Failure:
    container: str
    code: int
    init: bool

    def __str__(self) -> str:
        kind = "init container" if self.init else "container"
        return f"{kind} {self.container} exited with code {self.code}"


def run_job(job: JobDefinition, options: RunOptions | None = None) -> RunResult:
    """Run the job to its outcome; never leaves a process, namespace or link behind."""
    options = options or RunOptions()
    if options.network not in NETWORK_MODES:
        raise UserError(f"--network must be one of {', '.join(NETWORK_MODES)}")
    plan = plan_cluster(job.graph, job.completion_job)
    _check_images(plan, options.image_aliases)
    run = _Run(job, plan, options)
    return run.execute()


def _check_images(plan: ClusterPlan, aliases: dict[str, str]) -> None:
    """Every image must be declared and its Python packages installed where pods run."""
    for pod in plan.pods:
        for container in _all_containers(pod):
            image = images.resolve(container["image"], aliases)
            for requirement in image.python_packages:
                pin = Requirement(requirement)
                try:
                    installed = importlib.metadata.version(pin.name)
                except importlib.metadata.PackageNotFoundError:
                    installed = None
                # PEP 440 matching: '==2.13.0' would also accept a local build (2.13.0+cpu).
                if installed is None or not pin.specifier.contains(installed, prereleases=True):
                    have = f"has {installed}" if installed else "does not have it"
                    raise UserError(
                        f"image {image.reference} needs {requirement} in the Python that runs "
                        f"local pods ({sys.executable}), which {have}: run `make setup`"
                    )


def _all_containers(pod: PodPlan) -> list[dict[str, Any]]:
    return [*(pod.spec.get("initContainers") or []), *pod.spec["containers"]]


def _default_run_dir(job: str) -> Path:
    base = Path("out") / "runs" / f"{job}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
    candidate, suffix = base, 1
    while candidate.exists():
        suffix += 1
        candidate = Path(f"{base}-{suffix}")
    return candidate


class _PodRun:
    """One local pod: its sandbox, its container processes and the status kubectl reports."""

    def __init__(self, plan: PodPlan, host: PodHost, run: _Run) -> None:
        self.plan = plan
        self.host = host
        self.run = run
        self.name = plan.name
        self.phase = "Pending"
        self.directory = run.run_dir / "pods" / plan.name
        self.volume_dirs = {
            volume["name"]: self.directory / "volumes" / volume["name"]
            for volume in plan.spec.get("volumes") or []
        }
        self.init_names = [c["name"] for c in plan.spec.get("initContainers") or []]
        self.main_names = [c["name"] for c in plan.spec["containers"]]
        if self.init_names and plan.restart_policy == "Always":
            raise UserError(
                f"{plan.owner}: init containers on workers are not supported by local runs"
            )
        self._check_volumes()
        self.specs = {
            container["name"]: self._process_spec(group, index, container)
            for group in ("initContainers", "containers")
            for index, container in enumerate(plan.spec.get(group) or [])
        }
        self.sandbox: Sandbox | None = None
        self.deleted = False
        self.stage = 0
        """Job pods: init container ``stage`` runs; past the last one, the containers run."""
        self.attempts = 0
        self.processes: dict[str, ContainerProcess] = {}
        self.restarts: dict[str, int] = {}
        self.restart_at: dict[str, float] = {}
        gpus = plan.gpu_request()
        self.unschedulable = (
            f"0/1 nodes are available: 1 Insufficient {GPU_RESOURCE}: the local node offers no "
            f"GPUs and pod {plan.name} requests {gpus}"
            if gpus
            else None
        )

    def _process_spec(self, group: str, index: int, container: dict[str, Any]) -> ProcessSpec:
        where = f"{self.plan.owner} pod template spec.{group}[{index}]"
        image = images.resolve(container["image"], self.run.options.image_aliases)
        context = containers.PodContext(
            pod=self.name,
            namespace=self.run.plan.namespace,
            address=self.host.address,
            node="localhost",
            service_account=self.plan.spec.get("serviceAccountName") or "default",
            labels=self.plan.labels,
            annotations=self.plan.annotations,
            config_maps=self.run.plan.config_maps,
        )
        base = {
            # The interpreter running trainjobs stands in for the image's python3.
            "PATH": f"{Path(sys.executable).parent}:/usr/local/sbin:/usr/local/bin:"
            "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOSTNAME": self.plan.hostname,
            # Local pods share this machine's cores, but Open MPI sees one node per pod and
            # would busy-poll on each: ranks must yield, or 3 ranks on 2 cores crawl.
            "OMPI_MCA_mpi_yield_when_idle": "1",
            **self.plan.controller_env,
        }
        env = containers.container_env(container, image, base, context, where)
        paths = containers.path_map(container, image, self.volume_dirs, where)
        env = {name: paths.rewrite(value) for name, value in env.items()}
        env.update(self.run.markers(self.name, container["name"]))
        argv = containers.container_argv(container, env, paths, where)
        containers.check_command(argv, env, image, where)
        workdir = self.directory / "containers" / container["name"]
        if container.get("workingDir"):
            workdir = paths.host(container["workingDir"]) or workdir
        return ProcessSpec(argv=argv, env=env, cwd=workdir)

    def _check_volumes(self) -> None:
        """Only configMap and emptyDir volumes exist locally; create their directories."""
        for index, volume in enumerate(self.plan.spec.get("volumes") or []):
            if "configMap" in volume:
                if volume["configMap"]["name"] not in self.run.plan.config_maps:
                    raise UserError(
                        f"{self.plan.owner}: volumes[{index}] names ConfigMap "
                        f"{volume['configMap']['name']!r}, which the job does not create"
                    )
            elif "emptyDir" not in volume:
                kinds = sorted(set(volume) - {"name"})
                raise UserError(
                    f"{self.plan.owner}: volumes[{index}] ({volume['name']}): {kinds} volumes "
                    "are not supported by local runs (configMap and emptyDir are)"
                )
        # Directories must exist for PathMap to know they are directories.
        for path in self.volume_dirs.values():
            path.mkdir(parents=True, exist_ok=True)

    # -- lifecycle -------------------------------------------------------------------------

    def create(self) -> None:
        """A fresh pod: new volumes (emptyDirs start empty), a new sandbox."""
        self.phase = "Pending"
        for volume in self.plan.spec.get("volumes") or []:
            target = self.volume_dirs[volume["name"]]
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            if "configMap" in volume:
                source = volume["configMap"]
                containers.materialise_config_map(
                    target,
                    self.run.plan.config_maps[source["name"]],
                    int(source.get("defaultMode", 0o644)),
                    source.get("items"),
                )
        for spec in self.specs.values():
            spec.cwd.mkdir(parents=True, exist_ok=True)
        self.sandbox = Sandbox(
            self.name, self.plan.hostname, self.host.netns, self.run.markers(self.name, "")
        )
        self.sandbox.start()
        self.run.publish()

    def start(self, container: str) -> None:
        assert self.sandbox is not None
        self.processes[container] = ContainerProcess(
            self.name, container, self.specs[container], self.sandbox, self.run.sink
        )
        self.run.publish()

    def running(self, container: str) -> bool:
        process = self.processes.get(container)
        return process is not None and process.poll() is None

    def finish(self, container: str) -> None:
        """After a container's main process exited: end what it started, collect its output."""
        kill_all(self.run.processes(self.name, container))
        self.processes[container].reap()
        self.run.publish()

    def stop(self, grace: float) -> None:
        """SIGTERM the containers, wait up to ``grace``, then kill everything in the pod."""
        for process in self.processes.values():
            process.terminate()
        end = time.monotonic() + grace
        while any(self.running(name) for name in self.processes) and time.monotonic() < end:
            if self.run.hurry:
                break
            time.sleep(POLL_SECONDS)
        self.kill_everything()

    def kill_everything(self) -> None:
        """SIGKILL every process of the pod (the sandbox last), as a PID namespace's end would."""
        for _ in range(200):
            pids = self.run.processes(self.name)
            if self.sandbox is not None and self.sandbox.process is not None:
                pids = [pid for pid in pids if pid != self.sandbox.process.pid]
            if not pids:
                break
            kill_all(pids)
            time.sleep(0.01)
        for process in self.processes.values():
            process.reap()
        if self.sandbox is not None:
            self.sandbox.stop()
        kill_all(self.run.processes(self.name))
        self.run.publish()

    def registry_entry(self) -> dict[str, Any]:
        alive = self.sandbox is not None and self.sandbox.alive()
        return {
            "phase": self.phase,
            "serviceAccount": self.plan.service_account,
            "sandbox": self.sandbox.registry_entry if self.sandbox is not None else None,
            "containers": {
                name: {
                    "running": alive and self.running(name),
                    "env": spec.env,
                    "workingDir": str(spec.cwd),
                }
                for name, spec in self.specs.items()
            },
        }


class _JobRun:
    """One batch/v1 Job: a pod per completion index, retried and judged as the Job controller
    judges it (see the module docstring). ``condition`` is None while the Job is active."""

    def __init__(self, plan: JobPlan, pods: list[_PodRun], run: _Run) -> None:
        self.plan = plan
        self.pods = pods
        self.run = run
        self.attempts = 0
        self.retries = 0
        self.failures = 0
        """Failures counted against backoffLimit (not those a podFailurePolicy Ignores)."""
        self.succeeded: set[int] = set()
        self.condition: tuple[str, str, str] | None = None
        """(Complete or Failed, reason, message) once the Job is finished."""

    @property
    def name(self) -> str:
        return self.plan.name

    def active(self) -> list[_PodRun]:
        """Pods created and not finished (Pending while init containers run)."""
        return [
            pod
            for pod in self.pods
            if pod.sandbox is not None and pod.phase in ("Pending", "Running")
        ]

    def status(self) -> dict[str, Any]:
        state, reason, _ = self.condition or ("Active", None, None)
        return {
            "condition": state,
            "reason": reason,
            "attempts": self.attempts,
            "retries": self.retries,
            "succeededIndexes": sorted(self.succeeded),
        }

    def start(self) -> None:
        """Create a pod for every index; unschedulable ones stay Pending."""
        for pod in self.pods:
            if pod.unschedulable:
                self.run.sink.event(
                    f"pod {pod.name} stays Pending (Unschedulable): {pod.unschedulable}"
                )
                continue
            self._begin_attempt(pod)

    def check_deadline(self, elapsed: float) -> None:
        """activeDeadlineSeconds: stop the Job's pods and fail it once the deadline passed."""
        deadline = self.plan.active_deadline_seconds
        if self.condition is not None or deadline is None or elapsed < deadline:
            return
        active = self.active()
        if active:
            names = ", ".join(pod.name for pod in active)
            self.run.sink.event(
                f"activeDeadlineSeconds ({deadline}s) exceeded: stopping "
                f"pod{'s' if len(active) > 1 else ''} {names}"
            )
        for pod in active:
            pod.stop(pod.plan.grace_seconds)
            pod.phase = "Failed"
        self.run.publish()
        self.condition = (
            "Failed",
            "DeadlineExceeded",
            f"Job was active longer than specified deadline ({deadline}s), during attempt "
            f"{self.attempts}",
        )

    def step(self) -> None:
        """Advance every running pod; set ``condition`` when the Job finishes."""
        for pod in self.active():
            failure = self._step_pod(pod)
            if failure is not None:
                self._failed(pod, failure)
                if self.condition is not None:
                    return
        required = self.plan.succeeded_indexes
        if required is None:
            required = {pod.plan.index or 0 for pod in self.pods}
        if required <= self.succeeded:
            names = [pod.name for pod in self.pods if (pod.plan.index or 0) in required]
            policy = " (successPolicy)" if self.plan.succeeded_indexes is not None else ""
            self.condition = (
                "Complete",
                "Completed",
                f"pod{'s' if len(names) > 1 else ''} {', '.join(names)} succeeded{policy}",
            )

    def _begin_attempt(self, pod: _PodRun) -> None:
        self.attempts += 1
        pod.attempts += 1
        total = self.plan.backoff_limit + 1
        self.run.sink.event(f"pod {pod.name}: attempt {pod.attempts} of at most {total}")
        pod.create()
        pod.stage = 0
        self._start_stage(pod)

    def _start_stage(self, pod: _PodRun) -> None:
        """Stage i < len(init) runs init container i; the last stage runs all containers."""
        if pod.stage < len(pod.init_names):
            pod.start(pod.init_names[pod.stage])
            return
        pod.phase = "Running"
        for name in pod.main_names:
            pod.start(name)

    def _step_pod(self, pod: _PodRun) -> _Failure | None:
        init = pod.stage < len(pod.init_names)
        names = [pod.init_names[pod.stage]] if init else pod.main_names
        codes = {name: pod.processes[name].poll() for name in names}
        failed = [(name, code) for name, code in codes.items() if code not in (None, 0)]
        if failed and (pod.plan.restart_policy == "OnFailure" or None not in codes.values()):
            name, code = failed[0]
            pod.finish(name)
            return _Failure(name, int(code or 0), init)
        if None in codes.values():
            return None
        for name in names:
            pod.finish(name)
        if init:
            pod.stage += 1
            self._start_stage(pod)
            return None
        pod.phase = "Succeeded"
        self.succeeded.add(pod.plan.index or 0)
        self.run.publish()
        return None

    def _failed(self, pod: _PodRun, failure: _Failure) -> None:
        """podFailurePolicy first (its first matching rule wins), then backoffLimit."""
        rule = _matching_rule(self.plan.exit_code_rules, failure)
        if rule is not None and rule.action == "FailJob":
            pod.phase = "Failed"
            self.run.publish()
            self.condition = (
                "Failed",
                "PodFailurePolicy",
                f"Container {failure.container} for pod {self.run.plan.namespace}/{pod.name} "
                f"failed with exit code {failure.code} matching FailJob rule at index "
                f"{rule.position}",
            )
            return
        counted = rule is None or rule.action == "Count"
        if counted:
            self.failures += 1
        limit = self.plan.backoff_limit
        if self.failures > limit:
            pod.phase = "Failed"
            self.run.publish()
            detail = (
                f"{self.failures} failed pod(s); last: pod {pod.name}: {failure}"
                if self.plan.indexed
                else f"pod {pod.name} failed {self.failures} time(s); last: {failure}"
            )
            self.condition = (
                "Failed",
                "BackoffLimitExceeded",
                f"Job has reached the specified backoff limit ({limit}): {detail}",
            )
            return
        used = (
            f"{self.failures} of backoffLimit {limit}"
            if counted or rule is None
            else f"not counted: podFailurePolicy rule {rule.position} Ignore"
        )
        self._retry(pod, failure, used)

    def _retry(self, pod: _PodRun, failure: _Failure, used: str) -> None:
        self.retries += 1
        if pod.plan.restart_policy == "OnFailure":
            self.attempts += 1
            pod.attempts += 1
            self.run.sink.event(
                f"pod {pod.name}: {failure}; restarting the container in place "
                f"(restartPolicy OnFailure, retry {used})"
            )
            pod.start(failure.container)
            return
        self.run.sink.event(
            f"pod {pod.name} failed: {failure}; creating a new pod (restartPolicy Never, "
            f"retry {used})"
        )
        pod.stop(pod.plan.grace_seconds)
        pod.phase = "Failed"
        self._begin_attempt(pod)


def _matching_rule(rules: tuple[ExitCodeRule, ...], failure: _Failure) -> ExitCodeRule | None:
    return next((rule for rule in rules if rule.matches(failure.container, failure.code)), None)


class _Run:
    """One execution of a job: its directory, network, pods, registry and outcome."""

    def __init__(self, job: JobDefinition, plan: ClusterPlan, options: RunOptions) -> None:
        self.job = job
        self.plan = plan
        self.options = options
        self.stream = options.stream or sys.stdout
        self.run_dir = (options.run_dir or _default_run_dir(job.name)).resolve()
        if self.run_dir.exists() and any(self.run_dir.iterdir()):
            raise UserError(f"--run-dir {self.run_dir}: not empty; choose a new directory")
        self.registry = self.run_dir / "pods.json"
        self.hurry = False
        self.run_id = secrets.token_hex(3)
        while Path(f"/sys/class/net/tj-{self.run_id}").exists():
            self.run_id = secrets.token_hex(3)
        mode = self._network_mode()
        pods = [(pod.name, pod.hostname, pod.subdomain, pod.service_names) for pod in plan.pods]
        self.network: NamespaceNetwork | LoopbackNetwork = (
            NamespaceNetwork(self.run_id, plan.namespace, pods)
            if mode == "netns"
            else LoopbackNetwork(pods)
        )
        hosts = {host.pod: host for host in self.network.hosts}
        created = not self.run_dir.exists()
        self.run_dir.mkdir(parents=True, exist_ok=True)
        (self.run_dir / "logs").mkdir()
        self.sink = LogSink(self.stream, self.run_dir / "logs")
        # Building the pods resolves images, env and paths: every user error surfaces here,
        # before anything is started (and the run directory goes again).
        try:
            self.jobs = [
                _JobRun(
                    job_plan, [_PodRun(pod, hosts[pod.name], self) for pod in job_plan.pods], self
                )
                for job_plan in plan.jobs
            ]
            self.workers = [_PodRun(pod, hosts[pod.name], self) for pod in plan.workers]
        except UserError:
            # The directory was new or empty: leave it as it was.
            for child in [self.run_dir] if created else list(self.run_dir.iterdir()):
                shutil.rmtree(child, ignore_errors=True)
            raise
        self.netns_inodes: dict[str, int] = {}

    @property
    def pods(self) -> list[_PodRun]:
        return [*(pod for job in self.jobs for pod in job.pods), *self.workers]

    def _network_mode(self) -> str:
        requested = self.options.network
        why_not = netns_available()
        if requested == "netns" and why_not:
            raise UserError(f"--network netns: unavailable here ({why_not}); use loopback")
        mode = ("loopback" if why_not else "netns") if requested == "auto" else requested
        indexed = next((job.name for job in self.plan.jobs if job.indexed), None)
        if mode == "loopback" and indexed is not None:
            why = why_not if requested == "auto" else "--network loopback was asked for"
            raise UserError(
                f"Job/{indexed} is an Indexed Job: its pods reach each other by their DNS names "
                "(TF_CONFIG, MASTER_ADDR) and need hostnames of their own, which only pod "
                f"network namespaces give, and they are not used here ({why}); run it as root "
                "with iproute2 and util-linux (make system-deps)"
            )
        return mode

    def markers(self, pod: str, container: str) -> dict[str, str]:
        markers = {REGISTRY_ENV: str(self.registry), POD_ENV: pod}
        if container:
            markers[CONTAINER_ENV] = container
        return markers

    def processes(self, pod: str, container: str | None = None) -> list[int]:
        inode = self.netns_inodes.get(pod)
        pids = pod_processes(str(self.registry), pod, {inode} if inode else set())
        if container is None:
            return pids
        wanted = f"\0{CONTAINER_ENV}={container}\0".encode()
        return [pid for pid in pids if wanted in _environ(pid)]

    def publish(self) -> None:
        """Write the registry the kubectl stand-in reads (atomically: it may read any time)."""
        registry = {
            "namespace": self.plan.namespace,
            "nsenter": shutil.which("nsenter") or "nsenter",
            "pods": {pod.name: pod.registry_entry() for pod in self.pods if not pod.deleted},
            "grants": {account: list(map(list, g)) for account, g in self.plan.grants.items()},
        }
        temporary = self.registry.with_suffix(".tmp")
        temporary.write_text(json.dumps(registry, indent=1), encoding="utf-8")
        os.replace(temporary, self.registry)

    # -- the run ---------------------------------------------------------------------------

    def execute(self) -> RunResult:
        started = time.monotonic()
        outcome, reason, message = "Failed", "Error", "the run did not start"
        previous = _install_signal_handlers()
        leftovers: list[str] = []
        try:
            self.sink.event(
                f"running {self.job.kind} {self.job.name}: {len(self.plan.pods)} pod(s) on "
                f"{self.network.mode} network, run directory {self.run_dir}"
            )
            write_manifests(self.job.graph.manifests(), _mkdir(self.run_dir / "manifests"))
            self.publish()
            self.network.up()
            for host in self.network.hosts:
                if host.netns:
                    self.netns_inodes[host.pod] = os.stat(NETNS_RUN / host.netns).st_ino
            outcome, reason, message = self._drive(started)
        except Interrupted as interrupt:
            outcome, reason = "Interrupted", interrupt.signal_name
            message = f"stopped by {interrupt.signal_name}"
        except KeyboardInterrupt:
            outcome, reason, message = "Interrupted", "SIGINT", "stopped by SIGINT"
        except Exception as error:  # a fault of the runtime: still clean up and report it
            outcome, reason, message = "Failed", "Error", f"{type(error).__name__}: {error}"
            for line in traceback.format_exc().splitlines():
                self.sink.event(line)
        finally:
            _install_cleanup_handlers(self)
            try:
                leftovers = self._teardown()
            finally:
                _restore_signal_handlers(previous)
        result = RunResult(
            job=self.job.name,
            outcome=outcome,
            reason=reason,
            message=message,
            exit_code={"Succeeded": 0, "Failed": 1}.get(outcome, 128 + _signal_number(reason)),
            duration_seconds=time.monotonic() - started,
            attempts=sum(job.attempts for job in self.jobs),
            retries=sum(job.retries for job in self.jobs),
            backoff_limit=self.plan.backoff_limit,
            run_dir=self.run_dir,
            run_id=self.run_id,
            network=self.network.mode,
            leftovers=leftovers,
            jobs={job.name: job.status() for job in self.jobs},
        )
        (self.run_dir / "summary.json").write_text(
            json.dumps(result.summary(), indent=2) + "\n", encoding="utf-8"
        )
        self._print_summary(result)
        self.sink.close()
        return result

    def _drive(self, started: float) -> tuple[str, str, str]:
        for worker in self.workers:
            if worker.unschedulable:
                self.sink.event(
                    f"pod {worker.name} stays Pending (Unschedulable): {worker.unschedulable}"
                )
                continue
            self._start_worker(worker)
        completion = self.jobs[0]
        blocked = [pod.unschedulable for pod in completion.pods if pod.unschedulable]
        if blocked:
            return "Failed", "Unschedulable", blocked[0]
        for job in self.jobs:
            job.start()
        while True:
            elapsed = time.monotonic() - started
            for job in self.jobs:
                job.check_deadline(elapsed)
            outcome = self._outcome()
            if outcome is not None:
                return outcome
            self._tend_workers()
            for job in self.jobs:
                if job.condition is None:
                    job.step()
            outcome = self._outcome()
            if outcome is not None:
                return outcome
            time.sleep(POLL_SECONDS)

    def _outcome(self) -> tuple[str, str, str] | None:
        """The completion Job's condition decides; a Failed condition of any other Job fails
        the job too (Kubeflow: any replica's permanent error fails a TFJob or PyTorchJob)."""
        for job in self.jobs:
            if job.condition is None:
                continue
            state, reason, message = job.condition
            if len(self.jobs) > 1:
                message = f"Job {job.name}: {message}"
            if state == "Failed":
                return "Failed", reason, message
            if job is self.jobs[0]:
                return "Succeeded", reason, message
        return None

    def _start_worker(self, worker: _PodRun) -> None:
        worker.create()
        worker.restart_at.clear()
        for name in worker.main_names:
            worker.start(name)
        worker.phase = "Running"
        self.publish()

    def _tend_workers(self) -> None:
        """restartPolicy Always: restart exited containers, recreate a pod whose sandbox died."""
        now = time.monotonic()
        for worker in self.workers:
            if worker.unschedulable or worker.sandbox is None:
                continue
            if not worker.sandbox.alive():
                self.sink.event(f"pod {worker.name} died; recreating it (StatefulSet)")
                worker.kill_everything()
                self._start_worker(worker)
                continue
            for name in worker.main_names:
                process = worker.processes[name]
                code = process.poll()
                if code is None:
                    continue
                if name not in worker.restart_at:
                    worker.finish(name)
                    count = worker.restarts.get(name, 0)
                    delay = min(2.0 ** (count - 1), MAX_RESTART_DELAY_SECONDS) if count else 0.0
                    worker.restart_at[name] = now + delay
                    self.sink.event(
                        f"pod {worker.name}: container {name} exited with code {code}; "
                        f"restarting in {delay:g}s (restartPolicy Always)"
                    )
                if now >= worker.restart_at[name]:
                    del worker.restart_at[name]
                    worker.restarts[name] = worker.restarts.get(name, 0) + 1
                    worker.start(name)

    def _teardown(self) -> list[str]:
        """Stop every Job's pods, scale the StatefulSets to 0, then remove the network.

        Each step runs even if an earlier one failed: the network goes last and always.
        """
        try:
            job_pods = [pod for job in self.jobs for pod in job.pods]
            stopping = [pod for pod in self.pods if pod.sandbox is not None]
            if stopping:
                self.sink.event(self._stopping_message())
            for pod in stopping:
                is_job_pod = pod in job_pods
                if is_job_pod and pod.phase not in ("Succeeded", "Failed"):
                    pod.phase = "Failed"
                pod.stop(0 if self.hurry else pod.plan.grace_seconds)
                # The scale-to-0 deletes StatefulSet pods; a Job's pods stay, as on a cluster.
                pod.deleted = not is_job_pod
            self.publish()
        finally:
            # Processes that escaped their pod (or whose pod never got a sandbox) still carry
            # the run's marker: nothing of the run may outlive it.
            try:
                for _ in range(200):
                    inodes = set(self.netns_inodes.values())
                    pids = pod_processes(str(self.registry), None, inodes)
                    if not pids:
                        break
                    kill_all(pids)
                    time.sleep(0.01)
            finally:
                network_leftovers = self.network.down()
        leftovers = [f"process {pid}" for pid in pod_processes(str(self.registry))]
        return leftovers + network_leftovers

    def _stopping_message(self) -> str:
        statefulsets = sorted({pod.plan.owner.split("/", 1)[1] for pod in self.workers})
        if len(self.jobs) == 1:
            return "stopping the master" + (" and scaling the workers to 0" if statefulsets else "")
        scaled = f" and scaling StatefulSet {', '.join(statefulsets)} to 0" if statefulsets else ""
        return f"stopping the pods of Job {', '.join(job.name for job in self.jobs)}{scaled}"

    def _print_summary(self, result: RunResult) -> None:
        lines = [
            f"=== {result.job}: {result.outcome} ({result.reason}) ===",
            f"message:  {result.message}",
            f"duration: {result.duration_seconds:.1f}s",
            f"retries:  {result.retries} (attempts {result.attempts}, "
            f"backoffLimit {result.backoff_limit})",
            f"run dir:  {result.run_dir} (logs/, summary.json)",
        ]
        if result.leftovers:
            lines.append(f"LEFTOVERS (please report): {', '.join(result.leftovers)}")
        for line in lines:
            self.sink.event(line)


def _signal_number(name: str) -> int:
    return int(signal.Signals[name]) if name in signal.Signals.__members__ else 2


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return b"\0" + handle.read()
    except OSError:
        return b""


def _mkdir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path


_Handlers = dict[int, Any]
_STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum: int, frame: FrameType | None) -> None:
    raise Interrupted(signal.Signals(signum).name)


def _install_signal_handlers() -> _Handlers:
    """SIGINT, SIGTERM and SIGHUP (the terminal went away) end the run through the same
    clean-up; the default action of each would kill the runtime and strand its pods
    (main thread only: Python delivers signals there)."""
    if not _in_main_thread():
        return {}
    previous = {}
    for signum in _STOP_SIGNALS:
        previous[signum] = signal.signal(signum, _raise_interrupted)
    return previous


def _install_cleanup_handlers(run: _Run) -> None:
    if not _in_main_thread():
        return

    def hurry(signum: int, frame: FrameType | None) -> None:
        run.hurry = True

    for signum in _STOP_SIGNALS:
        signal.signal(signum, hurry)


def _restore_signal_handlers(previous: _Handlers) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _in_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()
