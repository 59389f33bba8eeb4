"""A Kueue-queued MPIJob v2beta1: one JobSet (a launcher and a worker replicated Job) that
Kueue admits whole; v1 and v1alpha2 (kubectl exec) are refused when queued."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import schema_problems
from tests.kinds.mpijob.test_spec import mpijob, objects
from trainjobs.core.errors import SpecError
from trainjobs.kinds.registry import parse_job

QUEUE = {"kueue.x-k8s.io/queue-name": "user-queue"}


def queued(version: str = "v2beta1", **spec: Any) -> dict[str, Any]:
    document = mpijob(version, **spec)
    document["metadata"]["labels"] = {**QUEUE, "team": "a"}
    return document


def test_a_queued_v2beta1_mpijob_is_one_jobset_with_a_launcher_and_its_workers():
    found = objects(queued(runPolicy={"backoffLimit": 3}))

    assert list(found) == ["ConfigMap/pi-config", "Secret/pi-ssh", "Service/pi", "JobSet/pi"]
    jobset = found["JobSet/pi"]
    spec = jobset["spec"]
    assert {k: v for k, v in spec.items() if k != "replicatedJobs"} == {
        # DNS hostnames under the job's own headless Service: <pod>.pi.default.svc.
        "network": {"enableDNSHostnames": True, "subdomain": "pi"},
        "successPolicy": {"operator": "Any", "targetReplicatedJobs": ["launcher"]},
    }
    assert [(r["name"], r["replicas"]) for r in spec["replicatedJobs"]] == [
        ("launcher", 1),
        ("worker", 2),
    ]
    launcher, worker = (r["template"]["spec"] for r in spec["replicatedJobs"])
    assert {k: v for k, v in launcher.items() if k != "template"} == {
        "completionMode": "Indexed",
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 3,
        "podReplacementPolicy": "Failed",
    }
    assert {k: v for k, v in worker.items() if k != "template"} == {
        "completionMode": "Indexed",
        "completions": 1,
        "parallelism": 1,
        "backoffLimit": 3,
    }
    # The Indexed Job names the launcher's pod; workers restart their sshd when it fails.
    assert "hostname" not in launcher["template"]["spec"]
    assert launcher["template"]["spec"]["restartPolicy"] == "OnFailure"  # v2beta1 default
    assert worker["template"]["spec"]["restartPolicy"] == "OnFailure"
    # Kueue's labels on the JobSet alone.
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
    assert jobset["metadata"]["labels"]["team"] == "a"
    others = [
        *(m["metadata"].get("labels") or {} for k, m in found.items() if k != "JobSet/pi"),
        *(r["template"]["metadata"]["labels"] for r in spec["replicatedJobs"]),
        *(r["template"]["spec"]["template"]["metadata"]["labels"] for r in spec["replicatedJobs"]),
    ]
    assert [labels.get("team") for labels in others] == ["a"] * len(others)
    assert [k for labels in others for k in labels if k.startswith("kueue.x-k8s.io/")] == []
    config = found["ConfigMap/pi-config"]["data"]
    assert config["hostfile"] == (
        "pi-worker-0-0.pi.default.svc slots=1\npi-worker-1-0.pi.default.svc slots=1\n"
    )
    assert config["discover_hosts.sh"] == (
        "#!/bin/sh\necho pi-worker-0-0.pi.default.svc\necho pi-worker-1-0.pi.default.svc\n"
    )
    assert [p for m in found.values() for p in schema_problems(m)] == []


def test_the_queued_definition_waits_on_the_launchers_child_job():
    job = parse_job(queued(), "test")

    assert (job.queued, job.success_jobs, job.workers, job.worker_pods) == (
        True,
        ("pi-launcher-0",),
        [],
        ["pi-worker-0", "pi-worker-1"],
    )


def test_a_queued_launcher_as_worker_is_the_hostfiles_first_host_by_its_jobset_name():
    found = objects(queued(runLauncherAsWorker=True, slotsPerWorker=2))

    assert found["ConfigMap/pi-config"]["data"]["hostfile"] == (
        "pi-launcher-0-0.pi.default.svc slots=2\n"
        "pi-worker-0-0.pi.default.svc slots=2\n"
        "pi-worker-1-0.pi.default.svc slots=2\n"
    )
    assert "    pi-launcher-0-0) exec sh -c" in found["ConfigMap/pi-config"]["data"]["sshexec.sh"]


def test_a_queued_suspended_mpijob_suspends_its_jobset_not_its_jobs():
    spec = objects(queued(runPolicy={"suspend": True, "ttlSecondsAfterFinished": 60}))["JobSet/pi"][
        "spec"
    ]

    assert (spec["suspend"], spec["ttlSecondsAfterFinished"]) == (True, 60)
    assert [
        "suspend" in r["template"]["spec"] or "ttlSecondsAfterFinished" in r["template"]["spec"]
        for r in spec["replicatedJobs"]
    ] == [False, False]


@pytest.mark.parametrize("version", ["v1", "v1alpha2"])
def test_a_queued_kubectl_exec_mpijob_is_refused_naming_the_version(version):
    with pytest.raises(SpecError) as raised:
        parse_job(queued(version), "test")

    assert [str(p) for p in raised.value.problems] == [
        "metadata.labels.kueue.x-k8s.io/queue-name: an MPIJob of kubeflow.org/"
        f"{version} reaches its workers by kubectl exec, whose pod names a Kueue-queued "
        "JobSet does not keep stable; use apiVersion kubeflow.org/v2beta1 (ssh) or remove "
        "the label"
    ]


def test_a_queued_mpijob_name_the_jobset_webhook_would_refuse_is_refused():
    document = queued()
    document["metadata"]["name"] = "p" * 47

    with pytest.raises(SpecError) as raised:
        parse_job(document, "test")

    assert [str(p) for p in raised.value.problems] == [
        f"metadata.name: '{'p' * 47}' is 47 characters; queued, its JobSet's pods would be "
        f"named like '{'p' * 47}-launcher-0-0-xxxxx' (66 characters), which the JobSet "
        "webhook refuses beyond 63; shorten it to at most 44 characters"
    ]


def test_a_queued_mpijob_without_workers_is_a_jobset_of_its_launcher_alone():
    document = queued()
    del document["spec"]["mpiReplicaSpecs"]["Worker"]

    found = objects(document)

    assert list(found) == ["ConfigMap/pi-config", "JobSet/pi"]
    spec = found["JobSet/pi"]["spec"]
    assert [(r["name"], r["replicas"]) for r in spec["replicatedJobs"]] == [("launcher", 1)]
    assert found["JobSet/pi"]["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "user-queue"
