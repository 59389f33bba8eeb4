"""`trainjobs run`: execute a job's resource graph on this machine, with Job semantics.

One local pod per replica (see :mod:`trainjobs.local.cluster`), run by a
:class:`~trainjobs.local.pod_runtime.PodRuntime`: by default each pod in its own network
namespace when root (:mod:`trainjobs.local.network`), containers as host processes with
their image paths mapped (:mod:`trainjobs.local.process_runtime`), and the generated assets
(hostfile, rsh agent, cluster waiter, bootstrap script) used exactly as on a cluster, against
the kubectl stand-in (:mod:`trainjobs.local.kubectl`) whose "API server" is ``pods.json`` in
the run directory.

Kubernetes semantics kept, and where they live:

- StatefulSet pods (ChainerJob workers, TFJob parameter servers) start first and are restarted
  when their container exits (restartPolicy Always, with the kubelet's back-off: at once,
  then 10 s doubling to 5 min, see :mod:`trainjobs.local.backoff`), and they are recreated
  if the whole pod dies;
- every Job (:class:`JobRun`) runs a pod per completion index: the ChainerJob master, or
  each index of a TFJob/PyTorchJob replica type's Indexed Job. A pod runs its init containers
  in order (kubectl delivery, then the cluster waiter), then its containers; a failure is
  retried per restartPolicy (Never: a new pod for the index, init containers again;
  OnFailure: the failed container again, in the same pod) until the Job's failures exceed
  ``backoffLimit`` (default 6): Failed, reason BackoffLimitExceeded. ``podFailurePolicy``
  exit-code rules come first: FailJob fails the Job at once (reason PodFailurePolicy: the
  TFJob design's permanent exit codes 1-127), Ignore retries without counting. A retry
  waits as the kubelet's back-off says (the first at once);
- a Job is Complete when every index succeeded, or the indexes its ``successPolicy`` names
  (Kubeflow's "worker 0 decides" when there is no chief);
- ``activeDeadlineSeconds`` counts from the job's start across retries; on expiry the Job's
  pods are stopped: Failed, reason DeadlineExceeded;
- the job succeeds when the Jobs that decide it are Complete (the ChainerJob master, a chief,
  master or worker 0; every worker, or for an elastic job any one); a Failed condition of any
  Job fails the job, as Kubeflow fails a TFJob or PyTorchJob on any replica's permanent error;
- when the outcome is known every other pod is stopped (the scale-to-0);
- stopping a pod sends SIGTERM to each container's main process and, once it exits or after
  ``terminationGracePeriodSeconds`` (default 30), SIGKILL to everything left in the pod;
- pods that request ``nvidia.com/gpu`` stay Pending (Unschedulable): the local node offers
  no GPUs. A pod of a Job that decides the job that cannot be scheduled fails it at once, since
  nothing local could ever make room for it; unschedulable workers are left to the cluster
  waiter, which names them when it gives up.

With ``--runtime container`` the same run drives real pods on a container engine instead
(:mod:`trainjobs.local.container`, the process runtime's sibling behind the same interface).

Nothing leaks: whatever happens (success, failure, deadline, an exception, SIGINT or SIGTERM),
the ``finally`` path stops every pod, kills any process that still carries the run's marker
or sits in one of its namespaces, removes the Secret volumes and the ssh transport's key pair
(:mod:`trainjobs.local.ssh`), and removes namespaces, veths and the bridge; leftovers, if
any, are reported in the summary. A second Ctrl-C during that clean-up skips the grace period
but not the clean-up.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjobs.core.errors import EnvironmentFailure, UserError
from trainjobs.core.jobset import QUEUE_LABEL
from trainjobs.core.manifests import dump_yaml, manifest_filename
from trainjobs.core.phases import JobPhase
from trainjobs.kinds.mpi import ssh_assets
from trainjobs.kinds.registry import JobDefinition
from trainjobs.local import ssh as local_ssh
from trainjobs.local.backoff import RestartBackoff
from trainjobs.local.cluster import ClusterPlan, secret_files
from trainjobs.local.files import inside, new_run_directory, private_directory, write_private
from trainjobs.local.history import default_run_dir, record_end, record_start
from trainjobs.local.job_run import JobRun
from trainjobs.local.kubectl import CALLS_LOG, POD_ENV, REGISTRY_ENV
from trainjobs.local.ledger import Ledger, clean_dead_runs
from trainjobs.local.network import NETNS_RUN
from trainjobs.local.output import TextStream
from trainjobs.local.pod_run import POLL_SECONDS, LocalPod, stop_pods
from trainjobs.local.pod_runtime import PodRuntime
from trainjobs.local.pods import (
    LogSink,
    kill_all,
    pod_processes,
    session_of,
    wait_for_an_exit,
)
from trainjobs.local.results import RunResult, killed_summary
from trainjobs.local.signals import (
    Interrupted,
    install_cleanup_handlers,
    install_signal_handlers,
    restore_signal_handlers,
    signal_number,
)

CONTAINER_ENV = "TRAINJOBS_LOCAL_CONTAINER"
NETWORK_MODES = ("auto", "netns", "loopback")


@dataclass(frozen=True)
class RunOptions:
    run_dir: Path | None = None
    """Where pods' files, logs and the summary go. Default: out/runs/<job>-<timestamp>."""
    network: str = "auto"
    """netns (root), loopback, or auto: netns when available."""
    image_aliases: dict[str, str] = field(default_factory=dict)
    """Undeclared image reference -> declared reference to run it as."""
    stream: TextStream | None = None
    """Where pod output and the summary go. Default: stdout."""
    runtime: str = "process"
    """process (containers as host processes) or container (an engine's pods; see
    :mod:`trainjobs.local.container`)."""
    engine: str | None = None
    """The container runtime's engine: podman or docker; None: whichever answers."""
    command: tuple[str, ...] = ()
    """The command line that asked for the run, kept in run.json and summary.json."""
    pull_secrets: dict[str, dict[str, Any]] = field(default_factory=dict)
    """The image pull Secrets beside the job in its file, by name (container runs' pulls)."""


