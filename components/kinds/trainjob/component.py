"""The public TrainJob component: a job of this kind in a Pulumi program."""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from collections.abc import Mapping, Sequence
from typing import Any

import pulumi

from trainjobs.cloud.scheduling import SchedulingProfile
from trainjobs.core.errors import UserError
from trainjobs.core.graph import GraphOptions
from trainjobs.deploy.jobs import KubeflowJob, own_source, refused
from trainjobs.kinds.trainjob import kind
from trainjobs.kinds.trainjob.spec import TrainJobSpec

__all__ = ["TrainJob", "TrainJobSpec"]


class TrainJob(KubeflowJob[TrainJobSpec]):
    """A Kubeflow Trainer v2 TrainJob (``trainer.kubeflow.org/v1alpha1``): the JobSet the
    Trainer controller would make from its training runtime, deployed without that controller.
    Typed ``trainjobs:index:TrainJob``; arguments as :class:`KubeflowJob`'s, plus ``runtimes``
    (default none: Kubeflow's released ClusterTrainingRuntimes only): ClusterTrainingRuntime or
    TrainingRuntime documents given beside the TrainJob, as in its YAML file."""

    KIND = kind.KIND.name
    API_VERSION = kind.KIND.api_version
    _SPEC = TrainJobSpec

    def __init__(
        self,
        name: str,
        spec: TrainJobSpec | Mapping[str, Any],
        *,
        runtimes: Sequence[Mapping[str, Any]] = (),
        job_name: str | None = None,
        namespace: pulumi.Input[str] = "default",
        labels: Mapping[str, pulumi.Input[str]] | None = None,
        options: GraphOptions | None = None,
        pool: SchedulingProfile | None = None,
        images: Mapping[str, pulumi.Input[str]] | None = None,
        require_digests: bool = False,
        watched: bool = False,
        source: str | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        if runtimes:
            named = name if job_name is None else job_name
            own = own_source(self.KIND, named, source)
            try:
                self.check_arguments(own, named, spec, {"runtimes": runtimes, "labels": labels})
                document = self.document(named, spec, labels, own)
            except UserError as error:
                raise refused(error) from None
            spec = {"apiVersion": "v1", "kind": "List", "items": [*map(dict, runtimes), document]}
        super().__init__(
            name,
            spec,
            job_name=job_name,
            namespace=namespace,
            labels=labels,
            options=options,
            pool=pool,
            images=images,
            require_digests=require_digests,
            watched=watched,
            source=source,
            opts=opts,
        )
