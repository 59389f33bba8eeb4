"""The component provider: the job components (TrainJob included) for every Pulumi language.

``pulumi.provider.experimental`` (SDK 3.272) infers the package schema from the type
annotations of each component's ``args`` (a TypedDict) and its output attributes, and
constructs a component from the inputs a TypeScript, Go, C# or YAML program sends
(``pulumi/provider/experimental/analyzer.py`` and ``component.py``). The components here are
the Python API's, with arguments the analyzer can read: the inputs are Kubeflow's ``v1``
spec (``ChainerJob``: ``v1alpha1``; ``MPIJob``: ``v2beta1``; ``TrainJob``: Trainer's
``v1alpha1``, with its training runtimes as free-form documents beside it), field by field,
with pod templates as free-form objects. Jobs built through the provider are not watched:
the completion watcher is a Python dynamic resource, which only a Python program can create.

``python -m trainjobs.deploy.provider`` prints the schema (``provider/schema.json``).
"""

# No `from __future__ import annotations`: the analyzer reads these annotations at run time.
import json
import typing
from typing import Any, NotRequired, TypedDict

import pulumi
from pulumi.errors import InputPropertiesError
from pulumi.provider.experimental.component import ComponentProvider
from pulumi.provider.provider import ConstructResult, Inputs
from pulumi.provider.server import ComponentInitError
from pydantic.alias_generators import to_camel

from trainjobs.core.version import PACKAGE, package_version
from trainjobs.kinds.chainer import component as chainer
from trainjobs.kinds.mpijob import component as mpijob
from trainjobs.kinds.pytorch import component as pytorch
from trainjobs.kinds.tensorflow import component as tensorflow
from trainjobs.kinds.trainjob import component as trainjob

VERSION = package_version()


class SchedulingPolicyArgs(TypedDict):
    """``runPolicy.schedulingPolicy``: what a gang scheduler needs to place the job at once."""

    min_available: NotRequired[int]
    """Pods that must be placed together. Default: every pod of the job."""
    queue: NotRequired[str]
    """The scheduler's queue (Volcano). Default: none."""
    min_resources: NotRequired[dict[str, Any]]
    """Resources the group needs. Default: the sum over minAvailable pods."""
    priority_class: NotRequired[str]
    """PriorityClass of the group. Default: none."""
    schedule_timeout_seconds: NotRequired[int]
    """How long the group may wait to be placed (scheduler-plugins). Default: none."""


class RunPolicyArgs(TypedDict):
    """Kubeflow's ``runPolicy``: run-wide policies of a TFJob or PyTorchJob."""

    clean_pod_policy: NotRequired[str]
    """What happens to pods when the job ends: None (default), Running or All."""
    ttl_seconds_after_finished: NotRequired[int]
    """Seconds after the job ends before its objects are removed. Default: kept."""
    active_deadline_seconds: NotRequired[int]
    """Wall-clock limit of the job; on expiry it fails. Default: none."""
    backoff_limit: NotRequired[int]
    """Retries of a replica before the job fails. Default: none."""
    scheduling_policy: NotRequired[SchedulingPolicyArgs]
    """Gang scheduling. Default: none."""
    suspend: NotRequired[bool]
    """True: no pods run. Default: false."""


class ReplicaSpecArgs(TypedDict):
    """Kubeflow's ``ReplicaSpec``: one replica type's pods."""

    replicas: NotRequired[int]
    """Number of pods. Default: 1."""
    restart_policy: NotRequired[str]
    """Always, OnFailure, Never or ExitCode. Default: Never."""
    template: dict[str, Any]
    """The pods' template (a Kubernetes PodTemplateSpec)."""


class TFJobSpecArgs(TypedDict):
    """A TFJob's ``spec`` (``kubeflow.org/v1``)."""

    run_policy: NotRequired[RunPolicyArgs]
    """Run-wide policies. Default: the operator's."""
    success_policy: NotRequired[str]
    """Without a chief: '' (worker 0 decides, default) or AllWorkers."""
    enable_dynamic_worker: NotRequired[bool]
    """Each worker's TF_CONFIG lists only itself and the parameter servers. Default: false."""
    tf_replica_specs: dict[str, ReplicaSpecArgs]
    """Replica type (Chief, Master, Worker, PS, Evaluator) -> its replicas."""


