"""MPIJob spec models (kubeflow.org/v1alpha2, v1, v2beta1) and their reading into the MPI graph.

An MPIJob is a Launcher (one pod running ``mpirun``) and Workers (MPI daemons' hosts). Its
graph is the MPI graph ChainerJob shares (:mod:`trainjobs.kinds.mpi.graph`): a launcher Job, a
worker StatefulSet whose pods are ``<job>-worker-<i>``, a hostfile and a transport. What differs per
version is decided here, following its operator's types, defaults and validation:

- v2beta1 (mpi-operator, ``pkg/apis/kubeflow/v2beta1/default.go``, ``validation.go``):
  ssh with a key per job, ``slotsPerWorker`` 1, ``sshAuthMountPath`` ``/root/.ssh``,
  ``mpiImplementation`` OpenMPI, ``launcherCreationPolicy`` AtStartup, cleanPodPolicy None,
  the launcher's restartPolicy OnFailure;
- v1 (training-operator ``pkg/apis/kubeflow.org/v1/mpi_defaults.go``, ``mpi_validation.go``):
  kubectl exec, cleanPodPolicy None, restartPolicy Never, ``mainContainer``;
- v1alpha2 (mpi-operator 0.2, ``pkg/apis/kubeflow/v1alpha2/default.go``): kubectl exec,
  backoffLimit 6, cleanPodPolicy None, the launcher's restartPolicy OnFailure unless Never.

The user's commands are never rewritten; a worker without a command is an exec or ssh target.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from pydantic import StrictInt

from trainjobs.core.bounds import INT32_MAX, replicas_problem, total_pods_problem
from trainjobs.core.errors import Problem, SpecError
from trainjobs.core.gang import DEFAULT_SCHEDULER_PLUGINS_NAME, VOLCANO, Gang, sum_requests
from trainjobs.core.graph import GraphOptions
from trainjobs.core.job_document import read_envelope, validate_section
from trainjobs.core.jobset import QUEUE_LABEL, is_queued, pod_name_problem
from trainjobs.core.names import JobNames, check_name_limits
from trainjobs.core.pod_template import Provided, check_pod_template
from trainjobs.core.replica_spec import (
    CleanPodPolicy,
    ReplicaSpec,
    ReplicaSpecBeforeV1,
    RunPolicy,
    RunSettings,
    run_settings,
)
from trainjobs.core.set_paths import SetPaths, replica_map
from trainjobs.core.spec_model import SpecModel, unknown_fields
from trainjobs.kinds.mpi.flavour import MpiFlavour
from trainjobs.kinds.mpi.graph import operator_volumes
from trainjobs.kinds.mpi.plan import Master, MpiPlan, WorkerGroup
from trainjobs.kinds.mpijob import operator

KIND = "MPIJob"
VERSIONS = ("v1alpha2", "v1", "v2beta1")

if TYPE_CHECKING:
    # What a program may write, so that a type checker flags a misspelled value.
    MPIImplementation = Literal["OpenMPI", "Intel", "MPICH"]
    LauncherCreationPolicy = Literal["AtStartup", "WaitForWorkersReady"]
else:
    # Any string at run time: a spec read from YAML gets mpi-operator's own message.
    MPIImplementation = str
    LauncherCreationPolicy = str
DEFAULT_CONTAINER_NAME = "mpi"
"""training-operator's MPIJobDefaultContainerName: a lone unnamed container is named so."""
LAUNCHER = "Launcher"
WORKER = "Worker"
LAUNCHER_CREATION_POLICIES = ("AtStartup", "WaitForWorkersReady")


class MPIJobSpecV1Alpha2(SpecModel):
    """``kubeflow.org/v1alpha2`` (mpi-operator 0.2): fields in any case, as Go read them."""

    case_insensitive = True
    slots_per_worker: StrictInt | None = None
    """MPI slots per worker. Default: 1."""
    backoff_limit: int | None = None
    """Retries of the launcher Job. Default: 6."""
    active_deadline_seconds: int | None = None
    """Wall-clock limit of the launcher Job."""
    clean_pod_policy: CleanPodPolicy | None = None
    """None, Running or All. Default: None."""
    mpi_replica_specs: dict[str, ReplicaSpecBeforeV1] | None = None
    """Launcher (exactly one) and Worker."""
    main_container: str | None = None
    """The worker container the launcher execs into. Default: the first."""
    run_policy: RunPolicy | None = None
    """Run-wide policies; its backoffLimit and activeDeadlineSeconds win over spec's."""
    mpi_distribution: str | None = None
    """OpenMPI, IntelMPI or MPICH. Default: OpenMPI."""


