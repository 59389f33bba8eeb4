"""Offline preview: evaluate the real `__main__.py` under the Pulumi SDK's mock runtime.

No Pulumi CLI, no cluster, no credentials. Every resource the program registers is recorded
with the options Pulumi would see (parent, dependencies, ignore_changes, replacement order),
each Kubernetes object is written as YAML, and `graph.json` summarises the resource graph.
"""

from __future__ import annotations

import asyncio
import heapq
import json
import os
import runpy
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings
from pulumi.runtime.stack import run_in_stack
from pulumi.runtime.sync_await import _sync_await

from trainjobs.core.errors import UserError
from trainjobs.core.manifests import prepare_output_dir, write_manifests
from trainjobs.deploy.infra_stack import STACK_REFERENCES_FILE, stack_references
from trainjobs.review.naming import (
    auto_name,
    duplicate_urn_message,
    engine_urn,
    is_kubernetes_object,
)
from trainjobs.review.stack_file import stack_settings

PROJECT = "trainjobs"
REDACTED = "[secret]"
# What a preview cannot know yet, such as the completion watcher's outcome.
UNKNOWN = "[known after pulumi up]"


@dataclass
class Registration:
    """One resource as the Pulumi engine would have received it."""

    urn: str
    type: str
    name: str
    parent: str
    custom: bool
    dependencies: list[str]
    ignore_changes: list[str]
    delete_before_replace: bool
    inputs: dict[str, Any]
    replace_on_changes: list[str] = field(default_factory=list)

    @property
    def object_name(self) -> str:
        """A Kubernetes object's name, or its resource name while the name is not known (a
        preview) or is a secret."""
        metadata = self.inputs.get("metadata")
        name = metadata.get("name") if isinstance(metadata, dict) else None
        return name if isinstance(name, str) and name not in (UNKNOWN, REDACTED) else self.name

    @property
    def is_kubernetes(self) -> bool:
        """A Kubernetes object (not a Helm release or a chart, YAML or provider resource)."""
        return (
            self.custom
            and self.type.startswith("kubernetes:")
            and "apiVersion" in self.inputs
            and "kind" in self.inputs
        )


@dataclass
class PreviewResult:
    stack: str
    resources: list[Registration]
    outputs: dict[str, Any] = field(default_factory=dict)
    secret_config: list[str] = field(default_factory=list)
    """Stack settings whose values the program made secret: never shown, not even in diffs."""

    def kubernetes_objects(self) -> list[Registration]:
        return [r for r in self.resources if r.is_kubernetes]

    def graph_summary(self) -> list[dict[str, Any]]:
        names = {r.urn: _short(r) for r in self.resources}
        return [
            {
                "type": r.type,
                "name": r.name,
                "parent": names.get(r.parent),
                "dependsOn": sorted(names[d] for d in r.dependencies if d in names),
                "ignoreChanges": r.ignore_changes,
                "replaceOnChanges": r.replace_on_changes,
                "deleteBeforeReplace": r.delete_before_replace,
                # Kubernetes objects have their own files; other resources (the completion
                # watcher) are summarised here so that diffs see their changes too.
                **({"inputs": _own_inputs(r)} if r.custom and not r.is_kubernetes else {}),
            }
            for r in self.resources
        ]


def _own_inputs(registration: Registration) -> dict[str, Any]:
    """Inputs without engine internals (`__provider` is the pickled dynamic provider)."""
    return {k: v for k, v in registration.inputs.items() if not k.startswith("__")}


def _short(registration: Registration) -> str:
    return f"{registration.type}::{registration.name}"


class _Mocks(pulumi.runtime.Mocks):
    """Resources "create" with their inputs as state, the way a preview shows them; a stack
    reference reads the referenced stack's outputs from :data:`STACK_REFERENCES_FILE`."""

    def __init__(self, stack_outputs: dict[str, Any] | None = None) -> None:
        self.stack_outputs = stack_outputs or {}
        self.missing: list[str] = []

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == "pulumi:pulumi:StackReference":
            # The engine reads the stack's outputs (pulumi/stack_reference.py: the resource's
            # `outputs` and `secretOutputNames` state); a stack not in the file has none.
            stack = args.inputs.get("name", args.name)
            if stack not in self.stack_outputs:
                self.missing.append(stack)
            outputs = self.stack_outputs.get(stack, {})
            return stack, {"name": stack, "outputs": outputs, "secretOutputNames": []}
        return args.name, args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


