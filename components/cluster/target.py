"""A training job as the watcher sees it: its Jobs and workers, its rules and its policies.

The Pulumi program builds one :class:`WatchTarget` per job from the job's graph and hands
it to the completion watcher; it also writes it, as JSON, into the ``trainjobs.io/watch``
annotation of the job's anchor object (the deciding replica's Service, or a ChainerJob's
assets ConfigMap), so that `trainjobs watch JOB` and `trainjobs status` find everything by
the job's name. Nothing here talks to a cluster.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from trainjobs.cluster.rules import CompletionRules, Elastic
from trainjobs.cluster.scaling import WorkerRef
from trainjobs.core.errors import UserError
from trainjobs.core.labels import JOB_NAME

WATCH_ANNOTATION = "trainjobs.io/watch"
"""On a job's anchor object: the job's :class:`WatchTarget` as JSON."""

CLEAN_POD_POLICIES = ("None", "Running", "All")


@dataclass(frozen=True)
class WatchTarget:
    """Everything the watcher needs to see one training job through.

    ``workers`` are the workloads besides the Jobs that decide the job: StatefulSets (with
    their declared size) and Jobs. ``clean_pod_policy`` says what happens to pods when the
    job ends (Kubeflow's ``runPolicy.cleanPodPolicy``; a ChainerJob's is Running, KEP-141's
    scale-to-0). ``gated``: the Jobs were created suspended and only the watcher starts a
    run, so a run that already ended (``run``, recorded on the ``anchor``) is not started
    again when its Jobs are created anew. ``ttl_seconds_after_finished`` is applied to the
    Jobs by the watcher once it has recorded the run's end. ``jobset``: a Kueue-queued job,
    whose JobSet controller owns the Jobs (nothing to stop, suspend or resume).
    """

    namespace: str
    name: str
    kind: str
    rules: CompletionRules
    workers: tuple[WorkerRef, ...] = ()
    clean_pod_policy: str = "Running"
    suspend: bool = False
    run: str | None = None
    anchor: tuple[str, str] | None = None
    gated: bool = False
    ttl_seconds_after_finished: int | None = None
    jobset: str | None = None

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    @property
    def selector(self) -> str:
        """Every object of the job carries its name in Kubeflow's job-name label."""
        return f"{JOB_NAME}={self.name}"

    @property
    def jobs(self) -> tuple[str, ...]:
        """Every batch/v1 Job of the job that trainjobs creates, the deciding ones first."""
        return self.rules.watched

    def to_dict(self) -> dict[str, Any]:
        rules = self.rules
        return {
            "namespace": self.namespace,
            "name": self.name,
            "kind": self.kind,
            "success_jobs": list(rules.success_jobs),
            "worker_jobs": list(rules.worker_jobs),
            "success_any": rules.success_any,
            "elastic": rules.elastic.to_dict() if rules.elastic is not None else None,
            "workers": [worker.to_dict() for worker in self.workers],
            "clean_pod_policy": self.clean_pod_policy,
            "suspend": self.suspend,
            "run": self.run,
            "anchor": list(self.anchor) if self.anchor is not None else None,
            "gated": self.gated,
            "ttl_seconds_after_finished": self.ttl_seconds_after_finished,
            "jobset": self.jobset,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> WatchTarget:
        """Read :meth:`to_dict`'s form (numbers may come back as floats from the engine)."""
        success = tuple(str(name) for name in data["success_jobs"])
        elastic = data.get("elastic")
        anchor = data.get("anchor")
        ttl = data.get("ttl_seconds_after_finished")
        return cls(
            namespace=str(data["namespace"]),
            name=str(data["name"]),
            kind=str(data["kind"]),
            rules=CompletionRules(
                success[0],
                success,
                tuple(str(name) for name in data.get("worker_jobs") or ()),
                bool(data.get("success_any")),
                Elastic(int(elastic["min_members"]), bool(elastic["restart_never"]))
                if elastic
                else None,
            ),
            workers=tuple(WorkerRef.from_dict(worker) for worker in data.get("workers") or ()),
            clean_pod_policy=str(data.get("clean_pod_policy") or "Running"),
            suspend=bool(data.get("suspend")),
            run=data.get("run"),
            anchor=(str(anchor[0]), str(anchor[1])) if anchor else None,
            gated=bool(data.get("gated")),
            ttl_seconds_after_finished=None if ttl is None else int(ttl),
            jobset=data.get("jobset"),
        )

    def to_annotation(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_annotation(cls, text: str, where: str) -> WatchTarget:
        """The target an anchor object carries; a UserError naming the object if unreadable."""
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError, IndexError) as error:
            raise UserError(
                f"{where}: annotation {WATCH_ANNOTATION} is not a trainjobs watch description "
                f"({type(error).__name__}: {error}); deploy the job again with `pulumi up`"
            ) from error
