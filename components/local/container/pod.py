"""One pod of a container run: an engine pod, a container per container, its volumes.

What a pod template becomes on the engine, as the kubelet would make it:

- the pod: the engine's pod (infra container) with the pod's hostname and address;
- each container: the job's image with Kubernetes' rules for ``command`` (replaces the
  ENTRYPOINT and drops CMD) and ``args`` (replace CMD); ``$(VAR)`` expansion; ``env`` with
  ``fieldRef`` and ``configMapKeyRef`` sources (the image's own ENV stays underneath, as the
  engine keeps it), from a private env file only; ``workingDir``; and from ``securityContext``
  (container, then pod) ``runAsUser``/``runAsGroup``, ``readOnlyRootFilesystem`` and
  ``capabilities`` (every other one dropped, :mod:`trainjobs.local.pod_security`), always with
  ``no_new_privs`` (``allowPrivilegeEscalation: false``);
- volumes: ``configMap`` (the ConfigMap's files, read-only, ``defaultMode`` and ``items``), the
  job's own ``secret`` volumes (the ssh transport's key pair, made for the run and removed with
  it) and ``emptyDir`` (an empty directory every container may write, fresh for each new pod),
  bind-mounted from the pod's directory in the run directory, ``subPath`` and ``readOnly`` kept;
- the pod's service account: with a token mounted, the API stand-in's socket appears where the
  token would (:mod:`trainjobs.local.container.kubectl`); without one, nothing does;
- ``/etc/hosts`` and ``/etc/resolv.conf``: the run's (:mod:`trainjobs.local.container.network`).

Not reproduced: resource limits and requests (GPUs aside: such pods stay Pending), probes,
other volume types and env sources (refused up front, naming the field).
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import (
    ContainerRequest,
    Engine,
    Mount,
    PodRequest,
    env_file_text,
    env_problem,
    path_problem,
)
from trainjobs.engines.owners import start_time
from trainjobs.local import containers
from trainjobs.local.cluster import PodPlan
from trainjobs.local.container import subpath
from trainjobs.local.container.api import ApiServer
from trainjobs.local.container.kubectl import SERVICE_ACCOUNT_DIR
from trainjobs.local.container.network import ContainerNetwork
from trainjobs.local.container.non_root import ContainerConfigError, non_root_problem
from trainjobs.local.container.volumes import mount_limited, remove_pod_volumes, size_limit
from trainjobs.local.files import inside, write_private
from trainjobs.local.network import PodHost
from trainjobs.local.pod_run import SHARED_CORES_ENV, LocalPod
from trainjobs.local.pod_security import capabilities
from trainjobs.local.pods import ContainerProcess, ProcessSpec
from trainjobs.local.run_context import RunContext

CREATING_AT_ONCE = 8
"""Pod sandboxes created at once: enough for a job's pods to overlap their engine calls (each
waits mostly on the engine's locks and the network setup), few enough not to swamp it."""


def create_sandboxes(engine: Engine, requests: Sequence[PodRequest]) -> dict[str, int]:
    """Independent pods' sandboxes, created together; each one's infra PID by pod name.

    Every creation is waited for before a failure is raised, so that none is still being made
    while the run tears down (it could not remove what it does not see yet)."""
    if len(requests) <= 1:
        return {request.name: engine.create_pod(request) for request in requests}
    with ThreadPoolExecutor(max_workers=min(len(requests), CREATING_AT_ONCE)) as pool:
        created = {request.name: pool.submit(engine.create_pod, request) for request in requests}
    return {name: future.result() for name, future in created.items()}


@dataclasses.dataclass(frozen=True)
class EngineRun:
    """What a container run's pods share on the engine
    (:class:`trainjobs.local.container.runtime.ContainerRuntime` makes it)."""

    engine: Engine
    images: dict[str, str]
    """The job's image references -> the local images that run them."""
    labels: dict[str, str]
    """The run's id and owner, on every object the run creates (:mod:`.cleanup`)."""
    network: ContainerNetwork
    api: ApiServer
    recorded_pods: set[str] = dataclasses.field(default_factory=set)
    """Engine pods already in the ledger (a pod made again is recorded once)."""


class PodSandbox:
    """The engine pod's infra process: alive while the pod's namespaces exist."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.starttime = start_time(pid)

    def alive(self) -> bool:
        return self.starttime is not None and start_time(self.pid) == self.starttime

    def wrap(self, spec: ProcessSpec) -> list[str]:
        """The engine client runs on the host; the container is the engine's business."""
        return spec.argv