class _RecordingMonitor(mocks.MockMonitor):
    """Records the resource options that the mock runtime itself ignores, and does what the
    engine and pulumi-kubernetes do that the mock runtime does not: the engine's URNs, a
    duplicate URN noted (:attr:`duplicates`), unnamed Kubernetes objects named."""

    def __init__(self, redactor: _Redactor, stack_outputs: dict[str, Any] | None = None) -> None:
        super().__init__(_Mocks(stack_outputs))
        self.registrations: list[Registration] = []
        self.redactor = redactor
        self.duplicates: list[str] = []
        self._urns: set[str] = set()
        # The SDK calls the monitor from its executor's threads.
        self._lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        return engine_urn(pulumi.get_stack(), pulumi.get_project(), parent, type_, name)

    def _claim(self, urn: str) -> None:
        with self._lock:
            if urn in self._urns:
                self.duplicates.append(urn)
            self._urns.add(urn)

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            urn = self.make_urn(request.parent, request.type, request.name)
            self._claim(urn)
            if request.custom and is_kubernetes_object(request.type, request.object):
                named = auto_name(request.object, urn, request.name)
                if named is not None:
                    original, request = request, type(request)()
                    request.CopyFrom(original)
                    request.object.CopyFrom(named)
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                Registration(
                    urn=response.urn,
                    type=request.type,
                    name=request.name,
                    parent=request.parent,
                    custom=request.custom,
                    dependencies=list(request.dependencies),
                    ignore_changes=list(request.ignoreChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                    inputs=self.redactor.plain(
                        rpc.deserialize_properties(request.object, keep_unknowns=True)
                    ),
                    replace_on_changes=list(request.replaceOnChanges),
                )
            )
        return response

    def ReadResource(self, request: Any) -> Any:
        """A read resource (a stack reference): recorded, so the preview shows what it reads."""
        self._claim(self.make_urn(request.parent, request.type, request.name))
        response = super().ReadResource(request)
        self.registrations.append(
            Registration(
                urn=response.urn,
                type=request.type,
                name=request.name,
                parent=request.parent,
                custom=True,
                dependencies=list(request.dependencies),
                ignore_changes=[],
                delete_before_replace=False,
                inputs=self.redactor.plain(
                    rpc.deserialize_properties(request.properties, keep_unknowns=True)
                ),
            )
        )
        return response


class _Redactor:
    """Wire values as a reader expects them, secrets masked.

    Secrets become a marker (previews are shared in pull requests), and the stack settings
    whose values went into a secret are noted (:attr:`secret_config`: ``kubernetes:kubeconfig``
    when the program reads it with ``get_secret``), so a diff masks them too. Whole numbers
    come back as ints (protobuf Structs carry only doubles); mapping keys are sorted because
    Structs do not keep their order, with apiVersion, kind and metadata first as in kubectl
    output.
    """

    def __init__(self, config: dict[str, str]) -> None:
        self.config = config
        self.secret_config: set[str] = set()

    def plain(self, value: Any) -> Any:
        if rpc.is_rpc_secret(value):
            self._note(value.get("value"))
            return REDACTED
        if isinstance(value, Unknown) or value == rpc.UNKNOWN:
            return UNKNOWN
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, dict):
            keys = sorted(value, key=lambda key: (_KEY_ORDER.get(key, len(_KEY_ORDER)), key))
            return {key: self.plain(value[key]) for key in keys}
        if isinstance(value, list):
            return [self.plain(item) for item in value]
        return value

    def _note(self, secret: Any) -> None:
        text = secret if isinstance(secret, str) else json.dumps(secret, default=str)
        for key, setting in self.config.items():
            if setting and setting != REDACTED and setting in text:
                self.secret_config.add(key)


_KEY_ORDER = {"apiVersion": 0, "kind": 1, "metadata": 2}


def creation_order(registrations: list[Registration]) -> list[Registration]:
    """Dependencies first, ties broken by type and name: stable across runs.

    The SDK registers resources concurrently, so the order they arrive in is not meaningful.
    Each step takes the smallest ready resource by (parent, type, name), then by arrival (a
    heap of the ready ones: a scan of every waiting resource per step grew with the square
    of the stack).
    """
    by_urn = {r.urn: r for r in registrations}
    waiting = {
        r.urn: {d for d in r.dependencies if d in by_urn} | ({r.parent} & by_urn.keys())
        for r in registrations
    }
    index = {urn: position for position, urn in enumerate(waiting)}
    dependents: dict[str, list[str]] = {urn: [] for urn in waiting}
    for urn, deps in waiting.items():
        for dep in deps:
            dependents[dep].append(urn)

    def entry(urn: str) -> tuple[str, str, str, int, str]:
        r = by_urn[urn]
        return (r.parent, r.type, r.name, index[urn], urn)

    ready = [entry(urn) for urn, deps in waiting.items() if not deps]
    heapq.heapify(ready)
    ordered: list[Registration] = []
    while ready:
        urn = heapq.heappop(ready)[-1]
        ordered.append(by_urn[urn])
        del waiting[urn]
        for dependent in dependents[urn]:
            deps = waiting[dependent]
            deps.discard(urn)
            if not deps:
                heapq.heappush(ready, entry(dependent))
    if waiting:
        raise RuntimeError(f"dependency cycle among {sorted(waiting)}")
    return ordered


