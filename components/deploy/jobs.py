"""The base of the public job components (one per kind, in its package) and their watcher.

Each is a :class:`~trainjobs.deploy.component.TrainingJob` built from one validated job: the
spec goes through the same parser as `trainjobs validate` and `trainjobs render`, so a
program gets the same messages and the same Kubernetes objects as the YAML path.
"""

# No `from __future__ import annotations`: the component provider reads the components'
# annotations at run time (pulumi/provider/experimental/analyzer.py).
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, ClassVar, Generic, TypeVar

import pulumi
from pydantic import BaseModel

from trainjobs.cloud.scheduling import SchedulingProfile, apply_scheduling
from trainjobs.core.documents import load_file
from trainjobs.core.errors import ConfigError, Problem, SpecError, UserError, got, written
from trainjobs.core.graph import GraphOptions
from trainjobs.core.names import namespace_problems
from trainjobs.core.terminal import escape
from trainjobs.deploy import completion
from trainjobs.deploy.arguments import (
    optional_problem,
    path_problem,
    runtime_problems,
    type_problem,
)
from trainjobs.deploy.component import TrainingJob
from trainjobs.deploy.placeholders import Placeholders, is_value_field
from trainjobs.images.gpu_support import check_images_on_pool
from trainjobs.images.pinning import pin_images
from trainjobs.kinds.registry import KINDS, JobDefinition, parse_job

SpecT = TypeVar("SpecT", bound=BaseModel)


def place_job(
    job: JobDefinition,
    pool: SchedulingProfile | None = None,
    images: Mapping[str, str] | None = None,
    require_digests: bool = False,
) -> JobDefinition:
    """``job`` with a GPU pool's scheduling profile applied and its images pinned.

    ``pool`` (default None: no pool) adds the pool's tolerations and nodeSelector to GPU pods;
    ``images`` (default None: none) maps image references as the job names them to
    ``repo@sha256:...``; ``require_digests`` (default False) refuses any image left on a tag.
    Raises :class:`UserError` as the stack's program reports it.
    """
    if pool is not None:
        check_images_on_pool([job.graph], pool)
        job = replace(job, graph=apply_scheduling(job.graph, pool))
    if images or require_digests:
        # After scheduling, before pre-flight: pre-flight checks the pinned digests in ECR.
        graph = pin_images(job.graph, images or {}, require_digests=require_digests)
        job = replace(job, graph=graph)
    return job