class ContainerPodRun(LocalPod):
    """One pod on the engine, with the interface :class:`~trainjobs.local.job_run.JobRun`
    and the run drive (create, start, finish, stop) that the process runtime's pods have."""

    def __init__(self, plan: PodPlan, host: PodHost, run: RunContext, on_engine: EngineRun) -> None:
        self.on_engine = on_engine
        super().__init__(plan, host, run)
        self.engine_name = f"{on_engine.network.name}-{plan.name}"
        self.sub_paths: dict[str, list[tuple[str, Path, str, Path]]] = {}
        """Container -> (field, volume directory, subPath, staging path): mounted at each
        start (:mod:`.subpath`)."""
        self.volumes_recorded = False
        self.requests = {
            container["name"]: self._request(group, index, container)
            for group in ("initContainers", "containers")
            for index, container in enumerate(plan.spec.get(group) or [])
        }
        self.sandbox: PodSandbox | None = None
        self.provisioned: int | None = None
        """The infra PID of an engine pod made ahead (:meth:`ContainerRuntime.provision`), which
        the next :meth:`create` takes instead of making one."""

    # -- what each container becomes ---------------------------------------------------------

    def _request(
        self, group: str, index: int, container: dict[str, Any]
    ) -> tuple[ContainerRequest, dict[str, str]]:
        """The engine request and the resolved env (written to its env file at create)."""
        where = f"{self.plan.owner} pod template spec.{group}[{index}]"
        context = self._pod_context()
        base = {**SHARED_CORES_ENV, **self.plan.controller_env}
        env = containers.container_env(container, {}, base, context, where)
        command = container.get("command")
        args = container.get("args") or []
        expanded = tuple(containers.expand_variables(str(arg), env) for arg in args)
        entrypoint = (
            tuple(containers.expand_variables(str(arg), env) for arg in command)
            if command
            else None
        )
        _check_env(container, env, where)
        security = _security(self.plan.spec, container)
        name = container["name"]
        return ContainerRequest(
            name=f"{self.engine_name}-{name}",
            pod=self.engine_name,
            # Pods that cannot be scheduled here never start: their images are not resolved.
            image=self.on_engine.images.get(container["image"], container["image"]),
            entrypoint=entrypoint,
            args=expanded,
            env_file=inside(self.directory, "env", f"{name}.env"),
            mounts=self._mounts(container, where),
            workdir=container.get("workingDir"),
            labels=self.on_engine.labels,
            **security,
        ), env

    def _mounts(self, container: dict[str, Any], where: str) -> tuple[Mount, ...]:
        mounts = [
            Mount(self.on_engine.network.hosts_path, "/etc/hosts", read_only=True),
            Mount(self.on_engine.network.resolv_path, "/etc/resolv.conf", read_only=True),
        ]
        if self.plan.service_account is not None:
            mounts.append(Mount(self.on_engine.api.directory(self.name), SERVICE_ACCOUNT_DIR, True))
        volumes = {v["name"]: v for v in self.plan.spec.get("volumes") or []}
        for index, mount in enumerate(container.get("volumeMounts") or []):
            source = self.volume_dirs.get(mount["name"])
            if source is None:
                raise UserError(
                    f"{where}.volumeMounts[{index}]: volume {mount['name']!r} is not defined"
                )
            problem = path_problem(mount["mountPath"]) or _covers_own_mount(mount["mountPath"])
            if problem is not None:
                raise UserError(
                    f"{where}.volumeMounts[{index}].mountPath: {mount['mountPath']!r} {problem}"
                )
            if mount.get("subPath"):
                source = self._sub_path(container["name"], index, mount, source, where)
            # configMap and secret volumes are always mounted read-only by the kubelet.
            volume = volumes[mount["name"]]
            read_only = bool(mount.get("readOnly")) or "configMap" in volume or "secret" in volume
            mounts.append(Mount(source, mount["mountPath"], read_only))
        return tuple(mounts)

    def _sub_path(
        self, container: str, index: int, mount: dict[str, Any], volume: Path, where: str
    ) -> Path:
        """The staging path the engine mounts for a subPath (:mod:`.subpath`)."""
        field = f"{where}.volumeMounts[{index}].subPath"
        # Validation refused '..' and absolute paths; the mount at start refuses any link out.
        inside(volume, mount["subPath"])
        if os.geteuid() != 0:
            raise UserError(
                f"{field}: {mount['subPath']!r}: a container run mounts a subPath through an "
                "open descriptor, as the kubelet does (a path could be swapped for a link "
                "before the engine mounts it), which needs root: run as root, or use "
                "--runtime process"
            )
        staging = subpath.staging_path(self.directory, mount["name"], container, index)
        self.sub_paths.setdefault(container, []).append((field, volume, mount["subPath"], staging))
        return staging

    # -- lifecycle -----------------------------------------------------------------------------

    def create(self) -> None:
        """A fresh pod: new volumes (emptyDirs start empty), env files, a new engine pod."""
        self.phase = "Pending"
        # Files keep the volume's mode (the ssh key: 0400), readable in the container by
        # its owner only, as the kubelet writes them; an emptyDir is writable by whichever
        # user a container runs as.
        self._record_volumes()
        for directory in self._empty_dirs().values():
            subpath.detach(directory)  # the previous pod's size-limited tmpfs
        self._write_volumes({"configMap": 0o755, "secret": 0o755, "emptyDir": 0o777})
        for volume in self.plan.spec.get("volumes") or []:
            size = size_limit(volume) if "emptyDir" in volume else None
            if size is not None:
                mount_limited(self.volume_dirs[volume["name"]], size)
        if self.plan.service_account is not None:
            self.on_engine.api.listen(self)
        env_dir = self.directory / "env"
        env_dir.mkdir(parents=True, exist_ok=True)
        env_dir.chmod(0o700)
        for request, env in self.requests.values():
            _write_env_file(request.env_file, env)
        if self.provisioned is not None:
            pid, self.provisioned = self.provisioned, None
        else:
            self.record()
            pid = self.on_engine.engine.create_pod(self.pod_request())
        self.sandbox = PodSandbox(pid)
        self.run.publish()

    def _empty_dirs(self) -> dict[str, Path]:
        return {
            volume["name"]: self.volume_dirs[volume["name"]]
            for volume in self.plan.spec.get("volumes") or []
            if volume.get("emptyDir") is not None
        }

    def _record_volumes(self) -> None:
        """The pod's mounts and emptyDirs, in the ledger before the first is made, once."""
        if not self.volumes_recorded:
            self.run.ledger.record(
                "container-pod-volumes",
                directory=str(self.directory),
                emptyDirs=[str(path) for path in self._empty_dirs().values()],
            )
            self.volumes_recorded = True

    def remove_volumes(self) -> list[str]:
        """Once the pod is gone: its subPath and tmpfs mounts, its emptyDirs' contents."""
        if not self.volumes_recorded:
            return []
        return remove_pod_volumes(self.directory, list(self._empty_dirs().values()))

    def record(self) -> None:
        """In the run's ledger before the engine pod exists (crash safety), once; its volumes
        before it, so that a killed run's clean-up removes the pod first."""
        self._record_volumes()
        if self.engine_name not in self.on_engine.recorded_pods:
            self.run.ledger.record(
                "engine-pod",
                engine=self.on_engine.engine.name,
                executable=self.on_engine.engine.executable,
                name=self.engine_name,
                run=self.run.run_id,
            )
            self.on_engine.recorded_pods.add(self.engine_name)

    def pod_request(self) -> PodRequest:
        return PodRequest(
            name=self.engine_name,
            hostname=self.plan.hostname,
            network=self.on_engine.network.name,
            address=self.host.address,
            labels=self.on_engine.labels,
        )

    def start(self, container: str) -> None:
        assert self.sandbox is not None
        self._verify_non_root(container)
        self._mount_sub_paths(container)
        request, _ = self.requests[container]
        # The client's own environment is the engine's: the container's env is in its file.
        engine = self.on_engine.engine
        spec = ProcessSpec(engine.run_command(request), engine.env, self.directory)
        self.processes[container] = ContainerProcess(
            self.name,
            container,
            spec,
            self.sandbox,  # type: ignore[arg-type]  # a pod sandbox wraps like a Sandbox
            self.run.sink,
        )
        self.run.publish()

    def _verify_non_root(self, container: str) -> None:
        """``runAsNonRoot`` against the image's user, as the kubelet verifies it."""
        spec = next(
            each
            for group in ("initContainers", "containers")
            for each in self.plan.spec.get(group) or []
            if each["name"] == container
        )
        facts = self.on_engine.engine.image_facts(self.requests[container][0].image)
        pod = f"{self.name}_{self.run.plan.namespace}"
        problem = non_root_problem(self.plan.spec, spec, facts.user if facts else "", pod)
        if problem is not None:
            raise ContainerConfigError(problem)

    def _mount_sub_paths(self, container: str) -> None:
        """Each subPath of the container opened beneath its volume and mounted through that
        descriptor at its staging path, as the kubelet prepares subPaths at each start: a
        container that ran before (an init container) or runs beside this one may have
        replaced it with a link out of the volume, or may swap one in at any moment."""
        for field, volume, sub_path, staging in self.sub_paths.get(container, []):
            try:
                subpath.bind(volume, sub_path, staging)
            except subpath.LinkFound:
                raise UserError(
                    f"{field}: {sub_path!r} now leads outside its volume (a container replaced "
                    f"it with a link); container {container} of pod {self.name} is not started"
                ) from None
            except OSError as error:
                raise UserError(
                    f"{field}: {sub_path!r} cannot be mounted ({error.strerror}); container "
                    f"{container} of pod {self.name} is not started"
                ) from None

    def finish(self, container: str) -> None:
        """After a container exited (the engine removed it): collect the rest of its output."""
        self.processes[container].reap()
        self.run.publish()

    def terminate(self) -> None:
        for name in self.processes:
            if self.running(name):
                self.on_engine.engine.signal(self.requests[name][0].name, "TERM")

    def kill_everything(self) -> None:
        """Remove the engine pod and everything in it, as a node does when a pod is deleted."""
        self.kill_together([self])

    @classmethod
    def kill_together(cls, pods: Sequence[LocalPod]) -> None:
        """Each pod's engine pod removed, all at once (one call each: given several names,
        ``podman pod rm`` removes none of them when one is already gone)."""
        removing: list[ContainerPodRun] = list(pods)  # type: ignore[arg-type]  # container pods
        if not removing:
            return
        engine = removing[0].on_engine.engine
        with ThreadPoolExecutor(max_workers=min(len(removing), CREATING_AT_ONCE)) as pool:
            list(pool.map(lambda pod: engine.remove_pods([pod.engine_name]), removing))
        for pod in removing:
            for process in pod.processes.values():
                process.reap()
        removing[0].run.publish()

    def container_name(self, container: str) -> str | None:
        """The engine's name for a container of this pod, if the pod declares it."""
        entry = self.requests.get(container)
        return entry[0].name if entry else None

    def registry_entry(self) -> dict[str, Any]:
        alive = self.sandbox is not None and self.sandbox.alive()
        return {
            "phase": self.phase,
            "serviceAccount": self.plan.service_account,
            "enginePod": self.engine_name,
            "containers": {
                name: {"running": alive and self.running(name), "engineName": request.name}
                for name, (request, _) in self.requests.items()
            },
        }