def stack_config(project_dir: Path, stack: str) -> dict[str, str]:
    """A stack file's config, keyed as the Pulumi engine passes it (`namespace:key`)."""
    path = project_dir / f"Pulumi.{stack}.yaml"
    if not path.is_file():
        known = ", ".join(
            sorted(p.stem[len("Pulumi.") :] for p in project_dir.glob("Pulumi.*.yaml"))
        )
        raise UserError(f"no stack file {path.name} in {project_dir}; known stacks: {known}")
    config: dict[str, str] = {}
    for key, value in stack_settings(path).items():
        full_key = key if ":" in key else f"{PROJECT}:{key}"
        if isinstance(value, dict) and "secure" in value:
            config[full_key] = REDACTED  # encrypted with the stack's key: not readable offline
        elif isinstance(value, str):
            config[full_key] = value
        else:
            config[full_key] = json.dumps(value)  # objects travel as JSON, as the CLI sends them
    return config


@contextmanager
def _working_directory(path: Path) -> Iterator[None]:
    previous = Path.cwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(previous)


def _run_program(program: Path, stacks: list[pulumi.Resource]) -> None:
    """Run the program's module code; ``stacks`` gets the root Stack it runs under (set in the
    task that runs it, so not visible outside)."""
    root = settings.get_root_resource()
    assert root is not None
    stacks.append(root)
    runpy.run_path(str(program), run_name="__main__")


def run_preview(
    stack: str, project_dir: Path = Path("."), overrides: dict[str, str] | None = None
) -> PreviewResult:
    """Evaluate the project's `__main__.py` for `stack` under mocks and record everything.

    ``overrides``: config values that replace the stack file's (`namespace:key` -> value).
    """
    project_dir = project_dir.resolve()
    program = project_dir / "__main__.py"
    if not program.is_file():
        raise UserError(f"no Pulumi program at {program}")
    config = {**stack_config(project_dir, stack), **(overrides or {})}
    redactor = _Redactor(config)
    monitor = _RecordingMonitor(redactor, stack_references(project_dir))
    pulumi.runtime.set_all_config(config, [])
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(
        monitor.mocks, project=PROJECT, stack=stack, preview=True, monitor=monitor
    )
    # The program runs as the Python language host runs it (pulumi/runtime/stack.py
    # `run_in_stack`): under a fresh root Stack, its module code, then the entrypoint it gave
    # `pulumi.run`, then the stack's outputs. set_mocks made a root Stack already closed to
    # `pulumi.run`: this one replaces it.
    settings.ROOT.set(None)
    stacks: list[pulumi.Resource] = []
    with _working_directory(project_dir):
        try:
            _sync_await(run_in_stack(lambda: _run_program(program, stacks)))
        except pulumi.RunError as error:
            _refuse_duplicates(monitor)
            missing = monitor.mocks.missing  # type: ignore[attr-defined]
            if missing:
                raise UserError(
                    f"{error}\n(offline preview: the program references stack "
                    f"{', '.join(missing)}; put its outputs, as `pulumi stack output --stack "
                    f"NAME --json` prints them, under its name in {STACK_REFERENCES_FILE})"
                ) from None
            raise UserError(str(error)) from None
    _refuse_duplicates(monitor)
    outputs = _outputs(redactor, getattr(stacks[0], "outputs", {}))
    return PreviewResult(
        stack, creation_order(monitor.registrations), outputs, sorted(redactor.secret_config)
    )


def _refuse_duplicates(monitor: _RecordingMonitor) -> None:
    """The engine stops at the first resource whose URN another already has."""
    if monitor.duplicates:
        raise UserError(duplicate_urn_message(monitor.duplicates[0]))


def _outputs(redactor: _Redactor, values: dict[str, Any]) -> dict[str, Any]:
    """The stack outputs as a reader sees them, a secret one (resolved values lose their
    secret wrapping) as the marker. All are awaited in one run of the event loop: a run per
    output cost more than the outputs themselves."""
    names = list(values)
    outputs = [pulumi.Output.from_input(values[name]) for name in names]

    async def read(output: pulumi.Output[Any]) -> tuple[Any, bool]:
        return await output.future(with_unknowns=True), await output.is_secret()

    async def read_all() -> list[tuple[Any, bool]]:
        return list(await asyncio.gather(*(read(output) for output in outputs)))

    result: dict[str, Any] = {}
    for name, (value, secret) in zip(names, _sync_await(read_all()), strict=True):
        if secret:
            redactor.plain(rpc.wrap_rpc_secret(value))
            result[name] = REDACTED
        else:
            result[name] = redactor.plain(value)
    return result


def write_preview(result: PreviewResult, out_dir: Path) -> list[Path]:
    """Write one YAML file per Kubernetes object plus `graph.json`; returns the paths."""
    prepare_output_dir(out_dir)
    objects = result.kubernetes_objects()
    written = write_manifests(
        [r.inputs for r in objects], out_dir, [r.object_name for r in objects]
    )
    graph = out_dir / "graph.json"
    summary = {
        "stack": result.stack,
        "resources": result.graph_summary(),
        "outputs": result.outputs,
        "secretConfig": result.secret_config,
    }
    graph.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    return [*written, graph]
