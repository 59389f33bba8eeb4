"""Inputs for values, plain for structure, under the SDK's mocks (an update, and a preview in
which the program's own resources' outputs are not known yet): a Namespace made in the
program, an image from an Output, a template as ``PodTemplateSpecArgs``, two jobs of one name
in two namespaces; a structural Output refused naming the field."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
import yaml
from pulumi.output import Unknown
from pulumi.runtime import mocks, rpc, settings

import trainjobs
from tests.conftest import REPO
from trainjobs.review.preview import run_preview

IMAGE = "registry.example/train:1"
UNKNOWN = object()


class _Mocks(pulumi.runtime.Mocks):
    """The program's own resources: a Namespace is named by its provider (unknown in a
    preview, as pulumi-kubernetes' Check names it only when it runs)."""

    def __init__(self, preview: bool) -> None:
        self.preview = preview

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        if args.typ == "kubernetes:core/v1:Namespace":
            return "ns", {} if self.preview else {"metadata": {"name": "ml-4f2a9c1d"}}
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


class _Monitor(mocks.MockMonitor):
    def __init__(self, preview: bool) -> None:
        super().__init__(_Mocks(preview))
        self.registered: list[tuple[str, str, dict[str, Any]]] = []

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
            self.registered.append((request.type, request.name, inputs))
        return super().RegisterResource(request)


@pytest.fixture(params=[False, True], ids=["up", "preview"])
def monitor(request: pytest.FixtureRequest) -> Iterator[_Monitor]:
    recording = _Monitor(request.param)
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(recording.mocks, preview=request.param, monitor=recording)
    yield recording


def template(image: pulumi.Input[str]) -> k8s.core.v1.PodTemplateSpecArgs:
    return k8s.core.v1.PodTemplateSpecArgs(
        spec=k8s.core.v1.PodSpecArgs(
            containers=[
                k8s.core.v1.ContainerArgs(
                    name="pytorch",
                    image=image,
                    env=[k8s.core.v1.EnvVarArgs(name="EPOCHS", value="3")],
                )
            ]
        )
    )


def spec(image: pulumi.Input[str]) -> dict[str, Any]:
    replica = {"replicas": 1, "restartPolicy": "OnFailure", "template": template(image)}
    return {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}}


def shown(value: Any) -> Any:
    return UNKNOWN if isinstance(value, Unknown) or value == rpc.UNKNOWN else value


def test_a_program_of_outputs_registers_the_objects_with_the_outputs_in_place(monitor):
    @pulumi.runtime.test
    def program() -> None:
        namespace = k8s.core.v1.Namespace("ml")
        image = pulumi.Output.from_input(IMAGE)
        trainjobs.PyTorchJob(
            "mnist-ml", spec(image), job_name="mnist", namespace=namespace.metadata.name
        )
        trainjobs.PyTorchJob("mnist-b", spec(image), job_name="mnist", namespace="team-b")

    program()
    preview = monitor.mocks.preview  # type: ignore[attr-defined]
    components = [(t, n) for t, n, _ in monitor.registered if t.startswith("trainjobs:")]
    assert components == [
        ("trainjobs:index:PyTorchJob", "mnist-ml"),
        ("trainjobs:index:PyTorchJob", "mnist-b"),
    ]
    jobs = {name: inputs for kind, name, inputs in monitor.registered if kind.endswith(":Job")}
    assert sorted(jobs) == [
        "mnist-b-master-0",
        "mnist-b-worker-0",
        "mnist-ml-master-0",
        "mnist-ml-worker-0",
    ]
    for resource, namespace in (
        ("mnist-ml-master-0", UNKNOWN if preview else "ml-4f2a9c1d"),
        ("mnist-b-master-0", "team-b"),
    ):
        manifest = jobs[resource]
        assert manifest["metadata"]["name"] == "mnist-master-0"
        assert shown(manifest["metadata"]["namespace"]) == namespace
        (container,) = manifest["spec"]["template"]["spec"]["containers"]
        assert container["image"] == IMAGE
        env = {item["name"]: shown(item.get("value")) for item in container["env"]}
        assert env["EPOCHS"] == "3"
        # The operator's environment names the master by its Service in the namespace.
        assert env["MASTER_ADDR"] == "mnist-master-0"


def test_the_namespace_output_reaches_the_watchers_description(monitor):
    @pulumi.runtime.test
    def program() -> None:
        namespace = k8s.core.v1.Namespace("ml")
        job = trainjobs.PyTorchJob(
            "mnist", spec(IMAGE), namespace=namespace.metadata.name, watched=True
        )
        trainjobs.JobCompletion("completion", [job])

    program()
    preview = monitor.mocks.preview  # type: ignore[attr-defined]
    (watcher,) = [i for t, _, i in monitor.registered if t.endswith(":JobCompletion")]
    (watched,) = watcher["jobs"]
    namespace = watched["target"]["namespace"]
    assert shown(namespace) == (UNKNOWN if preview else "ml-4f2a9c1d")


def test_an_output_where_the_graph_needs_a_plain_value_is_refused_naming_the_field(monitor):
    replicas = spec(IMAGE)
    replicas["pytorchReplicaSpecs"]["Worker"] = {
        **replicas["pytorchReplicaSpecs"]["Worker"],
        "replicas": pulumi.Output.from_input(2),
    }
    with pytest.raises(pulumi.RunError) as error:
        trainjobs.PyTorchJob("mnist", replicas)
    assert str(error.value).splitlines() == [
        "PyTorchJob mnist: invalid arguments (1 problem(s))",
        "  spec.pytorchReplicaSpecs.Worker.replicas: is a pulumi.Output, but this field shapes "
        "the objects (kind, version, names, replica types and counts, transport) and must be "
        "known when the program runs; give it a plain value (Outputs are taken where a "
        "Kubernetes object only carries the value: images, commands, env values, namespace, "
        "labels' values, quantities...)",
    ]