class MPIJobSpecV1(SpecModel):
    """``kubeflow.org/v1`` (training-operator 1.x)."""

    slots_per_worker: StrictInt | None = None
    """MPI slots per worker. Default: 1."""
    clean_pod_policy: str | None = None
    """Before runPolicy: None, Running or All. Default: None."""
    mpi_replica_specs: dict[str, ReplicaSpec] | None = None
    """Launcher (exactly one) and Worker."""
    main_container: str | None = None
    """The worker container the launcher execs into. Default: the first."""
    run_policy: RunPolicy | None = None
    """Run-wide policies: cleanPodPolicy, TTL, backoffLimit, activeDeadlineSeconds, suspend,
    schedulingPolicy."""


class MPIJobSpecV2Beta1(SpecModel):
    """``kubeflow.org/v2beta1`` (mpi-operator 0.4+)."""

    slots_per_worker: StrictInt | None = None
    """MPI slots per worker. Default: 1."""
    run_policy: RunPolicy | None = None
    """Run-wide policies: cleanPodPolicy (default None), TTL, backoffLimit,
    activeDeadlineSeconds, suspend, schedulingPolicy."""
    mpi_replica_specs: dict[str, ReplicaSpec] | None = None
    """Launcher (exactly one) and Worker."""
    ssh_auth_mount_path: str | None = None
    """Where the job's key pair is mounted in each pod. Default: /root/.ssh."""
    launcher_creation_policy: LauncherCreationPolicy | None = None
    """AtStartup or WaitForWorkersReady. Default: AtStartup."""
    mpi_implementation: MPIImplementation | None = None
    """OpenMPI, Intel or MPICH. Default: OpenMPI."""
    run_launcher_as_worker: bool | None = None
    """The launcher is also the hostfile's first host. Default: false."""


SPEC_MODELS: dict[str, type[SpecModel]] = {
    "v1alpha2": MPIJobSpecV1Alpha2,
    "v1": MPIJobSpecV1,
    "v2beta1": MPIJobSpecV2Beta1,
}


class MpiJobNames(JobNames):
    """mpi-operator's names: ``<job>-launcher`` (the launcher Job, its pod's hostname and its
    ServiceAccount), ``<job>-worker-<i>``, and the ``<job>-config`` ConfigMap."""

    @property
    def master(self) -> str:
        return f"{self.job}-launcher"

    @property
    def assets(self) -> str:
        return f"{self.job}-config"


@dataclass(frozen=True)
class MpiJobPlan:
    """A validated MPIJob: its graph's plan and its run-wide policies."""

    version: str
    graph: MpiPlan
    run: RunSettings


def set_paths(document: dict[str, Any]) -> SetPaths:
    """Where `--set` writes: every version keys its replicas by type in ``mpiReplicaSpecs``."""
    return replica_map(document, "mpiReplicaSpecs")


def parse(
    document: dict[str, Any],
    source: str,
    namespace: str = "default",
    options: GraphOptions | None = None,
) -> MpiJobPlan:
    """Validate an MPIJob and apply its version's defaults. Raises SpecError listing every
    problem."""
    options = options or GraphOptions()
    problems: list[Problem] = []
    warnings: list[Problem] = []
    envelope = read_envelope(document, KIND, VERSIONS, problems, warnings)
    if envelope is None:
        raise SpecError(source, problems, warnings)
    schema = f"{KIND} kubeflow.org/{envelope.version}"
    spec = validate_section(SPEC_MODELS[envelope.version], envelope.spec, "spec", problems)
    if spec is None:
        raise SpecError(source, problems, warnings)
    warnings += unknown_fields(spec, "spec", schema)
    plan = _plan(envelope.version, envelope, spec, namespace, options, problems, warnings)
    if problems or plan is None:
        raise SpecError(source, problems, warnings)
    return plan


