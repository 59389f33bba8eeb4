"""The API fake's semantics that the lifecycle tests rely on, through the real client: they
must behave as the API server, its garbage collector and the Job controller do."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tests.kubefake import FakeKube

NS = "default"


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.3) as fake:
        yield fake


@pytest.fixture
def batch(kube: FakeKube) -> Iterator[client.BatchV1Api]:
    api = kube.api_client()
    yield client.BatchV1Api(api)
    api.close()


def job(name: str = "train", **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name},
        "spec": {
            "template": {"spec": {"containers": [{"name": "main", "image": "img:1"}]}},
            **spec,
        },
    }


def message(error: ApiException) -> str:
    import json

    return json.loads(error.body)["message"]


def test_a_created_job_gets_its_pod_and_a_second_create_is_refused(kube, batch) -> None:
    created = batch.create_namespaced_job(NS, job())

    assert created.spec.selector.match_labels == {
        "batch.kubernetes.io/controller-uid": created.metadata.uid
    }
    assert [pod["status"]["phase"] for pod in kube.pods_of("train")] == ["Running"]
    with pytest.raises(ApiException) as raised:
        batch.create_namespaced_job(NS, job())
    assert (raised.value.status, message(raised.value)) == (
        409,
        'jobs.batch "train" already exists',
    )


def test_foreground_deletion_keeps_the_job_until_its_pods_are_gone(kube, batch) -> None:
    batch.create_namespaced_job(NS, job())

    batch.delete_namespaced_job(
        "train", NS, body=client.V1DeleteOptions(propagation_policy="Foreground")
    )

    marked = batch.read_namespaced_job("train", NS)
    assert (marked.metadata.deletion_timestamp is not None, marked.metadata.finalizers) == (
        True,
        ["foregroundDeletion"],
    )
    with pytest.raises(ApiException) as raised:
        batch.create_namespaced_job(NS, job())
    assert (raised.value.status, message(raised.value)) == (
        409,
        'object is being deleted: jobs.batch "train" already exists',
    )
    kube.wait_until(lambda: not kube.exists("jobs", "train"))
    assert kube.pods_of("train") == []
    batch.create_namespaced_job(NS, job())  # the name is free again


def test_background_deletion_removes_the_job_at_once_and_its_pods_after(kube, batch) -> None:
    batch.create_namespaced_job(NS, job())
    [pod] = [p["metadata"]["name"] for p in kube.pods_of("train")]

    batch.delete_namespaced_job(
        "train", NS, body=client.V1DeleteOptions(propagation_policy="Background")
    )

    assert kube.exists("jobs", "train") is False
    kube.wait_until(lambda: not kube.exists("pods", pod))


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("podFailurePolicy", {"rules": []}),
        ("successPolicy", {"rules": [{"succeededIndexes": "0"}]}),
        ("completionMode", "Indexed"),
        ("backoffLimitPerIndex", 1),
        ("managedBy", "kueue.x-k8s.io/multikueue"),
        ("completions", 2),
        ("template", {"spec": {"containers": [{"name": "main", "image": "img:2"}]}}),
    ],
)
def test_immutable_job_fields_cannot_be_updated(kube, batch, field: str, value: Any) -> None:
    batch.create_namespaced_job(NS, job())

    with pytest.raises(ApiException) as raised:
        batch.patch_namespaced_job("train", NS, {"spec": {field: value}})

    assert raised.value.status == 422
    assert message(raised.value).startswith(
        f'Job.batch "train" is invalid: spec.{field}: Invalid value: '
    )
    assert message(raised.value).endswith(": field is immutable")


def test_mutable_job_fields_can_be_updated(kube, batch) -> None:
    batch.create_namespaced_job(NS, job())

    patched = batch.patch_namespaced_job(
        "train", NS, {"spec": {"backoffLimit": 2, "activeDeadlineSeconds": 60}}
    )

    assert (patched.spec.backoff_limit, patched.spec.active_deadline_seconds) == (2, 60)


def test_suspending_a_job_deletes_its_running_pod_and_resuming_starts_a_new_one(kube, batch):
    batch.create_namespaced_job(NS, job())
    [first] = kube.pods_of("train")

    batch.patch_namespaced_job("train", NS, {"spec": {"suspend": True}})

    suspended = batch.read_namespaced_job("train", NS)
    assert (suspended.status.active, [c.type for c in suspended.status.conditions]) == (
        0,
        ["Suspended"],
    )
    kube.wait_until(lambda: not kube.exists("pods", first["metadata"]["name"]))
    batch.patch_namespaced_job("train", NS, {"spec": {"suspend": False}})
    [second] = kube.pods_of("train")
    assert second["metadata"]["name"] != first["metadata"]["name"]
    assert batch.read_namespaced_job("train", NS).status.active == 1


def test_a_job_created_suspended_has_no_pod(kube, batch) -> None:
    batch.create_namespaced_job(NS, job(suspend=True))

    assert kube.pods_of("train") == []


def test_the_ttl_controller_removes_only_finished_jobs_with_a_ttl(kube, batch) -> None:
    for name in ("done-ttl", "done", "running-ttl"):
        batch.create_namespaced_job(
            NS, job(name, **({"ttlSecondsAfterFinished": 0} if "ttl" in name else {}))
        )
    kube.complete_job("done-ttl")
    kube.complete_job("done")

    assert kube.expire_ttl() == ["done-ttl"]

    deadline = time.monotonic() + 5
    while kube.exists("jobs", "done-ttl"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert (kube.exists("jobs", "done"), kube.exists("jobs", "running-ttl")) == (True, True)
