"""One pod of a local run: its sandbox, its container processes and the status kubectl reads."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from trainjobs.core.errors import UserError
from trainjobs.core.pod_template import GPU_RESOURCE
from trainjobs.images import catalogue
from trainjobs.local import containers
from trainjobs.local.cluster import PodPlan
from trainjobs.local.files import inside
from trainjobs.local.network import PodHost
from trainjobs.local.pods import ContainerProcess, ProcessSpec, Sandbox, kill_all
from trainjobs.local.run_context import RunContext

POLL_SECONDS = 0.05
# Local pods share this machine's cores, but Open MPI sees one node per pod and would
# busy-poll on each: ranks must yield, or 3 ranks on 2 cores crawl.
SHARED_CORES_ENV = {"OMPI_MCA_mpi_yield_when_idle": "1"}


class LiveSandbox(Protocol):
    """What holds a pod's namespaces: a sandbox process, or an engine pod's infra process."""

    def alive(self) -> bool: ...


class LocalPod:
    """What every local pod has, whichever runtime runs its containers: its plan, phase and
    restart bookkeeping, and its volumes (checked, written fresh for each new pod, secrets
    removed with it); and the lifecycle the run drives (create, start, finish, stop)."""

    sandbox: LiveSandbox | None
    """None until the pod is first created."""

    def __init__(self, plan: PodPlan, host: PodHost, run: RunContext) -> None:
        self.plan = plan
        self.host = host
        self.run = run
        self.name = plan.name
        self.phase = "Pending"
        self.directory = inside(run.run_dir, "pods", plan.name)
        self.volume_dirs = {
            volume["name"]: inside(self.directory, "volumes", volume["name"])
            for volume in plan.spec.get("volumes") or []
        }
        self.init_names = [c["name"] for c in plan.spec.get("initContainers") or []]
        self.main_names = [c["name"] for c in plan.spec["containers"]]
        if self.init_names and plan.restart_policy == "Always":
            raise UserError(
                f"{plan.owner}: init containers on workers are not supported by local runs"
            )
        self._check_volumes()
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

    def _pod_context(self) -> containers.PodContext:
        """What a container's env may refer to (fieldRef, configMapKeyRef)."""
        return containers.PodContext(
            pod=self.name,
            namespace=self.run.plan.namespace,
            address=self.host.address,
            node="localhost",
            service_account=self.plan.spec.get("serviceAccountName") or "default",
            labels=self.plan.labels,
            annotations=self.plan.annotations,
            config_maps=self.run.plan.config_maps,
            secrets=self.run.secret_files,
        )

    def running(self, container: str) -> bool:
        process = self.processes.get(container)
        return process is not None and process.poll() is None

    def create(self) -> None:
        """A fresh pod: new volumes (emptyDirs start empty), a new sandbox."""
        raise NotImplementedError

    def start(self, container: str) -> None:
        raise NotImplementedError

    def finish(self, container: str) -> None:
        """After a container's main process exited: collect its output."""
        raise NotImplementedError

    def registry_entry(self) -> dict[str, Any]:
        """The pod as the kubectl stand-in reports it."""
        raise NotImplementedError

    def terminate(self) -> None:
        """SIGTERM each running container's main process."""
        raise NotImplementedError

    def kill_everything(self) -> None:
        """End every process of the pod at once, as a node does when a pod is deleted."""
        raise NotImplementedError

    @classmethod
    def kill_together(cls, pods: Sequence[LocalPod]) -> None:
        """:meth:`kill_everything` for several pods of one run; a runtime whose pods take a
        while each to remove (the container runtime's) removes them at once."""
        for pod in pods:
            pod.kill_everything()

    def stop(self, grace: float) -> None:
        """SIGTERM the containers, wait up to ``grace``, then kill everything in the pod."""
        stop_pods([self], lambda pod: grace)

    def _check_volumes(self) -> None:
        """Only configMap, emptyDir and secret volumes of the job's own Secrets or those given
        beside it exist locally."""
        for index, volume in enumerate(self.plan.spec.get("volumes") or []):
            if volume.get("configMap") is not None:
                source = volume["configMap"]
                data = self.run.plan.config_maps.get(source["name"])
                if data is None:
                    raise UserError(
                        f"{self.plan.owner}: volumes[{index}] names ConfigMap "
                        f"{source['name']!r}, which the job does not create"
                    )
                for position, item in enumerate(source.get("items") or []):
                    if item["key"] not in data:
                        raise UserError(
                            f"{self.plan.owner}: volumes[{index}].configMap.items[{position}]"
                            f".key: {item['key']!r} is not a key of ConfigMap "
                            f"{source['name']} (it has {', '.join(sorted(data))})"
                        )
            elif volume.get("secret") is not None:
                if volume["secret"].get("secretName") not in self.run.secret_files:
                    raise UserError(
                        f"{self.plan.owner}: volumes[{index}] names Secret "
                        f"{volume['secret'].get('secretName')!r}, which the job does not create"
                    )
            elif volume.get("emptyDir") is None:
                kinds = sorted(set(volume) - {"name"})
                raise UserError(
                    f"{self.plan.owner}: volumes[{index}] ({volume['name']}): {kinds} volumes "
                    "are not supported by local runs (configMap, emptyDir and the job's own "
                    "Secrets are)"
                )

    def _write_volumes(self, modes: dict[str, int | None]) -> None:
        """Each volume's directory made anew (emptyDirs start empty), ConfigMap and Secret
        files written with their ``defaultMode`` and ``items``; ``modes`` maps a volume type
        to the directory's own mode (``None``: left as made)."""
        for volume in self.plan.spec.get("volumes") or []:
            target = self.volume_dirs[volume["name"]]
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir(parents=True)
            kind = next((k for k in ("configMap", "secret") if volume.get(k) is not None), None)
            if kind is not None:
                source = volume[kind]
                files = (
                    self.run.plan.config_maps[source["name"]]
                    if kind == "configMap"
                    else self.run.secret_files[source["secretName"]]
                )
                containers.materialise_config_map(
                    target,
                    files,
                    0o644 if source.get("defaultMode") is None else source["defaultMode"],
                    source.get("items"),
                )
            mode = modes[kind or "emptyDir"]
            if mode is not None:
                target.chmod(mode)

    def remove_secret_volumes(self) -> list[str]:
        """Secret data lives as long as the run: delete it once the pod is gone."""
        left = []
        for volume in self.plan.spec.get("volumes") or []:
            if "secret" in volume:
                target = self.volume_dirs[volume["name"]]
                shutil.rmtree(target, ignore_errors=True)
                if target.exists():
                    left.append(f"secret volume {target}")
        return left


