"""The Pulumi program behind `__main__.py`: stack config in, job components and exports out."""

from __future__ import annotations

import gc
import glob
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pulumi

from trainjobs.cloud.scheduling import SchedulingProfile
from trainjobs.core.bounds import parse_count
from trainjobs.core.documents import load_runtime_files
from trainjobs.core.errors import Problem, SpecError, UserError
from trainjobs.core.gang import GANG_SCHEDULERS
from trainjobs.core.graph import (
    DEFAULT_KUBECTL_IMAGE,
    DEFAULT_WAIT_TIMEOUT_SECONDS,
    MPI_TRANSPORTS,
    GraphOptions,
)
from trainjobs.core.names import namespace_problems
from trainjobs.deploy.completion import OUTCOME_FIELDS, WatchSettings
from trainjobs.deploy.component import TrainingJob
from trainjobs.deploy.infra_stack import IMAGES_OUTPUT, PROFILES_OUTPUT, InfraStack, pool_profile
from trainjobs.deploy.jobs import JobCompletion, place_job, refused
from trainjobs.images.gpu_support import check_images_on_pool
from trainjobs.images.pinning import image_pins_from_config
from trainjobs.images.references import reference_problem
from trainjobs.kinds.registry import KINDS, JobDefinition, load_job


@dataclass(frozen=True)
class StackSettings:
    """What a job stack's `trainjobs:*` config says."""

    job_files: list[Path]
    namespace: str
    graph_options: GraphOptions
    gpu_pool: SchedulingProfile | None = None
    preflight: bool = True
    images: dict[str, str] = field(default_factory=dict)
    """`trainjobs:images`: image reference as jobs name it -> `repo@sha256:...`."""
    require_digests: bool = False
    """`trainjobs:requireDigests`: refuse any container image left on a tag after pinning."""
    infra_stack: str | None = None
    """`trainjobs:infraStack`: the infra stack (`org/trainjobs-infra/gpu-a100`) whose GPU pool
    and image pins the jobs use, read through a StackReference."""
    gpu_pool_name: str | None = None
    """`trainjobs:gpuPoolName`: which of the infra stack's pools (default: its only one)."""

    @classmethod
    def from_config(cls, config: pulumi.Config) -> StackSettings:
        return cls(
            job_files=job_files(config.get("job"), config.get("jobs")),
            namespace=_namespace(config.get("namespace")),
            graph_options=GraphOptions(
                kubectl_image=_image(config.get("kubectlImage"), "kubectlImage")
                or DEFAULT_KUBECTL_IMAGE,
                wait_timeout_seconds=_positive_int(
                    config, "clusterWaitTimeout", DEFAULT_WAIT_TIMEOUT_SECONDS
                ),
                tensorflow_server_image=_image(
                    config.get("tensorflowServerImage"), "tensorflowServerImage"
                ),
                gang_scheduler=_gang_scheduler(config.get("gangScheduler")),
                gang_scheduler_name=config.get("gangSchedulerName"),
                mpi_transport=_mpi_transport(config.get("mpiTransport")),
                trainer_version=config.get("trainerVersion"),
                runtimes=_runtimes(config.get_object("runtimes")),
            ),
            gpu_pool=SchedulingProfile.from_config(config.get("gpuPool")),
            preflight=config.get_bool("preflight") is not False,
            images=image_pins_from_config(config.get("images")),
            require_digests=config.get_bool("requireDigests") is True,
            infra_stack=config.get("infraStack"),
            gpu_pool_name=config.get("gpuPoolName"),
        )

    def check_infra_stack(self) -> None:
        """Raise :class:`UserError` when the pool settings contradict each other, before
        the infra stack is read."""
        if self.infra_stack is None and self.gpu_pool_name is not None:
            raise UserError(
                "stack config trainjobs:gpuPoolName names a pool of trainjobs:infraStack; "
                "set trainjobs:infraStack too (e.g. org/trainjobs-infra/gpu-a100)"
            )
        if self.infra_stack is not None and self.gpu_pool is not None:
            raise UserError(
                "stack config: set trainjobs:gpuPool or trainjobs:infraStack, not both "
                "(the infra stack exports the pool's profile)"
            )

    def with_infra_stack(self, outputs: Mapping[str, Any]) -> StackSettings:
        """The settings with the pool's profile and the image pins of `trainjobs:infraStack`
        (pins set in `trainjobs:images` win). ``outputs``: the infra stack's outputs
        (:func:`infra_stack_outputs` reads them in a program)."""
        self.check_infra_stack()
        if self.infra_stack is None:
            return self
        return replace(
            self,
            gpu_pool=pool_profile(
                self.infra_stack, outputs.get(PROFILES_OUTPUT), self.gpu_pool_name
            ),
            images={
                **image_pins_from_config(
                    outputs.get(IMAGES_OUTPUT), source=f"{self.infra_stack} {IMAGES_OUTPUT}"
                ),
                **self.images,
            },
        )


