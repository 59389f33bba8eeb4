"""Whether a job's images can drive the GPUs of the pool it runs on (CUDA against GPU model)."""

from __future__ import annotations

from collections.abc import Iterable

from trainjobs.cloud.instances import INSTANCE_TYPES
from trainjobs.cloud.scheduling import SchedulingProfile, pod_gpus, pod_template
from trainjobs.core.errors import Problem, UserError
from trainjobs.core.graph import Graph
from trainjobs.core.pod_template import pod_containers
from trainjobs.images.catalogue import declared_image

# The oldest CUDA release that can build for each GPU model of the pools' instance types
# (components/gpu.py INSTANCE_TYPES), with its architecture and compute capability: a CUDA
# release older than its GPU has no code for it, and kernels fail to load at run time.
MIN_CUDA: dict[str, tuple[tuple[int, int], str]] = {
    "V100": ((9, 0), "Volta, compute capability 7.0"),
    "T4": ((10, 0), "Turing, compute capability 7.5"),
    "T4g": ((10, 0), "Turing, compute capability 7.5"),
    "A100": ((11, 0), "Ampere, compute capability 8.0"),
    "A10G": ((11, 1), "Ampere, compute capability 8.6"),
    "L4": ((11, 8), "Ada Lovelace, compute capability 8.9"),
    "L40S": ((11, 8), "Ada Lovelace, compute capability 8.9"),
    "H100": ((11, 8), "Hopper, compute capability 9.0"),
    "H200": ((11, 8), "Hopper, compute capability 9.0"),
    "B200": ((12, 8), "Blackwell, compute capability 10.0"),
    "B300": ((12, 9), "Blackwell Ultra, compute capability 10.3"),
    "RTX PRO 4500": ((12, 8), "Blackwell, compute capability 12.0"),
    "RTX PRO Server 6000": ((12, 8), "Blackwell, compute capability 12.0"),
}


def cuda_problems(graph: Graph, profile: SchedulingProfile) -> list[Problem]:
    """Containers of GPU pods whose declared image's CUDA is too old for a GPU of the pool.

    Kernels built by an older CUDA have no code for a newer GPU architecture: such a pod
    schedules, starts, and fails at its first GPU operation. Undeclared images are not known
    here and are left alone.
    """
    problems = []
    for node in graph.nodes:
        template = pod_template(node.manifest)
        if template is None or pod_gpus(template["spec"], profile.gpu_resource) == 0:
            continue
        for group, index, container in pod_containers(template["spec"]):
            image = declared_image(container.get("image", ""))
            if image is None or image.cuda is None:
                continue
            where = f"{node.key}: spec.template.spec.{group}[{index}].image"
            for instance_type in profile.instance_types:
                known = INSTANCE_TYPES.get(instance_type)
                if known is None:
                    continue  # pre-flight reports instance types that do not exist
                needed = MIN_CUDA.get(known.gpu)
                if needed is None:
                    problems.append(
                        Problem(
                            where,
                            f"{instance_type} has {known.gpu} GPUs, whose minimum CUDA version "
                            "is not known: an unknown combination; add the GPU to MIN_CUDA in "
                            "components/images/gpu_support.py",
                        )
                    )
                    continue
                (major, minor), architecture = needed
                if image.cuda.release[:2] < (major, minor):
                    problems.append(
                        Problem(
                            where,
                            f"{container['image']} has CUDA {image.cuda.version}, but "
                            f"{instance_type} has {known.gpu} GPUs ({architecture}), which need "
                            f"CUDA {major}.{minor} or later; build the image on a newer CUDA "
                            "base (e.g. nvidia/cuda:12.2.2-cudnn8-devel-ubuntu22.04) or use "
                            "another GPU pool",
                        )
                    )
    return problems


def check_images_on_pool(graphs: Iterable[Graph], profile: SchedulingProfile) -> None:
    """Raise a :class:`UserError` naming every GPU container of the jobs whose image cannot
    run on the pool's GPUs (see :func:`cuda_problems`), job by job."""
    lines = []
    for graph in graphs:
        problems = cuda_problems(graph, profile)
        if problems:
            lines.append(
                f"{graph.kind} {graph.job}: images too old for GPU pool {profile.pool!r} "
                f"({len(problems)} problem(s))"
            )
            lines += [f"  {problem}" for problem in problems]
    if lines:
        raise UserError("\n".join(lines))
