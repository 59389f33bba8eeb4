"""Outputs through the pure graph: a token in each Output's place, the Output back in what goes
to pulumi-kubernetes (alone, or concatenated inside a string), *Args objects as Kubernetes
mappings, a structural Output refused naming the field, a value checked when it resolves."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pulumi
import pulumi_kubernetes as k8s
import pytest
from pulumi.runtime import settings
from pulumi.runtime.sync_await import _sync_await

from trainjobs.core.errors import ConfigError
from trainjobs.deploy.placeholders import TOKEN, Placeholders, is_value_field
from trainjobs.images.references import reference_problem

OWNER = "TFJob tf-mnist"


class _Mocks(pulumi.runtime.Mocks):
    """Resources have no outputs beyond their inputs: in a preview, the rest is unknown."""

    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


@pytest.fixture(params=[False, True], ids=["up", "preview"])
def preview(request: pytest.FixtureRequest) -> Iterator[bool]:
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(_Mocks(), preview=request.param)
    yield request.param


def value(output: Any) -> Any:
    """What an Output resolves to, None while unknown (a preview)."""
    return _sync_await(pulumi.Output.from_input(output).future())


def test_an_output_is_a_token_in_the_graph_and_the_same_output_in_the_objects(preview):
    image = pulumi.Output.from_input("registry.example/train:1")
    placeholders = Placeholders(OWNER)
    plain = placeholders.hide({"containers": [{"name": "t", "image": image}]}, "template.spec")
    token = plain["containers"][0]["image"]
    assert TOKEN.fullmatch(token)
    assert placeholders.paths == {token: "template.spec.containers[0].image"}
    restored = placeholders.restore({"spec": plain, "replicas": 2})
    assert restored["replicas"] == 2
    assert restored["spec"]["containers"][0]["name"] == "t"
    assert value(restored["spec"]["containers"][0]["image"]) == "registry.example/train:1"


def test_a_token_inside_a_string_becomes_the_concatenation_of_the_parts(preview):
    placeholders = Placeholders(OWNER)
    namespace = placeholders.hide(pulumi.Output.from_input("team-a"), "namespace")
    host = f"tf-mnist-worker-0.tf-mnist.{namespace}.svc:2222"
    tf_config = json.dumps({"cluster": {"worker": [host]}})
    restored = placeholders.restore({"TF_CONFIG": tf_config, "plain": "no token"})
    assert restored["plain"] == "no token"
    assert value(restored["TF_CONFIG"]) == (
        json.dumps({"cluster": {"worker": ["tf-mnist-worker-0.tf-mnist.team-a.svc:2222"]}})
    )


def test_tokens_depend_on_the_component_and_the_field_only():
    first, again, other = Placeholders(OWNER), Placeholders(OWNER), Placeholders("TFJob b")
    one = pulumi.Output.from_input("a")
    two = pulumi.Output.from_input("b")
    assert first.hide(one, "namespace") == again.hide(two, "namespace")
    assert first.hide(one, "labels.team") != first.hide(one, "namespace")
    assert other.hide(one, "namespace") != first.hide(one, "namespace")


def test_a_string_that_holds_no_known_token_is_left_as_it_is():
    placeholders = Placeholders(OWNER)
    stranger = "pulumi-input-0123456789ab"
    assert placeholders.restore([stranger, f"x-{stranger}"]) == [stranger, f"x-{stranger}"]


def test_kubernetes_args_become_mappings_with_the_kubernetes_field_names(preview):
    image = pulumi.Output.from_input("registry.example/train:1")
    template = k8s.core.v1.PodTemplateSpecArgs(
        metadata=k8s.meta.v1.ObjectMetaArgs(labels={"team": "a"}),
        spec=k8s.core.v1.PodSpecArgs(
            host_pid=False,
            restart_policy="OnFailure",
            containers=[
                k8s.core.v1.ContainerArgs(
                    name="tensorflow",
                    image=image,
                    env=[k8s.core.v1.EnvVarArgs(name="A", value="1")],
                )
            ],
            tolerations=[k8s.core.v1.TolerationArgs(key="gpu", operator="Exists")],
        ),
    )
    placeholders = Placeholders(OWNER)
    plain = placeholders.hide(template, "template")
    (token,) = placeholders.outputs
    assert plain == {
        "metadata": {"labels": {"team": "a"}},
        "spec": {
            "hostPID": False,
            "restartPolicy": "OnFailure",
            "containers": [
                {"name": "tensorflow", "image": token, "env": [{"name": "A", "value": "1"}]}
            ],
            "tolerations": [{"key": "gpu", "operator": "Exists"}],
        },
    }


def test_an_output_in_a_field_that_shapes_the_objects_is_refused_naming_it(preview):
    placeholders = Placeholders(OWNER)
    placeholders.hide(
        {
            "Worker": {
                "replicas": pulumi.Output.from_input(2),
                "template": {"spec": {"containers": [{"image": pulumi.Output.from_input("i")}]}},
            }
        },
        "spec.tfReplicaSpecs",
    )
    with pytest.raises(ConfigError) as error:
        placeholders.refuse_structural(OWNER, lambda path: path.endswith(".image"))
    assert str(error.value).splitlines() == [
        "TFJob tf-mnist: invalid arguments (1 problem(s))",
        "  spec.tfReplicaSpecs.Worker.replicas: is a pulumi.Output, but this field shapes the "
        "objects (kind, version, names, replica types and counts, transport) and must be known "
        "when the program runs; give it a plain value (Outputs are taken where a Kubernetes "
        "object only carries the value: images, commands, env values, namespace, labels' "
        "values, quantities...)",
    ]


def test_a_value_unknown_in_a_preview_stays_unknown_in_place(preview):
    namespace = k8s.core.v1.Namespace("ml")
    placeholders = Placeholders(OWNER)
    token = placeholders.hide(
        namespace.metadata.apply(lambda meta: (meta or {}).get("name", "ml-0")), "namespace"
    )
    restored = placeholders.restore({"host": f"w-0.{token}.svc", "namespace": token})
    known = [_sync_await(restored[key].is_known()) for key in ("host", "namespace")]
    # The mocks return no metadata: in a preview it is unknown, as the engine leaves an
    # output a provider has not computed yet; in an update it resolves.
    assert known == ([False, False] if preview else [True, True])


def test_an_outputs_value_is_checked_when_it_resolves_naming_the_field_and_the_value(preview):
    placeholders = Placeholders(OWNER)
    plain = placeholders.hide(
        {"image": pulumi.Output.from_input("Not A Reference")}, "spec.containers[0]"
    )

    def image_check(path: str, resolved: Any) -> str | None:
        return reference_problem(resolved) if path.endswith(".image") else None

    # Under the SDK's test runner, which waits for every outstanding Output: the failed one
    # is not left for a later program to meet.
    @pulumi.runtime.test
    def resolve() -> Any:
        return placeholders.restore(plain, image_check)["image"]

    with pytest.raises(pulumi.RunError) as error:
        resolve()
    assert str(error.value) == (
        "TFJob tf-mnist: spec.containers[0].image: 'Not A Reference' (an Output's value): "
        "not a valid image reference ([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case "
        "repository); name the image as a registry would"
    )


TEMPLATE = "spec.tfReplicaSpecs.Worker.template"


@pytest.mark.parametrize(
    ("path", "value"),
    [
        ("namespace", True),
        ("labels.app.kubernetes.io/team", True),
        ("images.trainjobs/chainermn:7.8.1", True),
        (f"{TEMPLATE}.spec.containers[0].image", True),
        (f"{TEMPLATE}.spec.containers[0].command[2]", True),
        (f"{TEMPLATE}.spec.initContainers[1].args[0]", True),
        (f"{TEMPLATE}.spec.containers[0].env[1].value", True),
        (f"{TEMPLATE}.spec.containers[0].resources.limits.memory", True),
        (f"{TEMPLATE}.metadata.annotations.example.com/owner", True),
        (f"{TEMPLATE}.spec.nodeSelector.kubernetes.io/arch", True),
        (f"{TEMPLATE}.spec.tolerations[0].value", True),
        (f"{TEMPLATE}.spec.serviceAccountName", True),
        (f"{TEMPLATE}.spec.volumes[0].secret.secretName", True),
        (f"{TEMPLATE}.spec.containers[0].envFrom[0].configMapRef.name", True),
        ("spec.tfReplicaSpecs.Worker.replicas", False),
        ("spec.tfReplicaSpecs.Worker.restartPolicy", False),
        ("spec.runPolicy.cleanPodPolicy", False),
        (f"{TEMPLATE}.spec.containers[0].name", False),
        (f"{TEMPLATE}.spec.containers[0].env[1].name", False),
        (f"{TEMPLATE}.spec.containers[0].ports[0].containerPort", False),
        (f"{TEMPLATE}.spec.containers[0].resources.limits.nvidia.com/gpu", False),
        (f"{TEMPLATE}.spec.volumes[0].name", False),
        (f"{TEMPLATE}.spec.tolerations[0].tolerationSeconds", False),
    ],
)
def test_values_a_kubernetes_object_only_carries_may_be_outputs(path, value):
    assert is_value_field(path) is value
