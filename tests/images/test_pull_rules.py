"""The rules pulls follow, without a registry: Kubernetes' default policy, where a reference is
pulled from, what a pull Secret holds, and which registries --push accepts."""

from __future__ import annotations

import base64
import copy
import json
from pathlib import Path

import pytest

from trainjobs.core.documents import load_file
from trainjobs.core.errors import UserError
from trainjobs.core.graph import GraphOptions
from trainjobs.images.push import check_registry
from trainjobs.images.references import registry_host
from trainjobs.images.registry_auth import auth_file_text, pull_secrets
from trainjobs.kinds.registry import parse_job
from trainjobs.local.cluster import plan_cluster
from trainjobs.local.container.pull import default_pull_policy, wanted_images

AUTH = {"registry.example:5000": {"auth": base64.b64encode(b"u:p").decode()}}


@pytest.mark.parametrize(
    ("reference", "policy"),
    [
        ("train", "Always"),
        ("team/train:latest", "Always"),
        ("registry.example:5000/team/train", "Always"),
        ("registry.example:5000/team/train:3", "IfNotPresent"),
        (f"team/train@sha256:{'a' * 64}", "IfNotPresent"),
        (f"team/train:latest@sha256:{'a' * 64}", "Always"),
    ],
)
def test_the_default_pull_policy_is_kubernetes(reference: str, policy: str):
    assert default_pull_policy(reference) == policy


@pytest.mark.parametrize(
    ("reference", "host"),
    [
        ("train:1", "docker.io"),
        ("kubeflowkatib/pytorch-mnist:v1", "docker.io"),
        ("localhost/team/train:1", "localhost"),
        ("127.0.0.1:5000/team/train:1", "127.0.0.1:5000"),
        ("registry.example/train", "registry.example"),
    ],
)
def test_the_registry_of_a_reference_is_dockers_split(reference: str, host: str):
    assert registry_host(reference) == host


def secret(name: str, **fields: object) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}, **fields}


def write(path: Path, *documents: dict[str, object]) -> Path:
    path.write_text("".join(f"---\n{json.dumps(document)}\n" for document in documents))
    return path


JOB = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "j"},
    "spec": {},
}


def test_pull_secrets_beside_a_job_are_the_runs_and_not_the_jobs(tmp_path: Path):
    config = base64.b64encode(json.dumps({"auths": AUTH}).encode()).decode()
    path = write(
        tmp_path / "job.yaml",
        JOB,
        secret(
            "regcred", type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": config}
        ),
        secret(
            "legacy", type="kubernetes.io/dockercfg", stringData={".dockercfg": json.dumps(AUTH)}
        ),
    )

    assert load_file(path) == JOB
    secrets = pull_secrets(path)
    assert sorted(secrets) == ["legacy", "regcred"]
    both = [(name, secrets[name]) for name in ("regcred", "legacy")]
    assert json.loads(auth_file_text(both)) == {"auths": AUTH}


def test_another_secret_beside_a_job_is_a_companion_not_a_pull_secret(tmp_path: Path):
    # Objects beside the job are deployed with it (a bundle); only the docker-config types
    # are credentials for pulls.
    path = write(tmp_path / "job.yaml", JOB, secret("opaque", type="Opaque"))

    assert [item["kind"] for item in load_file(path)["items"]] == [JOB["kind"], "Secret"]
    assert pull_secrets(path) == {}


def test_a_pull_secret_that_is_not_base64_is_named(tmp_path: Path):
    bad = secret("regcred", type="kubernetes.io/dockerconfigjson", data={".dockerconfigjson": "%"})
    path = write(tmp_path / "job.yaml", JOB, bad)

    with pytest.raises(UserError) as raised:
        auth_file_text([("Secret 'regcred'", pull_secrets(path)["regcred"])])
    assert str(raised.value) == (
        "Secret 'regcred': data['.dockerconfigjson'] is not base64 of UTF-8 text; encode the "
        "docker config with base64 -w0"
    )


@pytest.mark.parametrize("registry", ["127.0.0.1:5000", "registry.example/team", "localhost"])
def test_push_takes_a_registry_host(registry: str):
    assert check_registry(registry) == registry


@pytest.mark.parametrize("registry", ["team", "--help", "Registry.example/Team", ""])
def test_push_refuses_what_is_not_a_registry(registry: str):
    with pytest.raises(UserError) as raised:
        check_registry(registry)
    assert str(raised.value) == (
        f"--push {registry!r}: name a registry as HOST[:PORT][/PATH] (a host holds a dot or a "
        "port, or is localhost), e.g. registry.example:5000/team"
    )


def test_an_image_is_wanted_once_with_every_policy_and_named_secret_of_its_pods():
    template = {
        "spec": {
            "imagePullSecrets": [{"name": ""}, {"name": "regcred"}, {"name": "regcred"}],
            "containers": [{"name": "pytorch", "image": "r.example/team/train:1"}],
        }
    }
    always = copy.deepcopy(template)
    always["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    document = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pulls"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template},
                "Worker": {"replicas": 2, "template": always},
            }
        },
    }
    job = parse_job(document, "job.yaml", "default", GraphOptions())
    plan = plan_cluster(job.graph, job.success_jobs, job.success_any)

    wanted = wanted_images(plan, {"r.example/team/train:1"})

    assert list(wanted) == ["r.example/team/train:1"]
    entry = wanted["r.example/team/train:1"]
    assert entry.policies == {"IfNotPresent", "Always"}
    assert entry.containers == [
        "pod pulls-master-0 container pytorch",
        "pod pulls-worker-0 container pytorch",
        "pod pulls-worker-1 container pytorch",
    ]
    assert entry.secrets == ["regcred"]
