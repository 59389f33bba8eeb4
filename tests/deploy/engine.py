"""The Pulumi engine's and pulumi-kubernetes' steps for a stack, played against the API fake.

There is no Pulumi CLI here, so lifecycle tests replay what `pulumi up` and `pulumi refresh`
do with the resources the real program registers (`run_preview`: inputs and options),
following the engine and pulumi-kubernetes 4.x closely where trainjobs depends on them:

- ``ignoreChanges``: the old inputs' value is put back into the new inputs before the diff
  (engine ``processIgnoreChanges``, pkg/resource/deploy/step_generator.go); not for a
  replacement's create: the engine checks the program's own inputs again for it ("we need
  to recompute the default values", same file), so an ignored field gets the program's value;
- the diff: pulumi-kubernetes' replace-on-change table plus the resource's
  ``replaceOnChanges`` (the offline review's model of both, `trainjobs.review.compare`);
- create: a POST, not retried on AlreadyExists (await.go ``Creation``), then the await:
  ``pulumi.com/skipAwait`` returns at once, ``pulumi.com/waitFor`` evaluates its JSONPath
  on the created object, anything else is not modelled here (it would block on the Job);
- update: pulumi-kubernetes first reads the live object and fails when it is gone
  (provider/pkg/await/await.go ``Update``: a GET, no fallback to a create); then a merge
  patch of the new inputs (server-side apply drops an ignored field that another manager
  owns, ``handleSSAIgnoreFields``); the API server's validation and webhooks apply;
- delete: propagation Foreground by default (``DeletionPropagation``), then the deletion
  await, skipped for Jobs and StatefulSets with skipAwait (``allowsSkipAwaitWithDelete``);
  a replacement of a fixed name deletes first (provider ``Diff``'s deleteBeforeReplace);
- refresh: an object that is gone (404) leaves the state; a live one's inputs become the
  live object pruned to the inputs' shape (``pruneLiveState``); a Job that is not Complete
  is read with an initialization error (the Job awaiter's ``Read`` runs unless
  ``skipAwait``, await.go ``Read``, and fails for an unfinished Job, provider/pkg/await/
  job.go), which the engine reports as a warning and turns into an update at the next
  `pulumi up` even with no diff (pkg/resource/deploy/step_generator.go, ``hasInitErrors``);
- the completion watcher: its provider's ``check``, ``diff``, then ``create`` or ``update``
  with the old state, the workloads' uids resolved from the live objects.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass
from typing import Any

from tests.kubefake import ApiError, FakeKube
from trainjobs.deploy.completion import JobCompletionProvider
from trainjobs.review.compare import diff_resource
from trainjobs.review.preview import PreviewResult, Registration
from trainjobs.review.replacement import ProviderSettings
from trainjobs.review.snapshot import Resource

COMPLETION = "pulumi-python:dynamic/trainjobs:JobCompletion"
PLURALS = {
    "ConfigMap": "configmaps",
    "Secret": "secrets",
    "ServiceAccount": "serviceaccounts",
    "Role": "roles",
    "RoleBinding": "rolebindings",
    "Service": "services",
    "StatefulSet": "statefulsets",
    "Job": "jobs",
    "Pod": "pods",
    "JobSet": "jobsets",
}
SKIP_AWAIT_WITH_DELETE = {"Job", "StatefulSet", "Deployment", "DaemonSet", "Pod"}


class EngineError(Exception):
    """What would fail `pulumi up`."""


@dataclass
class Entry:
    registration: Registration
    inputs: dict[str, Any]
    uid: str | None = None
    """The object's uid as the state records it (an output of the create, or a refresh)."""
    init_errors: bool = False
    """A refresh read it with an initialization error (an unfinished Job)."""


def _reset(path: str, old: dict[str, Any], new: dict[str, Any]) -> None:
    """The engine's ignoreChanges: the old value at ``path`` (dotted), or none."""
    keys = path.split(".")
    source: Any = old
    for key in keys:
        source = source.get(key) if isinstance(source, dict) else None
    target = new
    for key in keys[:-1]:
        target = target.setdefault(key, {})
    if source is None:
        target.pop(keys[-1], None)
    else:
        target[keys[-1]] = copy.deepcopy(source)