def _plan(
    version: str,
    envelope: Any,
    spec: Any,
    default_namespace: str,
    options: GraphOptions,
    problems: list[Problem],
    warnings: list[Problem],
) -> MpiJobPlan | None:
    names = MpiJobNames(envelope.name)
    namespace = envelope.namespace or default_namespace
    path = "spec.mpiReplicaSpecs"
    if spec.mpi_replica_specs is None:
        extra = spec.model_extra or {}
        shape = (
            " (spec.replicas and spec.template are v1alpha1's shape, which kubeflow.org/"
            f"{version} does not read: move the template under Launcher and Worker)"
            if "replicas" in extra or "template" in extra
            else ""
        )
        problems.append(
            Problem(path, f"required: a Launcher and its Workers, each with a pod template{shape}")
        )
        return None
    replica_specs: dict[str, ReplicaSpec] = dict(spec.mpi_replica_specs)
    for key in replica_specs:
        if key not in (LAUNCHER, WORKER):
            problems.append(
                Problem(
                    f"{path}.{key}",
                    f"unknown replica type {key!r}: an MPIJob has {LAUNCHER} and {WORKER}",
                )
            )
    launcher = replica_specs.get(LAUNCHER)
    if launcher is None:
        problems.append(
            Problem(
                f"{path}.{LAUNCHER}",
                "required: an MPIJob's launcher runs mpirun; add a Launcher with its pod template",
            )
        )
        return None
    if launcher.replicas is not None and launcher.replicas != 1:
        problems.append(
            Problem(
                f"{path}.{LAUNCHER}.replicas",
                f"must be 1 (got {launcher.replicas}): an MPIJob has one launcher; omit it",
            )
        )
    worker = replica_specs.get(WORKER)
    workers = _worker_count(version, worker, f"{path}.{WORKER}.replicas", problems, warnings)
    too_many = total_pods_problem([1, workers], "spec")
    if too_many is not None:
        problems.append(too_many)
    implementation = _implementation(version, spec, problems)
    slots = spec.slots_per_worker if spec.slots_per_worker is not None else 1
    if slots < 0:
        problems.append(Problem("spec.slotsPerWorker", f"must be at least 0 (got {slots})"))
    elif slots > INT32_MAX:
        problems.append(
            Problem(
                "spec.slotsPerWorker",
                f"must be at most {INT32_MAX} (got {slots}): it is an int32 field",
            )
        )
    default_clean = "None"
    run = run_settings(spec, default_clean, problems)
    launcher_restart = _launcher_restart(version, launcher.restart_policy, path, problems, warnings)
    if worker is not None and worker.restart_policy is not None:
        _check_worker_restart(version, worker.restart_policy, f"{path}.{WORKER}", problems)
    as_worker = False
    ssh_mount: str | None = None
    if version == "v2beta1":
        as_worker = bool(spec.run_launcher_as_worker)
        ssh_mount = spec.ssh_auth_mount_path or "/root/.ssh"
        if ssh_mount == operator.CONFIG_MOUNT:
            # mpi-operator mounts both in the launcher; ValidateVolumeMounts (kubernetes
            # pkg/apis/core/validation) refuses two mounts at one path: "must be unique".
            problems.append(
                Problem(
                    "spec.sshAuthMountPath",
                    f"Invalid value: {json.dumps(ssh_mount)}: mpi-operator mounts the job's "
                    "hostfile ConfigMap there, and a container's mount paths must be unique (the "
                    "API server refuses the launcher's pod); choose another directory, e.g. "
                    "/root/.ssh (the default) or the user's ~/.ssh",
                )
            )
        policy = spec.launcher_creation_policy
        if policy is not None and policy not in LAUNCHER_CREATION_POLICIES:
            problems.append(
                Problem(
                    "spec.launcherCreationPolicy",
                    f"must be one of {', '.join(LAUNCHER_CREATION_POLICIES)} (got {policy!r})",
                )
            )
    # The user's templates may mount what the operator adds (as the launcher's init
    # containers of real MPIJobs do).
    key_mount = ssh_mount if version == "v2beta1" and workers else None
    provided = Provided(
        "training-operator" if version == "v1" else "mpi-operator",
        tuple(operator_volumes(names, operator.CONFIG_MOUNT, key_mount)),
    )
    launcher_template, launcher_container = _template(
        launcher.template, f"{path}.{LAUNCHER}.template", problems, warnings, provided
    )
    worker_template, worker_container = (
        _template(worker.template, f"{path}.{WORKER}.template", problems, warnings, provided)
        if worker is not None and workers
        else ({}, DEFAULT_CONTAINER_NAME)
    )
    main = getattr(spec, "main_container", None)
    if main and workers:
        known = [c.get("name") for c in worker_template.get("spec", {}).get("containers") or []]
        if main not in known:
            problems.append(
                Problem(
                    "spec.mainContainer",
                    f"{main!r} is not a container of the Worker template (it has "
                    f"{', '.join(map(str, known))}); name one of them",
                )
            )
        worker_container = main
    statefulset = names.worker_statefulset(None)
    queued = is_queued(envelope.labels)
    # Queued, there is no StatefulSet: the JobSet's pod names are checked below.
    checked = [(statefulset, f"{path}.{WORKER}")] if workers and not queued else []
    problems += check_name_limits(names, checked)
    if queued and version != "v2beta1":
        problems.append(_exec_not_queued(version))
    elif queued:
        too_long = pod_name_problem(names.job, [("launcher", 1), ("worker", max(workers, 1))])
        problems += [too_long] if too_long is not None else []
    if problems:
        return None

    if version == "v2beta1":
        for template in (launcher_template, worker_template):
            operator.v2beta1_host_network_dns(template)
    gpu_launcher = version == "v1" and _asks_for_gpu(launcher_template)
    in_hostfile = as_worker or gpu_launcher
    launcher_template.setdefault("spec", {})["restartPolicy"] = launcher_restart
    # Queued, the pods are a JobSet's: <job>-worker-<i>-0 (see WorkerGroup.in_jobset).
    group = WorkerGroup(statefulset, workers, slots, worker_template, worker_container, queued)
    launcher_host = f"{names.master}-0-0" if queued else names.master
    flavour = MpiFlavour(
        kind=KIND,
        transport="ssh" if version == "v2beta1" else "kubectl",
        hydra_hostfile=implementation != operator.OPEN_MPI and version != "v1",
        launcher_in_hostfile=in_hostfile,
        config_mount=operator.CONFIG_MOUNT,
        discover_hosts=_discover_hosts(
            version, names, namespace, launcher_host, group.pods, slots, in_hostfile
        ),
        launcher_env=tuple(
            _launcher_env(version, implementation, slots, in_hostfile, launcher_template)
        ),
        worker_env=tuple(operator.v2beta1_worker_env() if version == "v2beta1" else []),
        worker_dns_search=operator.v2beta1_worker_dns_search(names.job, namespace)
        if version == "v2beta1"
        else None,
        launcher_labels=operator.labels(version, names.job, "launcher", as_worker),
        worker_labels=operator.labels(version, names.job, "worker", as_worker),
        launcher_restart=launcher_restart,
        launcher_pod_replacement=operator.LAUNCHER_POD_REPLACEMENT
        if version == "v2beta1"
        else None,
        ssh_auth_mount_path=ssh_mount,
        suspend=run.suspend,
        ttl_seconds_after_finished=run.ttl_seconds_after_finished,
        gang=_gang(run, [launcher_template] + [worker_template] * workers, options, warnings),
        queued=queued,
    )
    backoff = run.backoff_limit
    if version == "v1alpha2" and backoff is None:
        backoff = 6
    graph = MpiPlan(
        names=names,
        namespace=namespace,
        labels=envelope.labels,
        master=Master(
            slots=slots,
            template=launcher_template,
            container=launcher_container,
            backoff_limit=backoff,
            active_deadline_seconds=run.active_deadline_seconds,
        ),
        workers=[group] if workers else [],
        warnings=warnings,
        flavour=flavour,
    )
    return MpiJobPlan(version, graph, run)