OWN_MOUNTS = ("/etc/hosts", "/etc/resolv.conf")
"""What every container gets mounted from the run (the kubelet mounts both too)."""


def _covers_own_mount(mount_path: str) -> str | None:
    """Why a volume cannot be mounted at ``mount_path`` beside the run's own mounts, or None.

    The engine cleans a destination (``/root/../etc`` is ``/etc``) and refuses two mounts at
    one (``duplicate mount destination``); a volume over a directory holding one of the
    run's files (``/etc``, ``/``) hides the image's files there and takes the engine's mount
    of the run's file inside it, which fails at each start, so the pod would crash-loop."""
    cleaned = posixpath.normpath(mount_path)
    if cleaned.startswith("//"):
        cleaned = cleaned[1:]
    for own in OWN_MOUNTS:
        if cleaned == own or own.startswith(cleaned.rstrip("/") + "/"):
            return (
                f"is {cleaned}, {'where' if cleaned == own else 'which holds ' + own + ', where'} "
                "a container run mounts the pod's own file (as the kubelet does); mount the "
                "volume at another path"
            )
    return None


def _write_env_file(path: Path, env: dict[str, str]) -> None:
    """NAME=VALUE per line, private (env may hold credentials)."""
    write_private(path, env_file_text(env))


def _check_env(container: dict[str, Any], env: dict[str, str], where: str) -> None:
    """Every variable must fit one env file line: name the field that does not."""
    given = {item["name"]: index for index, item in enumerate(container.get("env") or [])}
    for name, value in env.items():
        problem = env_problem(name, value)
        if problem is not None:
            field = f".env[{given[name]}]" if name in given else ".env"
            raise UserError(f"{where}{field}: {name}: {problem}")


def _security(pod_spec: dict[str, Any], container: dict[str, Any]) -> dict[str, Any]:
    """The securityContext fields the engine applies (container settings win over the pod's);
    what baseline forbids was refused before (:mod:`trainjobs.local.pod_security`)."""
    pod = pod_spec.get("securityContext") or {}
    own = container.get("securityContext") or {}
    user = own.get("runAsUser", pod.get("runAsUser"))
    group = own.get("runAsGroup", pod.get("runAsGroup"))
    return {
        "user": None if user is None else f"{user}" + ("" if group is None else f":{group}"),
        "read_only_root": bool(own.get("readOnlyRootFilesystem")),
        "capabilities": capabilities(container),
    }