class PyTorchJobSpecArgs(TypedDict):
    """A PyTorchJob's ``spec`` (``kubeflow.org/v1``)."""

    run_policy: NotRequired[RunPolicyArgs]
    """Run-wide policies. Default: the operator's."""
    nproc_per_node: NotRequired[str]
    """Processes per node: a number, auto (default), cpu or gpu."""
    pytorch_replica_specs: dict[str, ReplicaSpecArgs]
    """Master and Worker -> their replicas."""


class MpiConfigArgs(TypedDict):
    """Open MPI settings of a ChainerJob's replica group."""

    slots: NotRequired[int]
    """MPI slots per pod. Default: the main container's nvidia.com/gpu limit, or 1."""


class MasterSpecArgs(TypedDict):
    """A ChainerJob's master: a Job whose pod runs mpiexec."""

    backoff_limit: NotRequired[int]
    """Retries of the master Job. Default: Kubernetes' 6."""
    active_deadline_seconds: NotRequired[int]
    """Wall-clock limit of the master Job. Default: none."""
    mpi_config: NotRequired[MpiConfigArgs]
    """Open MPI settings. Default: slots from the GPU limit."""
    template: dict[str, Any]
    """The master pod's template (a Kubernetes PodTemplateSpec)."""


class WorkerSpecArgs(TypedDict):
    """A ChainerJob's set of identical worker pods (a StatefulSet)."""

    replicas: NotRequired[int]
    """Number of worker pods. Default: 1."""
    mpi_config: NotRequired[MpiConfigArgs]
    """Open MPI settings. Default: slots from the GPU limit."""
    template: dict[str, Any]
    """The worker pods' template (a Kubernetes PodTemplateSpec)."""


class ChainerJobSpecArgs(TypedDict):
    """A ChainerJob's ``spec`` (``kubeflow.org/v1alpha1``)."""

    backend: NotRequired[str]
    """Communication backend; only mpi (the default)."""
    master: MasterSpecArgs
    """The master."""
    worker: NotRequired[WorkerSpecArgs]
    """One group of workers, named <job>-worker. Default: none."""
    worker_sets: NotRequired[dict[str, WorkerSpecArgs]]
    """Worker-set name -> workers (chainer-operator's shape). Default: none."""


class MPIJobSpecArgs(TypedDict):
    """An MPIJob's ``spec`` (``kubeflow.org/v2beta1``, mpi-operator)."""

    slots_per_worker: NotRequired[int]
    """MPI slots per worker. Default: 1."""
    run_policy: NotRequired[RunPolicyArgs]
    """Run-wide policies. Default: the operator's."""
    ssh_auth_mount_path: NotRequired[str]
    """Where the job's key pair is mounted in each pod. Default: /root/.ssh."""
    launcher_creation_policy: NotRequired[str]
    """AtStartup (default) or WaitForWorkersReady."""
    mpi_implementation: NotRequired[str]
    """OpenMPI (default), Intel or MPICH."""
    run_launcher_as_worker: NotRequired[bool]
    """The launcher is also the hostfile's first host. Default: false."""
    mpi_replica_specs: dict[str, ReplicaSpecArgs]
    """Launcher (exactly one) and Worker -> their replicas."""


class RuntimeRefArgs(TypedDict):
    """The training runtime a TrainJob runs on."""

    name: str
    """The runtime's name (torch-distributed, or one given in ``runtimes``)."""
    api_group: NotRequired[str]
    """Default: trainer.kubeflow.org."""
    kind: NotRequired[str]
    """ClusterTrainingRuntime (default) or TrainingRuntime."""


class TrainerArgs(TypedDict):
    """A TrainJob's overrides of its runtime's trainer."""

    image: NotRequired[str]
    """The trainer's image. Default: the runtime's."""
    command: NotRequired[list[str]]
    """The trainer's command. Default: the runtime's."""
    args: NotRequired[list[str]]
    """The trainer's args. Default: the runtime's."""
    env: NotRequired[list[dict[str, Any]]]
    """Env of the trainer's node container (Kubernetes EnvVars). Default: none."""
    num_nodes: NotRequired[int]
    """Training nodes. Default: the runtime's MLPolicy numNodes."""
    resources_per_node: NotRequired[dict[str, Any]]
    """Resources of each node (Kubernetes ResourceRequirements). Default: the runtime's."""
    num_proc_per_node: NotRequired[str]
    """Processes per node: a number, or (before Trainer v2.2) auto, cpu or gpu."""