# --- every language: the provider's schema takes Inputs, and a construct with an unknown -------


def test_the_providers_schema_takes_the_spec_namespace_and_labels_as_inputs():
    schema = json.loads((REPO / "provider" / "schema.json").read_text())
    plain = {
        (resource.rsplit(":", 1)[-1], name)
        for resource, entry in schema["resources"].items()
        for name, prop in entry["inputProperties"].items()
        if prop.get("plain") or prop.get("additionalProperties", {}).get("plain")
    }
    assert plain == {("TrainJob", "runtimes")}


THROUGH_THE_PROVIDER = """
import yaml
import pulumi_kubernetes as k8s
import pulumi_tls as tls
from trainjobs.deploy.provider import provider

key = tls.PrivateKey("key", algorithm="ED25519")
image = key.public_key_openssh.apply(lambda _: "registry.example/train:1")  # unknown in a preview
namespace = k8s.core.v1.Namespace("ml")
spec = yaml.safe_load(open({file!r}))["spec"]
spec["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0]["image"] = image
inputs = {{"spec": spec, "namespace": namespace.metadata.name}}
provider().construct("mnist", "trainjobs:index:PyTorchJob", inputs, None)
"""


def test_a_job_constructed_through_the_provider_with_an_unknown_value_keeps_it_unknown(tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    program = THROUGH_THE_PROVIDER.format(file=str(REPO / "jobs" / "pytorch-mnist.yaml"))
    (root / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    result = run_preview("test", root)
    objects = {r.name: r.inputs for r in result.kubernetes_objects()}
    (namespace,) = [name for name in objects if name == "ml"]
    for job, image in (
        ("mnist-master-0", "[known after pulumi up]"),
        ("mnist-worker-0", "trainjobs/pytorch:2.13.0-cpu"),
    ):
        manifest = objects[job]
        assert manifest["metadata"]["namespace"] == objects[namespace]["metadata"]["name"]
        assert manifest["spec"]["template"]["spec"]["containers"][0]["image"] == image


def test_the_readmes_library_example_previews_offline(tmp_path):
    """README "Library": a Namespace and an image built in the program, a sweep on them."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("\n## Library\n", 1)[1]
    program = section.split("```python\n", 1)[1].split("```", 1)[0]
    root = tmp_path / "p"
    root.mkdir()
    (root / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    result = run_preview("test", root)
    urns = {r.urn for r in result.resources}
    assert sorted((r.type, r.name) for r in result.resources if r.parent not in urns) == [
        ("docker-build:index:Image", "trainer"),
        ("kubernetes:core/v1:Namespace", "ml"),
        ("pulumi-python:dynamic/trainjobs:JobCompletion", "sweep"),
        ("trainjobs:index:PyTorchJob", "sweep-0"),
        ("trainjobs:index:PyTorchJob", "sweep-1"),
    ]
    objects = {r.name: r.inputs for r in result.kubernetes_objects()}
    namespace = objects["ml"]["metadata"]["name"]
    for job, rate in (("sweep-0", "0.01"), ("sweep-1", "0.001")):
        for replica in ("master-0", "worker-0", "worker-1"):
            manifest = objects[f"{job}-{replica}"]
            assert manifest["metadata"]["namespace"] == namespace
            (container,) = manifest["spec"]["template"]["spec"]["containers"]
            # The image's digest is known once it is built.
            assert container["image"] == "[known after pulumi up]"
            assert container["args"] == ["--learning-rate", rate]
    assert result.outputs == {"outcomes": ["[known after pulumi up]"] * 2}


def memory_job(memory: pulumi.Input[str]) -> None:
    container = {"name": "pytorch", "image": IMAGE, "resources": {"limits": {"memory": memory}}}
    replica = {
        "replicas": 1,
        "restartPolicy": "OnFailure",
        "template": {"spec": {"containers": [container]}},
    }
    trainjobs.PyTorchJob("mnist", {"pytorchReplicaSpecs": {"Master": replica}})


def test_a_quantity_from_an_output_goes_in_place(monitor):
    @pulumi.runtime.test
    def program() -> None:
        memory_job(pulumi.Output.from_input("2Gi"))

    program()
    (manifest,) = [i for t, n, i in monitor.registered if t.endswith(":Job")]
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert container["resources"] == {"limits": {"memory": "2Gi"}}


def test_a_quantity_from_an_output_is_checked_when_it_resolves(monitor):
    @pulumi.runtime.test
    def program() -> None:
        memory_job(pulumi.Output.from_input("lots"))

    with pytest.raises(pulumi.RunError) as error:
        program()
    assert str(error.value) == (
        "PyTorchJob mnist: spec.pytorchReplicaSpecs.Master.template.spec.containers[0]"
        ".resources.limits.memory: 'lots' (an Output's value): quantities must match the "
        "regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


def test_a_spec_model_takes_a_template_as_pod_template_spec_args(monitor):
    @pulumi.runtime.test
    def program() -> None:
        image = pulumi.Output.from_input(IMAGE)
        master = trainjobs.ReplicaSpec(
            replicas=1, restart_policy="OnFailure", template=template(image)
        )
        spec = trainjobs.PyTorchJobSpec(pytorch_replica_specs={"Master": master})
        trainjobs.PyTorchJob("mnist", spec)

    program()
    (manifest,) = [i for t, n, i in monitor.registered if t.endswith(":Job")]
    (container,) = manifest["spec"]["template"]["spec"]["containers"]
    assert (container["name"], container["image"]) == ("pytorch", IMAGE)