class KubeflowJob(TrainingJob, Generic[SpecT]):
    """A Kubeflow training job as a component: the base of every kind's component.

    ``name``: the resource name. ``spec``: the kind's spec model, a dict of its ``spec``
    section in Kubeflow's shape (camelCase, as in YAML), or a whole document (``apiVersion``,
    ``kind``, ``metadata``, ``spec``); pod templates may be pulumi-kubernetes ``*Args``.
    Values a Kubernetes object only carries (images, commands, env values, the namespace,
    labels' and images' values, quantities...) may be Pulumi Outputs; one where the graph
    needs a plain value (a replica count, a name) is refused naming the field.
    ``job_name`` (default: ``name``): the job's ``metadata.name``, so that two jobs of one
    name in two namespaces are two resources. ``namespace`` (default ``default``; a
    document's own namespace wins),
    ``labels`` (default none), ``options`` (default :class:`GraphOptions`\\ ()), ``pool``
    (default None), ``images`` (default None), ``require_digests`` (default False): as the
    stack settings of the same names. ``watched`` (default False): a :class:`JobCompletion`
    will see the job through; its Jobs are then created suspended and the watcher starts
    each run, so pass True only for jobs handed to one. ``source`` (default ``<Kind> <name>``)
    names the spec in error messages. An invalid spec, a document of another kind or an
    argument of the wrong type raises ``pulumi.RunError`` with the messages of `trainjobs
    validate`.
    """

    KIND = ""
    API_VERSION = "kubeflow.org/v1"
    # The kind's spec model, which ``spec`` may be an instance of. Private: the provider's
    # analyzer reads a component's public annotations as its outputs.
    _SPEC: ClassVar[type[BaseModel]] = BaseModel

    def __init__(
        self,
        name: str,
        spec: SpecT | Mapping[str, Any],
        *,
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
        job_name = name if job_name is None else job_name
        given_source, source = source, own_source(self.KIND, job_name, source)
        # Outputs stand in the pure graph as tokens (see trainjobs.deploy.placeholders).
        inputs = Placeholders(f"{self.KIND} {name}")
        whole = isinstance(spec, Mapping) and ("kind" in spec or "apiVersion" in spec)
        arguments = {
            "namespace": inputs.hide(namespace, "namespace"),
            "labels": inputs.hide(labels, "labels"),
            "options": options,
            "pool": pool,
            "images": inputs.hide(images, "images"),
            "require_digests": require_digests,
            "watched": watched,
            "source": given_source,
            "opts": opts,
        }
        try:
            plain = inputs.hide(_section(spec), "" if whole else "spec")
            inputs.refuse_structural(source, is_value_field)
            self.check_arguments(source, job_name, spec, arguments)
            document = self.document(job_name, plain, arguments["labels"], source)
            self.check_kind(document, source)
            job = parse_job(document, source, arguments["namespace"], options)
            job = place_job(job, pool, arguments["images"], require_digests)
        except UserError as error:
            raise refused(error) from None
        self._register(job, watched, opts, name, inputs)

    def _register(
        self,
        job: JobDefinition,
        watched: bool,
        opts: pulumi.ResourceOptions | None,
        name: str | None = None,
        inputs: Placeholders | None = None,
    ) -> None:
        """Register the job's objects, and warn of what its spec says to no effect."""
        TrainingJob.__init__(self, job, name=name, inputs=inputs, watched=watched, opts=opts)
        for warning in [*job.warnings, *self.notices]:
            pulumi.log.warn(escape(f"{job.kind} {job.name}: {warning}"), resource=self)

    @classmethod
    def from_job(
        cls,
        job: JobDefinition,
        *,
        watched: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> "KubeflowJob[SpecT]":
        """The component of a job already validated (:func:`~trainjobs.kinds.registry.load_job`)
        and placed (:func:`place_job`), of this class's kind: what the stack's program builds
        for each of its job files, which it has read and checked together."""
        if job.kind != cls.KIND:
            raise ValueError(f"{cls.__name__}.from_job: a {job.kind} is no {cls.KIND}")
        component = cls.__new__(cls)
        component._register(job, watched, opts)
        return component

    @classmethod
    def check_arguments(
        cls, source: str, name: object, spec: object, arguments: Mapping[str, object]
    ) -> None:
        """Raise :class:`ConfigError` naming each argument of the wrong type (the type given
        and the one expected); ``arguments``: the keyword arguments by name."""
        spec_type = (cls._SPEC, Mapping)
        checks = [
            type_problem("name", name, str, "a str"),
            type_problem("spec", spec, spec_type, f"a {cls.KIND}Spec or a mapping"),
        ]
        namespace = arguments.get("namespace")
        if "namespace" in arguments:
            checks.append(type_problem("namespace", namespace, str, "a str"))
        if isinstance(namespace, str):  # as `--namespace` and `trainjobs:namespace` are
            checks += namespace_problems(namespace, "namespace")
        for argument, expected, what in (
            ("labels", Mapping, "a mapping"),
            ("options", GraphOptions, "a GraphOptions"),
            ("pool", SchedulingProfile, "a SchedulingProfile"),
            ("images", Mapping, "a mapping"),
            ("source", str, "a str"),
            ("opts", pulumi.ResourceOptions, "a pulumi.ResourceOptions"),
        ):
            if argument in arguments:
                checks.append(optional_problem(argument, arguments[argument], expected, what))
        for flag in ("require_digests", "watched"):
            if flag in arguments:
                checks.append(type_problem(flag, arguments[flag], bool, "a bool"))
        if "runtimes" in arguments:
            checks += runtime_problems(arguments["runtimes"])
        problems = [problem for problem in checks if problem is not None]
        if problems:
            raise ConfigError(source, "arguments", problems)

    @classmethod
    def check_kind(cls, document: Mapping[str, Any], source: str) -> None:
        """Raise :class:`SpecError` unless ``document`` is a job of this class's kind (a List
        counts as its one job; a List the parser cannot read is left to its messages)."""
        kind = document.get("kind")
        said = got(document, "kind")
        if kind == "List" and isinstance(document.get("items"), list):
            jobs = [
                item.get("kind")
                for item in document["items"]
                if isinstance(item, Mapping) and item.get("kind") in KINDS
            ]
            if len(jobs) != 1:
                return
            kind = jobs[0]
            said = f"got {written(kind)}"
        if kind == cls.KIND:
            return
        if isinstance(kind, str) and kind in KINDS:
            fix = f"read it with trainjobs.{kind}"
        else:
            fix = f"set kind: {cls.KIND} in the document"
        problem = Problem(
            "kind", f"must be {cls.KIND}, the kind trainjobs.{cls.KIND} reads ({said}); {fix}"
        )
        raise SpecError(source, [problem])

    @classmethod
    def document(
        cls,
        name: str,
        spec: BaseModel | Mapping[str, Any],
        labels: Mapping[str, pulumi.Input[str]] | None = None,
        source: str = "",
    ) -> dict[str, Any]:
        """The job document a spec stands for, as `trainjobs validate` reads it from YAML."""
        if isinstance(spec, Mapping) and spec.get("kind") == "List":
            # A TrainJob and the training runtimes given beside it (one file, or ``runtimes``):
            # the job among them is named as the component.
            items = [
                cls.document(name, item, labels, source)
                if isinstance(item, Mapping) and item.get("kind") == cls.KIND
                else item
                for item in _list(spec.get("items"))
            ]
            return {**spec, "items": items}
        if isinstance(spec, BaseModel):
            # Only what the program set: defaults stay the operator's, as in YAML.
            section: Any = _section(spec)
        else:
            section = dict(spec)
        if "kind" in section or "apiVersion" in section:  # no spec section has these fields
            document = dict(section)
            if not isinstance(document.get("metadata") or {}, Mapping):
                return document  # the parser refuses it as `trainjobs validate` does
            metadata = dict(document.get("metadata") or {})
            metadata.setdefault("name", name)
            if metadata["name"] != name:
                problem = Problem(
                    "metadata.name",
                    f"is {metadata['name']!r} but the component is named {name!r}; "
                    "name the component as the job",
                )
                raise SpecError(source or f"{cls.KIND} {name}", [problem])
            document["metadata"] = metadata
            return document
        own: dict[str, Any] = {"name": name}
        if labels:
            own["labels"] = dict(labels)
        return {
            "apiVersion": cls.API_VERSION,
            "kind": cls.KIND,
            "metadata": own,
            "spec": section,
        }

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        *,
        namespace: str = "default",
        options: GraphOptions | None = None,
        pool: SchedulingProfile | None = None,
        images: Mapping[str, str] | None = None,
        require_digests: bool = False,
        watched: bool = False,
        opts: pulumi.ResourceOptions | None = None,
    ) -> "KubeflowJob[SpecT]":
        """The job a spec file defines (YAML or JSON, one job), named by its metadata.name.

        The settings are those of the constructor; errors name the file, as
        `trainjobs validate` does. The file must be a job of this class's kind.
        """
        try:
            problem = path_problem(path)
            if problem is not None:
                raise ConfigError(f"{cls.KIND}.from_file", "arguments", [problem])
            document = load_file(path)
            cls.check_kind(document, str(path))
        except UserError as error:
            raise refused(error) from None
        named = document
        if document.get("kind") == "List":  # a TrainJob with its runtimes: the job's name
            items = document.get("items")
            named = next(
                (i for i in _list(items) if isinstance(i, dict) and i.get("kind") == cls.KIND),
                named,
            )
        metadata = named.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return cls(
            name if isinstance(name, str) else "",
            document,
            namespace=namespace,
            options=options,
            pool=pool,
            images=images,
            require_digests=require_digests,
            watched=watched,
            source=str(path),
            opts=opts,
        )


class JobCompletion(completion.JobCompletion, module="trainjobs", name="JobCompletion"):
    """One completion watcher for several jobs: it starts each run and records how it ended.

    ``jobs``: the jobs to see through; handing a job to a watcher is what makes it watched.
    One built with ``watched=True`` has its Jobs created suspended, and the watcher starts
    each run (and hands over the TTL once the run's end is recorded); one built without runs
    as soon as its Jobs exist, and the watcher follows it. ``settings`` (default
    :class:`WatchSettings`\\ (): a 24h timeout, a failed job fails the update, the ambient
    kubeconfig). The watcher starts once every job's workloads exist. Type token
    ``pulumi-python:dynamic/trainjobs:JobCompletion``; ``outcomes`` holds each job's outcome.
    """

    def __init__(
        self,
        name: str,
        jobs: Sequence[TrainingJob],
        settings: completion.WatchSettings | None = None,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        # The uids make every workload a dependency already (Pulumi adds an input's resources
        # to the dependencies); listing them again cost the SDK 0.2 s for 100 jobs.
        depends_on = pulumi.ResourceOptions(
            depends_on=[anchor for job in jobs for anchor in job.anchor]
        )
        super().__init__(
            name,
            [
                completion.WatchedJob(job.target, job.uids(), job.watch_description())
                for job in jobs
            ],
            settings or completion.WatchSettings(),
            pulumi.ResourceOptions.merge(opts, depends_on),
        )
        for job in jobs:
            job.watched_by(self.outcome(job))

    def outcome(self, job: TrainingJob) -> pulumi.Output[dict[str, Any] | None]:
        """One job's outcome (unknown until it ends)."""
        return pulumi.Output.all(self.outcomes, job.watch_key()).apply(
            lambda values: (values[0] or {}).get(values[1])
        )


def _section(spec: object) -> object:
    """A spec model as the mapping of what the program set (defaults stay the operator's, as
    in YAML), its values as given (Outputs among them); anything else as it is."""
    if isinstance(spec, BaseModel):
        return spec.model_dump(by_alias=True, exclude_unset=True)
    return spec


def own_source(kind: str, name: object, source: object) -> str:
    """What error messages call the job: ``source`` when given as a str, else ``<Kind>
    <name>`` (the kind alone when the name is no str)."""
    if isinstance(source, str) and source:
        return source
    return f"{kind} {name}" if isinstance(name, str) else kind


def refused(error: UserError) -> pulumi.RunError:
    """The error a program raises for a user's mistake: Pulumi reports a RunError without a
    stack trace, on a terminal, so every character the user gave is shown escaped."""
    return pulumi.RunError(escape(str(error), keep_newlines=True))


def _list(value: Any) -> list[Any]:
    """A List's ``items`` as written when it is a list; anything else is the parser's to refuse."""
    return value if isinstance(value, list) else []
