"""The completion watcher talks to the cluster of the pulumi-kubernetes provider its options
name (``provider``, ``providers`` or the parent's), as the job's objects do; without one, to the
stack's ``kubernetes:kubeconfig`` and ``kubernetes:context``."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml
from pulumi.runtime import mocks, rpc, settings

from tests.conftest import REPO
from tests.deploy.test_completion import target
from trainjobs.core.errors import UserError
from trainjobs.deploy.completion import JobCompletion, WatchedJob, WatchSettings
from trainjobs.review.preview import PreviewResult, run_preview

CLUSTER_KUBECONFIG = "apiVersion: v1\nkind: Config\ncurrent-context: ci\n"


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


class _Monitor(mocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.watchers: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:
        if request.type.endswith(":JobCompletion"):
            self.watchers.append(request)
        return super().RegisterResource(request)


@pytest.fixture
def monitor() -> Iterator[_Monitor]:
    recording = _Monitor()
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(recording.mocks, preview=False, monitor=recording)
    yield recording


STACK_SETTINGS = WatchSettings(
    kubeconfig=pulumi.Output.secret("the stack's kubernetes:kubeconfig"), context="stack-context"
)


def watcher_inputs(monitor: _Monitor, options: Any) -> dict[str, Any]:
    """The watcher's inputs as the engine receives them; ``options`` makes its options."""

    @pulumi.runtime.test
    def register() -> None:
        JobCompletion("completion", [WatchedJob(target(), {})], STACK_SETTINGS, options())

    register()
    (request,) = monitor.watchers
    inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
    # The SDK leaves out an input that is None, as the watcher's defaults do.
    kubeconfig = inputs.get("kubeconfig")
    if kubeconfig is not None:
        assert rpc.is_rpc_secret(kubeconfig)
        kubeconfig = kubeconfig["value"]
    return {"kubeconfig": kubeconfig, "context": inputs.get("context")}


def cluster() -> k8s.Provider:
    return k8s.Provider("cluster", kubeconfig=CLUSTER_KUBECONFIG, context="ci", namespace="ml")


@pytest.mark.parametrize(
    "options",
    [
        lambda: pulumi.ResourceOptions(provider=cluster()),
        lambda: pulumi.ResourceOptions(providers=[cluster()]),
        lambda: pulumi.ResourceOptions(providers={"kubernetes": cluster()}),
        lambda: pulumi.ResourceOptions(
            parent=pulumi.ComponentResource(
                "test:index:Jobs", "jobs", opts=pulumi.ResourceOptions(providers=[cluster()])
            )
        ),
    ],
    ids=["provider", "providers-list", "providers-map", "parent"],
)
def test_the_watcher_uses_the_kubeconfig_and_context_of_the_kubernetes_provider(
    monitor: _Monitor, options: Any
) -> None:
    assert watcher_inputs(monitor, options) == {
        "kubeconfig": CLUSTER_KUBECONFIG,
        "context": "ci",
    }


def test_a_provider_without_settings_means_the_ambient_kubeconfig_not_the_stacks(
    monitor: _Monitor,
) -> None:
    """pulumi-kubernetes reads the stack's kubernetes:* settings for its default provider
    only; an explicit one without a kubeconfig uses $KUBECONFIG or ~/.kube/config."""
    options = lambda: pulumi.ResourceOptions(provider=k8s.Provider("ambient"))  # noqa: E731
    assert watcher_inputs(monitor, options) == {"kubeconfig": None, "context": None}


def test_without_a_kubernetes_provider_the_watcher_uses_the_stacks_settings(
    monitor: _Monitor,
) -> None:
    other = lambda: pulumi.ResourceOptions(  # noqa: E731
        providers={"tls": pulumi.ProviderResource("tls", "keys")}
    )
    assert watcher_inputs(monitor, other) == {
        "kubeconfig": "the stack's kubernetes:kubeconfig",
        "context": "stack-context",
    }


# --- the public components: the watcher follows the jobs' objects to their cluster ------------

JOBS_ON_A_PROVIDER = """
import pulumi
import pulumi_kubernetes as k8s
import yaml
import trainjobs

document = yaml.safe_load(open({file!r}))
clusters = {{name: k8s.Provider(name, context=name) for name in ("ci", "lab")}}
jobs = [
    trainjobs.TFJob(
        f"tf-{{index}}", document["spec"], watched=True,
        opts=pulumi.ResourceOptions(provider=clusters[cluster]),
    )
    for index, cluster in enumerate({clusters!r})
]
trainjobs.JobCompletion("completion", jobs)
"""


def preview_jobs(tmp_path: Path, clusters: list[str]) -> PreviewResult:
    root = tmp_path / "project"
    root.mkdir()
    program = JOBS_ON_A_PROVIDER.format(
        file=str(REPO / "jobs" / "tf-mnist.yaml"), clusters=clusters
    )
    (root / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    return run_preview("test", root)


def test_without_a_provider_of_its_own_the_watcher_uses_its_jobs_provider(tmp_path: Path) -> None:
    result = preview_jobs(tmp_path, ["lab", "lab"])
    (watcher,) = [r for r in result.resources if r.type.endswith(":JobCompletion")]
    # The kubeconfig is a secret whatever it holds (the provider's has none: ambient).
    assert (watcher.inputs["context"], watcher.inputs["kubeconfig"]) == ("lab", "[secret]")


def test_jobs_on_two_clusters_need_two_watchers(tmp_path: Path) -> None:
    with pytest.raises(UserError) as error:
        preview_jobs(tmp_path, ["ci", "lab"])
    assert str(error.value) == (
        "JobCompletion completion: its jobs' objects go to 2 clusters (the kubernetes "
        "providers ci, lab); a watcher talks to one: make a JobCompletion per provider"
    )