def prune(live: Any, shape: Any) -> Any:
    """pulumi-kubernetes' ``pruneMap``/``pruneSlice``: the live value in the inputs' shape."""
    if isinstance(live, dict) and isinstance(shape, dict):
        return {key: prune(value, shape[key]) for key, value in live.items() if key in shape}
    if isinstance(live, list) and isinstance(shape, list):
        return [prune(value, model) for value, model in zip(live, shape, strict=False)]
    return live


class Engine:
    """One stack's state and the steps that change it."""

    def __init__(self, kube: FakeKube, kubeconfig: str) -> None:
        self.kube = kube
        self.kubeconfig = kubeconfig
        self.state: dict[tuple[str, str], Entry] = {}
        self.watcher: dict[str, Any] | None = None
        self.steps: list[tuple[str, str]] = []
        self.warnings: list[str] = []
        """Resources the engine warned about (initialization errors from a refresh)."""
        self.provider = JobCompletionProvider()

    # -- pulumi up ------------------------------------------------------------------------

    def up(self, program: PreviewResult) -> None:
        """Apply the program's Kubernetes objects (not the watcher: see `watch`)."""
        wanted = [r for r in program.kubernetes_objects()]
        keys = {(r.type, r.name) for r in wanted}
        for registration in wanted:
            key = (registration.type, registration.name)
            entry = self.state.get(key)
            if entry is None:
                self._create(registration)
                continue
            new = copy.deepcopy(registration.inputs)
            for path in registration.ignore_changes:
                _reset(path, entry.inputs, new)
            operation = diff_resource(
                _resource(entry.registration, entry.inputs),
                _resource(registration, new),
                ProviderSettings(),
            ).operation
            if operation == "replace":
                self._delete(entry)
                self._create(registration)  # the program's inputs, checked again
            elif operation == "update" or entry.init_errors:
                self.warnings += [registration.name] if entry.init_errors else []
                self._update(registration, entry, new)
            else:
                self.state[key] = Entry(registration, entry.inputs, entry.uid)
        for key, entry in reversed(list(self.state.items())):
            if key not in keys:
                self._delete(entry)
                del self.state[key]

    def watch(self, program: PreviewResult, **overrides: Any) -> dict[str, Any]:
        """The completion watcher's step: check, diff, then create or update (blocking for
        the jobs). Returns the outcomes; raises what the provider raises."""
        registration = next(r for r in program.resources if r.type == COMPLETION)
        news = {
            **registration.inputs,
            "kubeconfig": self.kubeconfig,
            "jobs": [
                {**job, "uids": self._uids(job["target"])} for job in registration.inputs["jobs"]
            ],
            **overrides,
        }
        news.pop("__provider", None)
        news = self.provider.check(self.watcher or {}, news).inputs
        if self.watcher is None:
            self.steps.append(("create", "completion"))
            created = self.provider.create(news)
            self.watcher = created.outs
        else:
            diff = self.provider.diff("completion", self.watcher, news)
            if diff.replaces:
                self.steps.append(("replace", "completion"))
                self.watcher = self.provider.create(news).outs
            elif diff.changes:
                self.steps.append(("update", "completion"))
                self.watcher = self.provider.update("completion", self.watcher, news).outs
        return self.watcher["outcomes"]

    def entry(self, type_: str, name: str) -> Entry:
        return self.state[(type_, name)]

    # -- pulumi refresh --------------------------------------------------------------------

    def refresh(self) -> list[str]:
        """Read every object back; returns the names dropped because they are gone."""
        gone = []
        for key, entry in list(self.state.items()):
            manifest = entry.inputs
            plural = PLURALS[manifest["kind"]]
            meta = manifest["metadata"]
            if not self.kube.exists(plural, meta["name"], meta.get("namespace", "default")):
                del self.state[key]
                gone.append(meta["name"])
                continue
            live = self.kube.get(plural, meta["name"], meta.get("namespace", "default"))
            entry.inputs = prune(live, entry.inputs)
            entry.uid = live["metadata"]["uid"]
            skip = (meta.get("annotations") or {}).get("pulumi.com/skipAwait") == "true"
            entry.init_errors = manifest["kind"] == "Job" and not skip and not _complete(live)
        if self.watcher is not None:
            self.watcher = self.provider.read("completion", self.watcher).outs
        return gone

    # -- steps --------------------------------------------------------------------------------

    def _create(self, registration: Registration, inputs: dict[str, Any] | None = None) -> None:
        manifest = copy.deepcopy(inputs if inputs is not None else registration.inputs)
        plural = PLURALS[manifest["kind"]]
        self.steps.append(("create", registration.name))
        try:
            created = self.kube.create(plural, manifest)
        except ApiError as error:
            raise EngineError(f"creating {registration.name}: {error.message}") from error
        annotations = manifest["metadata"].get("annotations") or {}
        wait_for = annotations.get("pulumi.com/waitFor")
        if annotations.get("pulumi.com/skipAwait") != "true" and wait_for is not None:
            self._await_jsonpath(plural, created, wait_for)
        elif annotations.get("pulumi.com/skipAwait") != "true" and manifest["kind"] in (
            "Job",
            "StatefulSet",
        ):
            raise EngineError(f"{registration.name}: the default await is not modelled")
        self.state[(registration.type, registration.name)] = Entry(
            registration, manifest, created["metadata"]["uid"]
        )

    def _await_jsonpath(self, plural: str, created: dict[str, Any], expression: str) -> None:
        """`jsonpath={.a.b}` (the path exists) or `jsonpath={.a.b}=value`."""
        path, _, value = expression.removeprefix("jsonpath=").partition("=")
        keys = path.strip("{}").strip(".").split(".")
        meta = created["metadata"]
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            found: Any = self.kube.get(plural, meta["name"], meta["namespace"])
            for key in keys:
                found = found.get(key) if isinstance(found, dict) else None
            if found is not None and (not value or str(found) == value):
                return
            time.sleep(0.01)
        raise EngineError(f"{meta['name']}: timed out waiting for {expression}")

    def _update(self, registration: Registration, entry: Entry, new: dict[str, Any]) -> None:
        meta = new["metadata"]
        self.steps.append(("update", registration.name))
        namespace = meta.get("namespace", "default")
        if not self.kube.exists(PLURALS[new["kind"]], meta["name"], namespace):
            # await.go `Update` reads the live object first and returns the GET's error.
            raise EngineError(
                f'updating {registration.name}: {PLURALS[new["kind"]]} "{meta["name"]}" not found'
            )
        patch = copy.deepcopy(new)
        for path in registration.ignore_changes:
            _reset(path, {}, patch)  # owned by the watcher: left out of the apply
        try:
            self.kube.patch_object(
                PLURALS[new["kind"]], meta["name"], meta.get("namespace", "default"), patch
            )
        except ApiError as error:
            raise EngineError(f"updating {registration.name}: {error.message}") from error
        self.state[(registration.type, registration.name)] = Entry(registration, new, entry.uid)

    def _delete(self, entry: Entry) -> None:
        manifest = entry.inputs
        meta = manifest["metadata"]
        namespace = meta.get("namespace", "default")
        plural = PLURALS[manifest["kind"]]
        self.steps.append(("delete", meta["name"]))
        annotations = meta.get("annotations") or {}
        try:
            self.kube.request_delete(plural, meta["name"], namespace, "Foreground")
        except ApiError as error:
            if error.code == 404:
                return  # deleted out of band: as good as deleted (await.go `Deletion`)
            raise
        skip = (
            annotations.get("pulumi.com/skipAwait") == "true"
            and manifest["kind"] in SKIP_AWAIT_WITH_DELETE
        )
        if skip:
            return
        self.kube.wait_until(lambda: not self.kube.exists(plural, meta["name"], namespace))

    def _uids(self, target: dict[str, Any]) -> dict[str, str]:
        """The job's workloads' uids as the state records them (the program's Output)."""
        names = [*target["success_jobs"], *target.get("worker_jobs", [])]
        names += [worker["name"] for worker in target.get("workers", [])]
        by_name = {
            name: entry.uid
            for (_, name), entry in self.state.items()
            if entry.inputs["kind"] in ("Job", "StatefulSet")
        }
        return {name: by_name[name] for name in dict.fromkeys(names) if by_name.get(name)}


def _complete(job: dict[str, Any]) -> bool:
    """The Job awaiter's readiness: a Complete condition (provider/pkg/await/job.go)."""
    conditions = (job.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Complete" and c["status"] == "True" for c in conditions)


def _resource(registration: Registration, inputs: dict[str, Any]) -> Resource:
    return Resource(
        key=f"{registration.type}::{registration.name}",
        type=registration.type,
        name=registration.name,
        ignore_changes=tuple(registration.ignore_changes),
        replace_on_changes=tuple(registration.replace_on_changes),
        delete_before_replace=registration.delete_before_replace,
        manifest=inputs,
    )