def _exec_not_queued(version: str) -> Problem:
    """Kueue admits a queued job as one JobSet, whose pods' names carry the controller's
    random suffix: kubectl exec (v1, v1alpha2), which needs every worker pod's name in
    advance, cannot reach them; ssh goes by their stable hostnames."""
    return Problem(
        f"metadata.labels.{QUEUE_LABEL}",
        f"an MPIJob of kubeflow.org/{version} reaches its workers by kubectl exec, whose pod "
        "names a Kueue-queued JobSet does not keep stable; use apiVersion kubeflow.org/v2beta1 "
        "(ssh) or remove the label",
    )


def _worker_count(
    version: str,
    worker: ReplicaSpec | None,
    path: str,
    problems: list[Problem],
    warnings: list[Problem],
) -> int:
    """Workers default to 0 (every version). v2beta1 defaults before it validates, so a
    Worker without replicas is refused as one asking for 0 (mpi-operator
    ``pkg/apis/kubeflow/v2beta1/default.go`` ``setDefaultsTypeWorker``, then
    ``pkg/apis/kubeflow/validation/validation.go`` ``validateWorkerReplicaSpec``)."""
    if worker is None:
        return 0
    if worker.replicas is None:
        if version == "v2beta1":
            problems.append(
                Problem(
                    path,
                    "must be at least 1 (got 0, mpi-operator's default when it is not set); "
                    "set it, or remove the Worker for a launcher-only job",
                )
            )
        else:
            warnings.append(
                Problem(path, "not set: the operator's default is 0, so no Worker runs; set it")
            )
        return 0
    if worker.replicas < 1:
        problems.append(
            Problem(
                path,
                f"must be at least 1 (got {worker.replicas}); remove the Worker for a "
                "launcher-only job",
            )
        )
        return 0
    too_many = replicas_problem(worker.replicas, path)
    if too_many is not None:
        problems.append(too_many)
        return 0
    return worker.replicas