def clean_up_after_killed_runs(report: Callable[[str], None]) -> bool:
    """Remove what killed runs left (see :mod:`trainjobs.local.ledger`), say what, and write
    each one's ``summary.json``. False if something could not be removed."""
    complete = True
    for dead in clean_dead_runs():
        what = ", ".join(dead.removed) or "nothing was left"
        report(
            f"run {dead.run_id} of job {dead.job} (pid {dead.owner_pid}) ended without cleaning "
            f"up (it was killed or crashed); removed what it left: {what}"
        )
        if dead.failed:
            complete = False
            report(f"run {dead.run_id}: could not remove {', '.join(dead.failed)}")
        summary = Path(dead.run_dir) / "summary.json"
        if Path(dead.run_dir).is_dir() and not summary.exists():
            try:
                record_end(Path(dead.run_dir), json.dumps(killed_summary(dead), indent=2) + "\n")
            except OSError as error:
                report(f"run {dead.run_id}: {summary} not written ({error.strerror})")
    return complete


class Run:
    """One execution of a job: its directory, network, pods, registry and outcome."""

    def __init__(
        self, job: JobDefinition, plan: ClusterPlan, options: RunOptions, runtime: PodRuntime
    ) -> None:
        self.job = job
        self.plan = plan
        self.options = options
        self.runtime = runtime
        self.stream = options.stream or sys.stdout
        self.hurry = False
        self.stopping = False
        self.restart_backoff = RestartBackoff()
        mode = runtime.network_mode(plan)
        ssh_secrets = local_ssh.ssh_secrets(plan.secrets)
        if ssh_secrets:
            runtime.check_ssh_transport(mode)
        self.run_dir = new_run_directory(options.run_dir, default_run_dir(job.name))
        self.registry = self.run_dir / "pods.json"
        self.netns_inodes: dict[str, int] = {}
        try:
            self.ledger = Ledger.open(
                job.name, self.run_dir, lambda run_id: Path(f"/sys/class/net/tj-{run_id}").exists()
            )
        except BaseException:
            _empty(self.run_dir, options.run_dir is None)
            raise
        self.run_id = self.ledger.run_id
        pods = [(pod.name, pod.hostname, pod.subdomain, pod.service_names) for pod in plan.pods]
        # Building the pods resolves images, env and paths: every user error surfaces here,
        # before anything is started (and the run directory goes again).
        try:
            self.ledger.record("temporary-files", directory=str(self.run_dir))
            self.network = runtime.make_network(self, mode, pods)
            hosts = {host.pod: host for host in self.network.hosts}
            self.sink = LogSink(self.stream, private_directory(self.run_dir / "logs"))
            # The ssh transport's key pair: made for this run, removed when it ends (or by
            # the clean-up after it, if it is killed: the ledger lists where its copies go).
            if ssh_secrets:
                self.ledger.record(
                    "ssh-keys",
                    directories=[str(self.run_dir / "ssh"), *self._secret_volumes()],
                )
            self.keys = (
                local_ssh.RunKeys(self.run_dir, job.name, ssh_assets.host_key_alias(job.name))
                if ssh_secrets
                else None
            )
            # The Secrets given beside the job hold their data; the ssh key pair is made here.
            self.secret_files = {
                name: secret_files(secret)
                for name, secret in plan.secrets.items()
                if name not in ssh_secrets
            }
            self.secret_files.update(
                {name: self.keys.files for name in ssh_secrets if self.keys is not None}
            )
            self.jobs = [
                JobRun(
                    job_plan,
                    [runtime.make_pod(self, pod, hosts[pod.name]) for pod in job_plan.pods],
                    self,
                )
                for job_plan in plan.jobs
            ]
            self.workers = [runtime.make_pod(self, pod, hosts[pod.name]) for pod in plan.workers]
        except (UserError, KeyboardInterrupt):  # Ctrl-C before anything started: no trace
            self._abandon(options.run_dir is None)
            raise
        except OSError as error:
            self._abandon(options.run_dir is None)
            raise EnvironmentFailure(
                f"cannot prepare the run directory {self.run_dir}: {_describe(error)}"
            ) from None

    def _secret_volumes(self) -> list[str]:
        """Where the pods' Secret volumes will hold copies of the run's key pair."""
        return [
            str(inside(self.run_dir, "pods", pod.name, "volumes", volume["name"]))
            for pod in self.plan.pods
            for volume in pod.spec.get("volumes") or []
            if volume.get("secret") is not None
        ]

    def _abandon(self, created: bool) -> None:
        """Before anything started: leave the run directory as it was, and no ledger."""
        self.runtime.abandon()
        _empty(self.run_dir, created)
        self.ledger.close()

    @property
    def pods(self) -> list[LocalPod]:
        return [*(pod for job in self.jobs for pod in job.pods), *self.workers]

    def markers(self, pod: str, container: str) -> dict[str, str]:
        markers = {REGISTRY_ENV: str(self.registry), POD_ENV: pod}
        if container:
            markers[CONTAINER_ENV] = container
        return markers

    def processes(self, pod: str, container: str | None = None) -> list[int]:
        inode = self.netns_inodes.get(pod)
        sessions = self.sessions(pod, container)
        pids = pod_processes(str(self.registry), pod, {inode} if inode else set(), sessions)
        if container is None:
            return pids
        wanted = f"\0{CONTAINER_ENV}={container}\0".encode()
        return [pid for pid in pids if wanted in _environ(pid) or session_of(pid) in sessions]

    def sessions(self, pod: str | None = None, container: str | None = None) -> set[int]:
        """The sessions of the run's container processes (of one pod, one container)."""
        return {
            process.pid
            for each in self.pods
            if pod is None or each.name == pod
            for name, started in each.processes.items()
            if (container is None or name == container)
            and (process := getattr(started, "process", None)) is not None
        }

    def publish(self) -> None:
        """Write the registry the kubectl stand-in reads (atomically: it may read any time)."""
        registry = {
            "namespace": self.plan.namespace,
            "nsenter": shutil.which("nsenter") or "nsenter",
            "pods": {pod.name: pod.registry_entry() for pod in self.pods if not pod.deleted},
            "grants": {account: list(map(list, g)) for account, g in self.plan.grants.items()},
        }
        try:
            write_private(self.registry, json.dumps(registry, indent=1))
        except OSError:
            # While stopping, the registry only answers kubectl calls that no longer matter;
            # the pods must still be stopped and the network removed.
            if not self.stopping:
                raise

    # -- the run ---------------------------------------------------------------------------

    def execute(self) -> RunResult:
        self.runtime.report_cleanup(self.sink)
        started = time.monotonic()
        outcome, reason, message = JobPhase.FAILED, "Error", "the run did not start"
        previous = install_signal_handlers()
        leftovers: list[str] = []
        identity: dict[str, Any] = {}
        try:
            identity = record_start(self.run_dir, self.job, self.run_id, self.options.command)
            self.sink.event(
                f"running {self.job.kind} {self.job.name}: {len(self.plan.pods)} pod(s) on "
                f"{self.network.mode} network, run directory {self.run_dir}"
            )
            for node in self.job.graph.nodes:
                queue = (node.manifest["metadata"].get("labels") or {}).get(QUEUE_LABEL)
                if node.kind == "JobSet" and queue is not None:
                    self.sink.event(
                        f"JobSet {node.name}: on a cluster Kueue admits it whole from queue "
                        f"{queue}; here its Jobs start as the JobSet controller creates them"
                    )
            self._write_manifests()
            self.publish()
            if self.keys is not None:
                local_ssh.prepare_sshd()
            self.network.up(self.ledger)
            for host in self.network.hosts:
                if host.netns:
                    self.netns_inodes[host.pod] = os.stat(NETNS_RUN / host.netns).st_ino
            # Listed after the network, so a killed run's clean-up stops them first.
            self.ledger.record(
                "processes",
                marker=str(self.registry),
                netns=[host.netns for host in self.network.hosts if host.netns],
            )
            outcome, reason, message = self._drive(started)
        except Interrupted as interrupt:
            outcome, reason = JobPhase.INTERRUPTED, interrupt.signal_name
            message = f"stopped by {interrupt.signal_name}"
        except KeyboardInterrupt:
            outcome, reason, message = JobPhase.INTERRUPTED, "SIGINT", "stopped by SIGINT"
        except OSError as error:  # the machine refused (a full disk): say so, no traceback
            outcome, reason, message = JobPhase.FAILED, "Error", _describe(error)
        except UserError as error:  # a spec problem only a running pod reveals
            # A runtime may name the kubelet's reason (CreateContainerConfigError).
            outcome, reason, message = (
                JobPhase.FAILED,
                getattr(error, "reason", "Error"),
                str(error),
            )
        except Exception as error:  # a fault of the runtime: still clean up and report it
            outcome, reason, message = JobPhase.FAILED, "Error", f"{type(error).__name__}: {error}"
            for line in traceback.format_exc().splitlines():
                self.sink.event(line)
        finally:
            install_cleanup_handlers(self._hurry)
            self.stopping = True
            try:
                leftovers = self._teardown()
            finally:
                restore_signal_handlers(previous)
        result = RunResult(
            job=self.job.name,
            outcome=outcome,
            reason=reason,
            message=message,
            exit_code={JobPhase.SUCCEEDED: 0, JobPhase.FAILED: 1}.get(
                outcome, 128 + signal_number(reason)
            ),
            duration_seconds=time.monotonic() - started,
            # The completion Job's, whose backoffLimit they are counted against; every Job's
            # own counts are under "jobs".
            attempts=self._completion_job.attempts,
            retries=self._completion_job.retries,
            backoff_limit=self.plan.backoff_limit,
            run_dir=self.run_dir,
            run_id=self.run_id,
            network=self.network.mode,
            leftovers=leftovers,
            jobs={job.name: job.status() for job in self.jobs},
            api_calls=self._api_calls(),
        )
        if not leftovers:
            self.ledger.close()
        self._print_summary(result)
        summary = json.dumps({**result.summary(), **identity}, indent=2) + "\n"
        try:
            record_end(self.run_dir, summary)
        except OSError as error:
            self.sink.event(f"summary.json not written: {_describe(error)}")
        self.sink.close()
        return result

    @property
    def _completion_job(self) -> JobRun:
        return next(job for job in self.jobs if job.name == self.plan.completion.name)

    def _write_manifests(self) -> None:
        directory = private_directory(self.run_dir / "manifests")
        for index, manifest in enumerate(self.job.graph.manifests(), start=1):
            path = inside(directory, manifest_filename(index, manifest))
            write_private(path, dump_yaml(manifest))

    def _drive(self, started: float) -> tuple[JobPhase, str, str]:
        held = self._gang_held()
        if held is not None:
            return JobPhase.FAILED, "Unschedulable", held
        deciding = [job for job in self.jobs if job.name in self.plan.success_jobs]
        blocked = [pod.unschedulable for job in deciding for pod in job.pods if pod.unschedulable]
        # Every pod created now; a Job's too unless a deciding pod cannot be (then the run
        # fails once the workers were started, and no Job pod is made).
        first = [*self.workers, *(pod for job in self.jobs for pod in job.pods if not blocked)]
        self.runtime.provision([pod for pod in first if not pod.unschedulable])
        for worker in self.workers:
            if worker.unschedulable:
                self.sink.event(
                    f"pod {worker.name} stays Pending (Unschedulable): {worker.unschedulable}"
                )
                continue
            self._start_worker(worker)
        if blocked:
            return JobPhase.FAILED, "Unschedulable", blocked[0]
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
            wait_for_an_exit(
                [process for pod in self.pods for process in pod.processes.values()],
                POLL_SECONDS,
            )

    def _gang_held(self) -> str | None:
        """A gang scheduler starts the job's pods together or not at all: with fewer than
        ``minMember`` pods placeable (GPU pods are not, locally) none starts."""
        needed = self.job.gang_min_member
        placeable = [pod for pod in self.pods if not pod.unschedulable]
        if needed is None or len(placeable) >= needed:
            return None
        held = [pod.name for pod in self.pods if pod.unschedulable]
        return (
            f"the job's PodGroup needs {needed} pods placed together and only "
            f"{len(placeable)} can be placed here (the local node offers no GPUs, which "
            f"{', '.join(held)} request); no pod was started, as a gang scheduler holds them all"
        )

    def _outcome(self) -> tuple[JobPhase, str, str] | None:
        """A Failed condition of any Job fails the job (Kubeflow: any replica's permanent error
        fails a TFJob or PyTorchJob); it succeeds once every deciding Job is Complete (or any
        one, for an elastic job)."""

        def described(job: JobRun) -> tuple[str, str, str]:
            state, reason, message = job.condition or ("", "", "")
            return state, reason, f"Job {job.name}: {message}" if len(self.jobs) > 1 else message

        for job in self.jobs:
            if job.condition is not None and job.condition[0] == "Failed":
                return (JobPhase.FAILED, *described(job)[1:])
        deciding = [job for job in self.jobs if job.name in self.plan.success_jobs]
        done = [job for job in deciding if job.condition is not None]
        if done and (self.plan.success_any or len(done) == len(deciding)):
            return (JobPhase.SUCCEEDED, *described(done[-1])[1:])
        return None

    def _start_worker(self, worker: LocalPod) -> None:
        worker.create()
        worker.restart_at.clear()
        for name in worker.main_names:  # a new pod: its containers start with no back-off
            self.restart_backoff.forget((worker.name, name))
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
                    worker.restart_at[name] = self.restart_backoff.exited((worker.name, name), now)
                    delay = worker.restart_at[name] - now
                    self.sink.event(
                        f"pod {worker.name}: container {name} exited with code {code}; "
                        f"restarting in {delay:g}s (restartPolicy Always)"
                    )
                if now >= worker.restart_at[name]:
                    del worker.restart_at[name]
                    worker.restarts[name] = worker.restarts.get(name, 0) + 1
                    worker.start(name)

    def _hurry(self) -> None:
        self.hurry = True

    def _teardown(self) -> list[str]:
        """Stop every Job's pods, scale the StatefulSets to 0, remove the network, then what
        the runtime made besides (each step runs even if an earlier one failed)."""
        left: list[str] = []
        try:
            left = self._stop_everything()
        finally:
            left += self.runtime.close()
        return left

    def _stop_everything(self) -> list[str]:
        """Stop every Job's pods, scale the StatefulSets to 0, then remove the network.

        Each step runs even if an earlier one failed: the network goes last and always.
        """
        try:
            job_pods = [pod for job in self.jobs for pod in job.pods]
            stopping = [pod for pod in self.pods if pod.sandbox is not None]
            if stopping:
                self.sink.event(self._stopping_message(stopping))
            for pod in stopping:
                if pod in job_pods and pod.phase not in ("Succeeded", "Failed"):
                    pod.phase = "Failed"
            stop_pods(stopping, lambda pod: pod.plan.grace_seconds)
            for pod in stopping:
                # The scale-to-0 deletes StatefulSet pods; a Job's pods stay, as on a cluster,
                # unless cleanPodPolicy All removes every pod of the finished job.
                pod.deleted = pod not in job_pods or self.job.clean_pod_policy == "All"
            self.publish()
        finally:
            # Processes that escaped their pod (or whose pod never got a sandbox) still carry
            # the run's marker: nothing of the run may outlive it.
            try:
                for _ in range(200):
                    inodes = set(self.netns_inodes.values())
                    pids = pod_processes(str(self.registry), None, inodes, self.sessions())
                    if not pids:
                        break
                    kill_all(pids)
                    time.sleep(0.01)
            finally:
                try:
                    secret_leftovers = self._remove_secrets()
                finally:
                    network_leftovers = self.network.down()
        leftovers = [
            f"process {pid}"
            for pid in pod_processes(str(self.registry), None, set(), self.sessions())
        ]
        return leftovers + secret_leftovers + network_leftovers

    def _api_calls(self) -> dict[str, int]:
        """The kubectl stand-in's count of requests, by verb and resource."""
        log = self.run_dir / CALLS_LOG
        lines = log.read_text(encoding="utf-8").splitlines() if log.exists() else []
        return dict(sorted(Counter(" ".join(line.split()[1:3]) for line in lines).items()))

    def _remove_secrets(self) -> list[str]:
        """Secret volumes and the run's key pair go once no process can read them."""
        left = [item for pod in self.pods for item in pod.remove_secret_volumes()]
        return left + (self.keys.remove() if self.keys is not None else [])

    def _stopping_message(self, stopping: list[LocalPod]) -> str:
        """What the end of the run does to the pods, by the job's cleanPodPolicy."""
        if self.job.clean_pod_policy == "None":
            running = [pod.name for pod in stopping if pod.phase in ("Pending", "Running")]
            if running:
                return (
                    f"cleanPodPolicy None: on a cluster pod(s) {', '.join(running)} would keep "
                    "running after the job ends; a local run stops them as it exits"
                )
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


def _environ(pid: int) -> bytes:
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            return b"\0" + handle.read()
    except OSError:
        return b""


def _describe(error: OSError) -> str:
    """An OS error as one line: what could not be done to which file."""
    where = f"{error.filename}: " if error.filename else ""
    return f"cannot write {where}{error.strerror or error}"


def _empty(directory: Path, created: bool) -> None:
    """Remove what a run put in ``directory`` (and the directory itself if it made it)."""
    for child in [directory] if created else list(directory.iterdir()):
        if child.is_dir() and not child.is_symlink():
            shutil.rmtree(child, ignore_errors=True)
        else:
            child.unlink(missing_ok=True)