class TrainJobSpecArgs(TypedDict):
    """A TrainJob's ``spec`` (``trainer.kubeflow.org/v1alpha1``)."""

    runtime_ref: RuntimeRefArgs
    """The training runtime."""
    initializer: NotRequired[dict[str, Any]]
    """Dataset and model initializers. Default: none."""
    trainer: NotRequired[TrainerArgs]
    """Overrides of the runtime's trainer. Default: none."""
    runtime_patches: NotRequired[list[dict[str, Any]]]
    """Trainer v2.2+: patches to the runtime's JobSet template, by manager. Default: none."""
    pod_template_overrides: NotRequired[list[dict[str, Any]]]
    """Trainer v2.1: pod template overrides of target replicated Jobs. Default: none."""
    pod_spec_overrides: NotRequired[list[dict[str, Any]]]
    """Trainer v2.0: pod spec overrides of target replicated Jobs. Default: none."""
    labels: NotRequired[dict[str, str]]
    """Trainer v2.0-v2.1: labels of the JobSet. Default: none."""
    annotations: NotRequired[dict[str, str]]
    """Trainer v2.0-v2.1: annotations of the JobSet. Default: none."""
    suspend: NotRequired[bool]
    """True: no pods run. Default: false."""
    active_deadline_seconds: NotRequired[int]
    """Wall-clock limit of the job. Default: none."""
    managed_by: NotRequired[str]
    """The controller that manages the TrainJob. Default: Trainer's."""


class TFJobArgs(TypedDict):
    """The inputs of a TFJob."""

    spec: TFJobSpecArgs
    """The TFJob's spec, as in Kubeflow's YAML."""
    namespace: NotRequired[str]
    """The job's namespace. Default: default."""
    labels: NotRequired[dict[str, str]]
    """Labels of the job. Default: none."""


class PyTorchJobArgs(TypedDict):
    """The inputs of a PyTorchJob."""

    spec: PyTorchJobSpecArgs
    """The PyTorchJob's spec, as in Kubeflow's YAML."""
    namespace: NotRequired[str]
    """The job's namespace. Default: default."""
    labels: NotRequired[dict[str, str]]
    """Labels of the job. Default: none."""


class ChainerJobArgs(TypedDict):
    """The inputs of a ChainerJob."""

    spec: ChainerJobSpecArgs
    """The ChainerJob's spec, as in Kubeflow's YAML."""
    namespace: NotRequired[str]
    """The job's namespace. Default: default."""
    labels: NotRequired[dict[str, str]]
    """Labels of the job. Default: none."""


class MPIJobArgs(TypedDict):
    """The inputs of an MPIJob."""

    spec: MPIJobSpecArgs
    """The MPIJob's spec, as in Kubeflow's YAML."""
    namespace: NotRequired[str]
    """The job's namespace. Default: default."""
    labels: NotRequired[dict[str, str]]
    """Labels of the job. Default: none."""


class TrainJobArgs(TypedDict):
    """The inputs of a TrainJob."""

    spec: TrainJobSpecArgs
    """The TrainJob's spec, as in Kubeflow's YAML."""
    runtimes: NotRequired[list[dict[str, Any]]]
    """Training runtime documents beside the TrainJob, as in its file. Default: none."""
    namespace: NotRequired[str]
    """The job's namespace. Default: default."""
    labels: NotRequired[dict[str, str]]
    """Labels of the job. Default: none."""