def stop_pods(pods: Sequence[LocalPod], grace: Callable[[LocalPod], float]) -> None:
    """Stop pods together, as the kubelets do: SIGTERM every container, wait until each pod
    has exited or its own ``grace`` has passed (a second Ctrl-C cuts it short), then kill
    whatever is left."""
    for pod in pods:
        pod.terminate()
    start = time.monotonic()
    waiting = list(pods)
    while waiting:
        now = time.monotonic()
        done = [
            pod
            for pod in waiting
            if not any(pod.running(name) for name in pod.processes)
            or (pod.run.hurry or now - start >= grace(pod))
        ]
        if done:
            type(done[0]).kill_together(done)
        waiting = [pod for pod in waiting if pod not in done]
        if waiting:
            time.sleep(POLL_SECONDS)


class PodRun(LocalPod):
    """One pod of the process runtime: its sandbox, its container processes and the status
    kubectl reports."""

    def __init__(
        self, plan: PodPlan, host: PodHost, run: RunContext, image_aliases: dict[str, str]
    ) -> None:
        super().__init__(plan, host, run)
        self.image_aliases = image_aliases
        # Directories must exist for PathMap to know they are directories.
        for path in self.volume_dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        self.specs = {
            container["name"]: self._process_spec(group, index, container)
            for group in ("initContainers", "containers")
            for index, container in enumerate(plan.spec.get(group) or [])
        }
        self.sandbox: Sandbox | None = None

    def _process_spec(self, group: str, index: int, container: dict[str, Any]) -> ProcessSpec:
        where = f"{self.plan.owner} pod template spec.{group}[{index}]"
        image = catalogue.resolve(container["image"], self.image_aliases)
        context = self._pod_context()
        base = {
            # The image's local virtualenv stands in for its python3 (see Image.local_bin).
            "PATH": f"{image.local_bin}:/usr/local/sbin:/usr/local/bin:"
            "/usr/sbin:/usr/bin:/sbin:/bin",
            "HOME": os.environ.get("HOME", "/root"),
            "LANG": os.environ.get("LANG", "C.UTF-8"),
            "HOSTNAME": self.plan.hostname,
            **SHARED_CORES_ENV,
            **self.plan.controller_env,
        }
        env = containers.container_env(container, image.env, base, context, where)
        paths = containers.path_map(container, image, self.volume_dirs, where)
        env = {name: paths.rewrite(value) for name, value in env.items()}
        env.update(self.run.markers(self.name, container["name"]))
        argv = containers.container_argv(container, image, env, paths, where)
        containers.check_command(argv, env, image, where)
        workdir = inside(self.directory, "containers", container["name"])
        if container.get("workingDir"):
            if "\0" in container["workingDir"]:
                raise UserError(f"{where}.workingDir: a path cannot hold a NUL character")
            workdir = paths.host(container["workingDir"]) or workdir
        return ProcessSpec(argv=argv, env=env, cwd=workdir)

    # -- lifecycle -------------------------------------------------------------------------

    def create(self) -> None:
        """A fresh pod: new volumes (emptyDirs start empty), a new sandbox."""
        self.phase = "Pending"
        # Secret files stay private to this machine's root: the process runs as root.
        self._write_volumes({"configMap": None, "secret": 0o700, "emptyDir": None})
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

    def finish(self, container: str) -> None:
        """After a container's main process exited: end what it started, collect its output."""
        kill_all(self.run.processes(self.name, container))
        self.processes[container].reap()
        self.run.publish()

    def terminate(self) -> None:
        for process in self.processes.values():
            process.terminate()

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
            "netns": self.run.netns_inodes.get(self.name),
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