def _implementation(version: str, spec: Any, problems: list[Problem]) -> str:
    """The MPI implementation: v2beta1's mpiImplementation, v1alpha2's mpiDistribution;
    training-operator's v1 runs Open MPI's (and Intel MPI's rsh) launcher."""
    extra = spec.model_extra or {}
    if version == "v2beta1":
        value = spec.mpi_implementation or operator.OPEN_MPI
        if value not in operator.IMPLEMENTATIONS:
            problems.append(
                Problem(
                    "spec.mpiImplementation",
                    f"must be one of {', '.join(operator.IMPLEMENTATIONS)} (got {value!r})",
                )
            )
            return operator.OPEN_MPI
        return value
    given = extra.get("mpiImplementation")
    if given is not None and given != operator.OPEN_MPI:
        fix = (
            "use mpiDistribution (OpenMPI, IntelMPI, MPICH)"
            if version == "v1alpha2"
            else "training-operator's MPIJob runs Open MPI (and Intel MPI over rsh); use "
            "apiVersion kubeflow.org/v2beta1 (mpi-operator)"
        )
        problems.append(
            Problem(
                "spec.mpiImplementation",
                f"{given!r} is not a field of kubeflow.org/{version}: {fix}, or remove it",
            )
        )
    if version == "v1alpha2" and spec.mpi_distribution is not None:
        value = operator.DISTRIBUTIONS.get(spec.mpi_distribution)
        if value is None:
            problems.append(
                Problem(
                    "spec.mpiDistribution",
                    f"must be one of {', '.join(operator.DISTRIBUTIONS)} "
                    f"(got {spec.mpi_distribution!r})",
                )
            )
            return operator.OPEN_MPI
        return value
    return operator.OPEN_MPI


def _launcher_restart(
    version: str,
    policy: str | None,
    path: str,
    problems: list[Problem],
    warnings: list[Problem],
) -> str:
    """The launcher pod's restartPolicy, as the version's defaults and setRestartPolicy make
    it (ExitCode runs as Never)."""
    where = f"{path}.{LAUNCHER}.restartPolicy"
    if version == "v1alpha2":
        return "Never" if policy == "Never" else "OnFailure"
    if version == "v2beta1":
        value = policy or "OnFailure"
        if value not in ("Never", "OnFailure"):
            problems.append(Problem(where, f"must be Never or OnFailure (got {value!r})"))
        return value
    value = policy or "Never"
    if value == "ExitCode":
        return "Never"
    if value == "Always":
        warnings.append(
            Problem(
                where,
                "'Always' runs as 'OnFailure': the launcher is a batch/v1 Job, which restarts "
                "it only when it fails",
            )
        )
        return "OnFailure"
    if value not in ("Never", "OnFailure"):
        problems.append(
            Problem(where, f"must be one of Always, OnFailure, Never, ExitCode (got {value!r})")
        )
    return value


