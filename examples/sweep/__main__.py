"""A hyper-parameter sweep: three ChainerMN jobs on the infra stack's GPU pool, one watcher.

The pool's scheduling profile and the images' digests come from the infrastructure stack
(`sweep:infraStack`, default org/trainjobs-infra/gpu-a100) through a StackReference, awaited in
the entrypoint given `pulumi.run` before the jobs are built on them.
"""

import pulumi

from trainjobs import (
    ChainerJob,
    ChainerJobSpec,
    InfraStack,
    JobCompletion,
    MasterSpec,
    SchedulingProfile,
    WorkerSpec,
)

IMAGE = "trainjobs/chainermn:7.8.1-cuda12.2"
"""The declared image; the infra stack's `images` output pins it to its digest."""
GPUS = 8
LEARNING_RATES = (0.002, 0.001, 0.0005)
"""Adam's alpha of each job (train_mnist.py --learning-rate)."""

config = pulumi.Config("sweep")
infra = InfraStack(config.get("infraStack") or "org/trainjobs-infra/gpu-a100")


def container(command: list[str] | None = None) -> dict[str, object]:
    """A ChainerMN container with a whole node's GPUs (the pool adds where it may run)."""
    spec: dict[str, object] = {
        "image": IMAGE,
        "resources": {"limits": {"nvidia.com/gpu": GPUS}},
    }
    if command is not None:
        spec["command"] = command
    return spec


def sweep_job(
    index: int, learning_rate: float, pool: SchedulingProfile, images: dict[str, str]
) -> ChainerJob:
    train = ["mpiexec", "--allow-run-as-root", "-n", str(2 * GPUS), "python3", "/train_mnist.py"]
    train += ["--communicator", "pure_nccl", "--learning-rate", str(learning_rate)]
    spec = ChainerJobSpec(
        master=MasterSpec(
            backoff_limit=1,
            active_deadline_seconds=7200,
            template={"spec": {"containers": [container(train)]}},
        ),
        worker=WorkerSpec(replicas=1, template={"spec": {"containers": [container()]}}),
    )
    return ChainerJob(f"sweep-{index}", spec, pool=pool, images=images, watched=True)


async def main() -> None:
    pool = await infra.gpu_pool(config.get("gpuPool"))
    images = await infra.images()
    jobs = [sweep_job(index, rate, pool, images) for index, rate in enumerate(LEARNING_RATES)]
    JobCompletion("completion", jobs)  # one watcher; each job's outcome is job.outcome
    for job, rate in zip(jobs, LEARNING_RATES, strict=True):
        pulumi.export(
            job.job.name,
            {
                "learningRate": rate,
                "masterJobName": job.master_job_name,
                "outcome": job.outcome,
            },
        )


pulumi.run(main)