def wire(value: Any, annotation: Any) -> Any:
    """``value`` with the Python names of ``annotation``'s TypedDicts back in Kubeflow's
    camelCase; free-form objects (``dict[str, Any]``: pod templates) stay as they are."""
    origin = typing.get_origin(annotation)
    if origin is NotRequired:
        return wire(value, typing.get_args(annotation)[0])
    if typing.is_typeddict(annotation) and isinstance(value, dict):
        hints = typing.get_type_hints(annotation)
        return {to_camel(key): wire(item, hints.get(key, Any)) for key, item in value.items()}
    if origin is dict and isinstance(value, dict):
        item_type = typing.get_args(annotation)[1]
        return {key: wire(item, item_type) for key, item in value.items()}
    return value


def _job_settings(args: Any, annotation: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    spec_type = typing.get_type_hints(annotation)["spec"]
    settings = {"namespace": args.get("namespace") or "default", "labels": args.get("labels")}
    return wire(args["spec"], spec_type), settings


class TFJob(tensorflow.TFJob):
    """A TFJob (Kubeflow ``v1``): one Job or StatefulSet per replica, with TF_CONFIG."""

    def __init__(
        self, name: str, args: TFJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec, settings = _job_settings(args, TFJobArgs)
        super().__init__(name, spec, **settings, opts=opts)


class PyTorchJob(pytorch.PyTorchJob):
    """A PyTorchJob (Kubeflow ``v1``): one Job or StatefulSet per replica, with
    torch.distributed's environment."""

    def __init__(
        self, name: str, args: PyTorchJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec, settings = _job_settings(args, PyTorchJobArgs)
        super().__init__(name, spec, **settings, opts=opts)


class ChainerJob(chainer.ChainerJob):
    """A ChainerJob (Kubeflow ``v1alpha1``): a master Job and worker StatefulSets that
    ChainerMN runs over MPI."""

    def __init__(
        self, name: str, args: ChainerJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec, settings = _job_settings(args, ChainerJobArgs)
        super().__init__(name, spec, **settings, opts=opts)


class MPIJob(mpijob.MPIJob):
    """An MPIJob (Kubeflow ``v2beta1``, mpi-operator): a launcher Job running mpirun and worker
    pods it reaches over ssh with the job's own key pair."""

    def __init__(
        self, name: str, args: MPIJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec, settings = _job_settings(args, MPIJobArgs)
        super().__init__(name, spec, **settings, opts=opts)


class TrainJob(trainjob.TrainJob):
    """A Kubeflow Trainer v2 TrainJob: the JobSet the Trainer controller would make from its
    training runtime (Kubeflow's released ones, or those given in ``runtimes``)."""

    def __init__(
        self, name: str, args: TrainJobArgs, opts: pulumi.ResourceOptions | None = None
    ) -> None:
        spec, settings = _job_settings(args, TrainJobArgs)
        # Checked by the library as every argument is (a string is no list of documents).
        runtimes = args.get("runtimes") or []
        super().__init__(name, spec, runtimes=runtimes, **settings, opts=opts)


COMPONENTS: list[type[pulumi.ComponentResource]] = [ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob]
"""What the provider hosts."""


class JobProvider(ComponentProvider):
    """The SDK's component provider, with a job the library refuses reported as invalid
    inputs: the provider host answers an ``InputPropertiesError`` with INVALID_ARGUMENT and
    its message, while any other error from a component's ``__init__`` (the library's
    ``RunError`` included) is shown with its Python stack (pulumi/provider/server.py,
    ``construct``)."""

    def construct(
        self,
        name: str,
        resource_type: str,
        inputs: Inputs,
        options: pulumi.ResourceOptions | None = None,
    ) -> ConstructResult:
        try:
            return super().construct(name, resource_type, inputs, options)
        except ComponentInitError as error:
            if isinstance(error.inner, pulumi.RunError):
                raise InputPropertiesError(str(error.inner)) from None
            raise


def provider(version: str = VERSION) -> ComponentProvider:
    """The provider, its schema inferred from :data:`COMPONENTS` (default version: the
    package's)."""
    return JobProvider(COMPONENTS, PACKAGE, None, version)


def schema(version: str = VERSION) -> dict[str, Any]:
    """The package schema the provider serves (`provider/schema.json`)."""
    served = provider(version).schema
    assert served is not None
    loaded: dict[str, Any] = json.loads(served)
    return loaded


if __name__ == "__main__":
    print(json.dumps(schema(), indent=2, sort_keys=True))
