"""Pod templates are checked as the API server checks them: the official schema's types, then
its rules for names, paths, env, ports and quantities; every problem at once, at its field
path, in the API server's words; what the API server accepts is accepted."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import MINIMAL_JOB
from trainjobs.cli import main
from trainjobs.core.errors import SpecError
from trainjobs.kinds.registry import load_job

Mutation = Callable[[dict[str, Any]], None]
MASTER = "spec.master.template.spec"
LABEL_RULE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and "
    "must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex "
    "used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
QUANTITY_RULE = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)


def pod(job: dict[str, Any]) -> dict[str, Any]:
    spec: dict[str, Any] = job["spec"]["master"]["template"]["spec"]
    return spec


def container(job: dict[str, Any]) -> dict[str, Any]:
    main_container: dict[str, Any] = pod(job)["containers"][0]
    return main_container


def with_volume(job: dict[str, Any], volume: dict[str, Any]) -> None:
    pod(job)["volumes"] = [volume]


def config_map_item(job: dict[str, Any], item: dict[str, Any]) -> None:
    with_volume(job, {"name": "cm", "configMap": {"name": "demo-assets", "items": [item]}})


# (id, mutation of the minimal valid ChainerJob, the exact problem line)
REFUSED: list[tuple[str, Mutation, str]] = [
    (
        "volume-named-like-an-absolute-path",
        lambda j: with_volume(j, {"name": "/tmp/victim", "emptyDir": {}}),
        f'{MASTER}.volumes[0].name: Invalid value: "/tmp/victim": {LABEL_RULE}',
    ),
    (
        "volume-named-with-dot-dot",
        lambda j: with_volume(j, {"name": "../../x", "emptyDir": {}}),
        f'{MASTER}.volumes[0].name: Invalid value: "../../x": {LABEL_RULE}',
    ),
    (
        "config-map-item-absolute-path",
        lambda j: config_map_item(j, {"key": "hostfile", "path": "/etc/evil"}),
        f'{MASTER}.volumes[0].configMap.items[0].path: Invalid value: "/etc/evil": must be a '
        "relative path",
    ),
    (
        "config-map-item-climbing-path",
        lambda j: config_map_item(j, {"key": "hostfile", "path": "a/../../x"}),
        f'{MASTER}.volumes[0].configMap.items[0].path: Invalid value: "a/../../x": must not '
        "contain '..'",
    ),
    (
        "config-map-item-setuid-mode",
        lambda j: config_map_item(j, {"key": "hostfile", "path": "x", "mode": 0o6755}),
        f"{MASTER}.volumes[0].configMap.items[0].mode: Invalid value: 3565: must be a number "
        "between 0 and 0777 (octal), both inclusive",
    ),
    (
        "container-named-dot-dot",
        lambda j: container(j).update(name="../.."),
        f'{MASTER}.containers[0].name: Invalid value: "../..": {LABEL_RULE}',
    ),
    (
        "env-item-without-name",
        lambda j: container(j).update(env=[{"value": "x"}]),
        f"{MASTER}.containers[0].env[0].name: Required value: this field must be set",
    ),
    (
        "env-as-a-mapping",
        lambda j: container(j).update(env={"EPOCHS": "3"}),
        f"{MASTER}.containers[0].env: Invalid value: a mapping: must be a list",
    ),
    (
        "env-name-with-equals",
        lambda j: container(j).update(env=[{"name": "A=B", "value": "x"}]),
        f'{MASTER}.containers[0].env[0].name: Invalid value: "A=B": a valid environment '
        "variable name must consist only of printable ASCII characters other than '='",
    ),
    (
        "volume-mount-without-mount-path",
        lambda j: (
            with_volume(j, {"name": "data", "emptyDir": {}}),
            container(j).update(volumeMounts=[{"name": "data"}]),
        ),
        f"{MASTER}.containers[0].volumeMounts[0].mountPath: Required value: this field must be set",
    ),
    (
        "volume-mount-of-an-undefined-volume",
        lambda j: container(j).update(volumeMounts=[{"name": "data", "mountPath": "/data"}]),
        f'{MASTER}.containers[0].volumeMounts[0].name: Not found: "data"',
    ),
    (
        "empty-field-ref",
        lambda j: container(j).update(env=[{"name": "X", "valueFrom": {"fieldRef": {}}}]),
        f"{MASTER}.containers[0].env[0].valueFrom.fieldRef.fieldPath: Required value: this "
        "field must be set",
    ),
    (
        "unsupported-field-ref",
        lambda j: container(j).update(
            env=[{"name": "X", "valueFrom": {"fieldRef": {"fieldPath": "spec.secret"}}}]
        ),
        f"{MASTER}.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "
        '"spec.secret": supported values: "metadata.name", "metadata.namespace", '
        '"metadata.uid", "spec.nodeName", "spec.serviceAccountName", "status.hostIP", '
        '"status.hostIPs", "status.podIP", "status.podIPs"',
    ),
    (
        "gpu-limit-not-a-quantity",
        lambda j: container(j).update(resources={"limits": {"nvidia.com/gpu": "abc"}}),
        f'{MASTER}.containers[0].resources.limits.nvidia.com/gpu: Invalid value: "abc": '
        f"{QUANTITY_RULE}",
    ),
    (
        "half-a-gpu",
        lambda j: container(j).update(resources={"limits": {"nvidia.com/gpu": "0.5"}}),
        f'{MASTER}.containers[0].resources.limits.nvidia.com/gpu: Invalid value: "0.5": must be '
        "an integer",
    ),
    (
        "request-over-limit",
        lambda j: container(j).update(
            resources={"limits": {"memory": "1Gi"}, "requests": {"memory": "2Gi"}}
        ),
        f'{MASTER}.containers[0].resources.requests: Invalid value: "2Gi": must be less than or '
        "equal to memory limit of 1Gi",
    ),
    (
        "image-as-a-list",
        lambda j: container(j).update(image=["img:1"]),
        f"{MASTER}.containers[0].image: Invalid value: a list: must be a string",
    ),
    (
        "command-as-a-string",
        lambda j: container(j).update(command="python train.py"),
        f'{MASTER}.containers[0].command: Invalid value: "python train.py": must be a list',
    ),
    (
        "grace-period-not-a-number",
        lambda j: pod(j).update(terminationGracePeriodSeconds="abc"),
        f'{MASTER}.terminationGracePeriodSeconds: Invalid value: "abc": must be a whole number',
    ),
    (
        "port-out-of-int32",
        lambda j: container(j).update(ports=[{"containerPort": 3_000_000_000}]),
        f"{MASTER}.containers[0].ports[0].containerPort: Invalid value: 3000000000: must fit in "
        "32 bits (from -2147483648 to 2147483647)",
    ),
    (
        "port-out-of-range",
        lambda j: container(j).update(ports=[{"containerPort": 70000}]),
        f"{MASTER}.containers[0].ports[0].containerPort: Invalid value: 70000: must be between "
        "1 and 65535, inclusive",
    ),
    (
        "sub-path-climbing-out",
        lambda j: (
            with_volume(j, {"name": "data", "emptyDir": {}}),
            container(j).update(
                volumeMounts=[{"name": "data", "mountPath": "/d", "subPath": "../../etc"}]
            ),
        ),
        f'{MASTER}.containers[0].volumeMounts[0].subPath: Invalid value: "../../etc": must not '
        "contain '..'",
    ),
    (
        "template-label-key",
        lambda j: j["spec"]["master"]["template"].update(metadata={"labels": {"a b": "c"}}),
        'spec.master.template.metadata.labels: Invalid value: "a b": name part must consist of '
        "alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
        "character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
        "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ),
    (
        "job-namespace",
        lambda j: j["metadata"].update(namespace="../../etc"),
        f'metadata.namespace: Invalid value: "../../etc": {LABEL_RULE}',
    ),
    (
        "job-label-value",
        lambda j: j["metadata"].update(labels={"team": "a b"}),
        'metadata.labels.team: Invalid value: "a b": a valid label must be an empty string or '
        "consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for "
        "validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ),
    (
        "two-volume-sources",
        lambda j: with_volume(j, {"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}),
        f"{MASTER}.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type",
    ),
    (
        "duplicate-container-names",
        lambda j: pod(j).update(
            initContainers=[{"name": "chainer", "image": "img:1"}],
        ),
        f'{MASTER}.containers[0].name: Duplicate value: "chainer"',
    ),
]


def write_spec(tmp_path: Path, mutate: Mutation) -> Path:
    document = copy.deepcopy(MINIMAL_JOB)
    container(document)["name"] = "chainer"
    mutate(document)
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("mutate", "expected"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED]
)
def test_what_the_api_server_refuses_is_refused_at_its_field(tmp_path, capsys, mutate, expected):
    spec = write_spec(tmp_path, mutate)
    assert main(["render", str(spec), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"  {expected}" in err.splitlines(), err
    assert "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_every_problem_of_a_template_is_reported_at_once(tmp_path):
    def many(job: dict[str, Any]) -> None:
        container(job).update(image=["x"], command="run", env={"A": "b"})
        pod(job).update(terminationGracePeriodSeconds="abc")

    with pytest.raises(SpecError) as raised:
        load_job(write_spec(tmp_path, many))
    assert [p.path for p in raised.value.problems] == [
        f"{MASTER}.containers[0].command",
        f"{MASTER}.containers[0].env",
        f"{MASTER}.containers[0].image",
        f"{MASTER}.terminationGracePeriodSeconds",
    ]


ACCEPTED: list[tuple[str, Mutation]] = [
    (
        "relaxed-env-name",
        lambda j: container(j).update(env=[{"name": "my.env-name 1", "value": "x"}]),
    ),
    (
        "gpu-as-exponent",
        lambda j: container(j).update(resources={"limits": {"nvidia.com/gpu": "1e0"}}),
    ),
    ("milli-cpu", lambda j: container(j).update(resources={"requests": {"cpu": "500m"}})),
    ("null-fields", lambda j: container(j).update(env=None, args=None, volumeMounts=None)),
    (
        "label-and-annotation-fieldrefs",
        lambda j: container(j).update(
            env=[
                {"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            ]
        ),
    ),
    (
        "config-map-items-below-the-volume",
        lambda j: config_map_item(j, {"key": "hostfile", "path": "conf/hostfile", "mode": 0o644}),
    ),
]


@pytest.mark.parametrize("mutate", [c[1] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_what_the_api_server_accepts_is_accepted(tmp_path, mutate):
    assert load_job(write_spec(tmp_path, mutate)).name == "demo"


def test_an_unknown_template_field_is_a_warning_with_a_suggestion(tmp_path):
    job = load_job(write_spec(tmp_path, lambda j: container(j).update(imagePullPolicyy="Always")))
    assert [str(w) for w in job.warnings] == [
        f"{MASTER}.containers[0].imagePullPolicyy: not a field of a Kubernetes 1.37.0 pod "
        "template: the API server drops it, so it has no effect; did you mean 'imagePullPolicy'?"
    ]


def test_a_replica_count_of_a_billion_billion_is_refused_at_once(tmp_path, capsys):
    def huge(job: dict[str, Any]) -> None:
        job["spec"]["worker"]["replicas"] = 10**18

    started = time.monotonic()
    assert main(["validate", str(write_spec(tmp_path, huge))]) == 2
    assert time.monotonic() - started < 5
    assert capsys.readouterr().err.splitlines()[1] == (
        "  spec.worker.replicas: must be at most 1000 (got 1000000000000000000): a job may have at "
        "most 1000 pods (each pod's objects and environment are written out); split it into "
        "smaller jobs"
    )


def test_slots_must_fit_the_int32_of_the_crd(tmp_path, capsys):
    def slots(job: dict[str, Any]) -> None:
        job["spec"]["worker"]["mpiConfig"] = {"slots": 2**31}

    assert main(["validate", str(write_spec(tmp_path, slots))]) == 2
    assert capsys.readouterr().err.splitlines()[1] == (
        "  spec.worker.mpiConfig.slots: must be at most 2147483647 (got 2147483648)"
    )


def test_more_than_a_thousand_tf_pods_are_refused_before_any_is_built(tmp_path, capsys):
    tf_job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "TFJob",
        "metadata": {"name": "big"},
        "spec": {
            "tfReplicaSpecs": {
                "Worker": {
                    "replicas": 600,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}},
                },
                "PS": {
                    "replicas": 600,
                    "template": {"spec": {"containers": [{"name": "tensorflow", "image": "i"}]}},
                },
            }
        },
    }
    path = tmp_path / "tf.yaml"
    path.write_text(yaml.safe_dump(tf_job), encoding="utf-8")
    started = time.monotonic()
    assert main(["validate", str(path)]) == 2
    assert time.monotonic() - started < 5
    assert capsys.readouterr().err.splitlines()[1] == (
        "  spec.tfReplicaSpecs: 1200 pods in all: a job may have at most 1000 pods (each pod's "
        "objects and environment are written out); split it into smaller jobs"
    )


def test_a_bad_namespace_flag_is_refused_by_the_command_line(tmp_path, capsys):
    spec = write_spec(tmp_path, lambda j: None)
    with pytest.raises(SystemExit) as raised:
        main(["render", str(spec), "--out", str(tmp_path / "out"), "--namespace", "../x"])
    assert raised.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f'trainjobs render: error: argument --namespace: Invalid value: "../x": {LABEL_RULE}'
    )