async def infra_stack_outputs(stack: str | None) -> dict[str, Any]:
    """The outputs of `trainjobs:infraStack` the program uses, through a StackReference
    (none without one)."""
    if stack is None:
        return {}
    infra = InfraStack(stack)
    return {name: await infra.output(name) for name in (PROFILES_OUTPUT, IMAGES_OUTPUT)}


def _namespace(value: str | None) -> str:
    """`trainjobs:namespace`, checked as `--namespace` is: a DNS-1123 label, before anything
    is registered (the API server would refuse every object in it, one by one)."""
    if not value:
        return "default"
    problems = namespace_problems(value, "trainjobs:namespace")
    if problems:
        raise UserError(
            f"stack config trainjobs:namespace: {problems[0].message}; set a valid one with "
            "`pulumi config set trainjobs:namespace team-a`"
        )
    return value


def _gang_scheduler(value: str | None) -> str | None:
    if value is not None and value not in GANG_SCHEDULERS:
        raise UserError(
            f"stack config trainjobs:gangScheduler must be one of {', '.join(GANG_SCHEDULERS)} "
            f"(got {value!r})"
        )
    return value


def _mpi_transport(value: str | None) -> str:
    if value is None:
        return MPI_TRANSPORTS[0]
    if value not in MPI_TRANSPORTS:
        raise UserError(
            f"stack config trainjobs:mpiTransport must be one of {', '.join(MPI_TRANSPORTS)} "
            f"(got {value!r})"
        )
    return value


def _runtimes(value: Any) -> tuple[tuple[dict[str, Any], str], ...]:
    """`trainjobs:runtimes`: files (or directories of files) of training runtimes installed
    apart from the jobs, read as `--runtimes` reads them; a warning for each other document."""
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UserError(
            "stack config trainjobs:runtimes must be a list of runtime files or directories "
            f"(got {value!r}); set it with `pulumi config set --path 'trainjobs:runtimes[0]' "
            "FILE`"
        )
    documents, warnings = load_runtime_files(value)
    for warning in warnings:
        pulumi.log.warn(f"trainjobs:runtimes: {warning}")
    return tuple(documents)


def _image(value: str | None, key: str) -> str | None:
    """`trainjobs:<key>`: an image reference as the kubelet parses one (a newline or a space
    in it would end up in every pod that runs the image)."""
    if not value:
        return None
    if reference_problem(value) is not None:
        setting = f"trainjobs:{key}"
        raise UserError(
            f"stack config {setting}: {value!r} is not a valid image reference "
            "([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case repository); set one with "
            f"`pulumi config set {setting} REFERENCE`"
        )
    return value


def _positive_int(config: pulumi.Config, key: str, default: int) -> int:
    raw = config.get(key)
    if raw is None:
        return default
    value = parse_count(raw)
    if not value:
        raise UserError(
            f"stack config trainjobs:{key} must be a positive number of seconds (got {raw!r})"
        )
    return value


def job_files(job: str | None, jobs: str | None) -> list[Path]:
    """`trainjobs:job` names one spec file; `trainjobs:jobs` a list of files or globs."""
    if job is not None and jobs is not None:
        raise UserError("stack config: set trainjobs:job or trainjobs:jobs, not both")
    if job is None and jobs is None:
        raise UserError(
            "stack config: set trainjobs:job to a job spec file (e.g. jobs/chainermn-mnist.yaml) "
            "or trainjobs:jobs to a list of files or globs"
        )
    if job is not None:
        patterns = [job]
    else:
        assert jobs is not None
        try:
            parsed = json.loads(jobs)
        except json.JSONDecodeError:
            parsed = jobs
        patterns = parsed if isinstance(parsed, list) else [str(parsed)]
    _check_patterns(patterns, "trainjobs:job" if job is not None else "trainjobs:jobs")
    files: list[Path] = []
    for pattern in patterns:
        matches = sorted(glob.glob(pattern)) if glob.has_magic(pattern) else [pattern]
        if not matches:
            raise UserError(f"stack config trainjobs:jobs: {pattern!r} matches no files")
        files += [Path(match) for match in matches]
    return files