def _check_worker_restart(version: str, policy: str, path: str, problems: list[Problem]) -> None:
    """Workers run until the launcher ends, restarted whatever their exit code (a
    StatefulSet); only v2beta1's validation refuses policies beyond Never and OnFailure."""
    if version == "v2beta1" and policy not in ("Never", "OnFailure"):
        problems.append(
            Problem(f"{path}.restartPolicy", f"must be Never or OnFailure (got {policy!r})")
        )


def _template(
    template: Any,
    path: str,
    problems: list[Problem],
    warnings: list[Problem],
    provided: Provided,
) -> tuple[dict[str, Any], str]:
    """A replica's pod template and its first container, the one every operator sets up."""
    if not isinstance(template, dict):
        problems.append(Problem(path, "required: the replica's pod template"))
        return {}, DEFAULT_CONTAINER_NAME
    checked, main = check_pod_template(
        template, path, problems, warnings, DEFAULT_CONTAINER_NAME, provided
    )
    containers = (checked.get("spec") or {}).get("containers") or []
    first = containers[0].get("name") if containers and isinstance(containers[0], dict) else None
    return checked, first or main


def _asks_for_gpu(template: dict[str, Any]) -> bool:
    """training-operator's isGPULauncher: a launcher container limit on a resource whose name
    holds "gpu" (its ".com/gpu" suffix test is implied by that)."""
    for container in template.get("spec", {}).get("containers") or []:
        limits = (container.get("resources") or {}).get("limits") or {}
        if any("gpu" in key for key in limits):
            return True
    return False


def _launcher_env(
    version: str,
    implementation: str,
    slots: int,
    launcher_is_worker: bool,
    template: dict[str, Any],
) -> list[dict[str, Any]]:
    if version == "v2beta1":
        return operator.v2beta1_launcher_env(implementation, slots, launcher_is_worker)
    if version == "v1":
        first = (template.get("spec", {}).get("containers") or [{}])[0]
        return operator.v1_launcher_env(first.get("env") or [], launcher_is_worker)
    return operator.v1alpha2_launcher_env(implementation)


def _discover_hosts(
    version: str,
    names: MpiJobNames,
    namespace: str,
    launcher: str,
    pods: list[str],
    slots: int,
    launcher_in_hostfile: bool,
) -> str | None:
    """``launcher``, ``pods``: the launcher's and the workers' hostnames."""
    if version == "v2beta1":
        hosts = [launcher, *pods] if launcher_in_hostfile else pods
        return operator.v2beta1_discover_hosts(
            [f"{host}.{names.service}.{namespace}.svc" for host in hosts]
        )
    if version == "v1":
        return operator.v1_discover_hosts(
            names.master if launcher_in_hostfile else None, pods, slots
        )
    return None


def _gang(
    run: RunSettings,
    templates: list[dict[str, Any]],
    options: GraphOptions,
    warnings: list[Problem],
) -> Gang | None:
    """The job's PodGroup, when a gang scheduler places it: the stack's gangScheduler, else
    Volcano for pods that name it (as for TFJob and PyTorchJob: core.replica_spec.gang_for).
    mpi-operator's PodGroup counts the launcher and every worker
    (``pkg/controller/podgroup.go``: ``calculateMinAvailable``)."""
    scheduler = options.gang_scheduler
    if scheduler is None and any(
        t.get("spec", {}).get("schedulerName") == VOLCANO for t in templates
    ):
        scheduler = VOLCANO
    if scheduler is None:
        if run.scheduling is not None:
            warnings.append(
                Problem(
                    "spec.runPolicy.schedulingPolicy",
                    "no gang scheduler places this job, so its pods are scheduled one by one: "
                    "set the stack's trainjobs:gangScheduler (volcano, scheduler-plugins) or the "
                    "pods' schedulerName: volcano",
                )
            )
        return None
    policy = run.scheduling
    members = (policy.min_available if policy else None) or len(templates)
    return Gang(
        scheduler=scheduler,  # type: ignore[arg-type]
        scheduler_name=VOLCANO
        if scheduler == VOLCANO
        else options.gang_scheduler_name or DEFAULT_SCHEDULER_PLUGINS_NAME,
        min_member=members,
        queue=policy.queue if policy else None,
        priority_class=policy.priority_class if policy else None,
        min_resources=(policy.min_resources if policy else None)
        or sum_requests(templates[:members])
        or None,
        schedule_timeout_seconds=policy.schedule_timeout_seconds if policy else None,
    )