def _check_patterns(patterns: Sequence[object], key: str) -> None:
    """Every entry of ``key`` (`trainjobs:job`, or `trainjobs:jobs`: a JSON list in the stack
    file may hold anything) a string that can name a file."""
    wrong = [
        f"[{index}] ({type(pattern).__name__})"
        for index, pattern in enumerate(patterns)
        if not isinstance(pattern, str)
    ]
    if wrong:
        raise UserError(
            f"stack config {key}: {', '.join(wrong)} are not file names or globs; "
            'list strings, e.g. ["jobs/a.yaml", "jobs/*.yaml"]'
        )
    for index, pattern in enumerate(patterns):
        if "\0" in str(pattern):
            where = f"[{index}] " if key == "trainjobs:jobs" else ""
            raise UserError(
                f"stack config {key}: {where}{pattern!r} holds a NUL character, which no file "
                "name can; name the job files"
            )


def load_jobs(settings: StackSettings) -> list[JobDefinition]:
    """Every job of the stack, validated. All problems of all files are reported at once."""
    loaded: list[tuple[Path, JobDefinition]] = []
    errors: list[str] = []
    for path in settings.job_files:
        try:
            loaded.append((path, load_job(path, settings.namespace, settings.graph_options)))
        except SpecError as error:
            errors.append(str(error))
    seen: dict[tuple[str, str], Path] = {}
    for path, job in loaded:
        key = (job.namespace, job.name)
        if key in seen:
            clash = Problem("metadata.name", f"job {job.name!r} is also defined in {seen[key]}")
            errors.append(str(SpecError(str(path), [clash])))
        seen[key] = path
    if errors:
        raise UserError("\n".join(errors))
    jobs = [job for _, job in loaded]
    if settings.gpu_pool is not None:
        check_images_on_pool([job.graph for job in jobs], settings.gpu_pool)
    return [
        place_job(job, settings.gpu_pool, settings.images, settings.require_digests) for job in jobs
    ]


YOUNG_GENERATION_THRESHOLD = 50_000
"""Allocations between two collections of the youngest generation while the program runs."""


def tune_collector() -> None:
    """Let the cyclic garbage collector run less often while the program registers.

    The SDK allocates many short-lived container objects per resource (futures, outputs,
    protobuf structs). At CPython's default threshold of 700 the collector ran about 500
    times during a 100-job preview and took about a third of its CPU
    (`bench/program_cost.py`); at 50,000 it collects the same garbage in far fewer passes.
    The program is a short-lived process of its own, and memory stays bounded by the
    threshold. A larger threshold already set is kept."""
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_GENERATION_THRESHOLD), middle, old)


def run() -> None:
    """Build one component per job, one completion watcher for all of them, and export each
    job's outputs, keyed by job name: in the entrypoint given ``pulumi.run``, which awaits
    the outputs of `trainjobs:infraStack` first."""
    tune_collector()
    pulumi.run(_register)


async def _register() -> None:
    try:
        settings = StackSettings.from_config(pulumi.Config("trainjobs"))
        settings.check_infra_stack()
        settings = settings.with_infra_stack(await infra_stack_outputs(settings.infra_stack))
        jobs = load_jobs(settings)
        if settings.gpu_pool is not None and settings.preflight:
            from trainjobs.cloud.preflight import check_before_registering

            check_before_registering(settings.gpu_pool, [job.graph for job in jobs])
        watch = WatchSettings.from_config(pulumi.Config("trainjobs"), pulumi.Config("kubernetes"))
    except UserError as error:
        raise refused(error) from None
    # Each job's public component, as a user's program builds it (from the job read above).
    components: list[TrainingJob] = [
        KINDS[job.kind].component().from_job(job, watched=watch.watch) for job in jobs
    ]
    completion = None
    if watch.watch and components:
        completion = JobCompletion("completion", components, watch)
    for job, component in zip(jobs, components, strict=True):
        # The values the component's outputs hold, known here: no Output to resolve per job.
        outputs_of_job: dict[str, object] = {
            "kind": job.kind,
            "namespace": job.namespace,
            "masterJobName": job.completion_job,
            "workerPodNames": job.worker_pods,
        }
        if completion is not None:
            outputs_of_job["outcome"] = _outcome(completion, component.target.key)
        pulumi.export(job.name, outputs_of_job)


def _outcome(completion: JobCompletion, key: str) -> pulumi.Output[dict[str, object]]:
    """One job's outcome from the watcher's (unknown until it ends). One apply per job: an
    apply per field cost the SDK 1,100 tasks for a 100-job stack."""
    return completion.outcomes.apply(lambda outcomes: outcome_export(outcomes, key))


def outcome_export(
    outcomes: Mapping[str, Mapping[str, object]] | None, key: str
) -> dict[str, object]:
    """The exported outcome of job ``key``: every field of :data:`OUTCOME_FIELDS`, camelCase,
    None where the watcher recorded nothing."""
    outcome = (outcomes or {}).get(key) or {}
    return {_camel(name): outcome.get(name) for name in OUTCOME_FIELDS}


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)
