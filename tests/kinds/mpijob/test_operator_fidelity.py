"""MPIJob v2beta1 pods as mpi-operator v0.8.2 makes them (``pkg/controller/mpi_job_controller.go``):
what its ``newWorker`` and ``newLauncherJob`` add beyond the user's templates."""

from __future__ import annotations

from typing import Any

from tests.kinds.mpijob.test_spec import mpijob, objects


def worker_pod(found: dict[str, Any]) -> dict[str, Any]:
    return found["StatefulSet/pi-worker"]["spec"]["template"]["spec"]


def test_workers_search_the_jobs_service_domain_for_hydras_short_launcher_name():
    found = objects(mpijob("v2beta1", mpiImplementation="Intel"))

    assert worker_pod(found)["dnsConfig"] == {"searches": ["pi.default.svc.cluster.local"]}


def test_the_jobs_search_domain_follows_the_workers_own_dns_config():
    document = mpijob("v2beta1", mpiImplementation="MPICH")
    worker = document["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]
    worker["dnsConfig"] = {
        "searches": ["corp.example"],
        "options": [{"name": "ndots", "value": "2"}],
    }

    assert worker_pod(objects(document))["dnsConfig"] == {
        "searches": ["corp.example", "pi.default.svc.cluster.local"],
        "options": [{"name": "ndots", "value": "2"}],
    }


def test_only_v2beta1_workers_get_the_search_domain():
    assert "dnsConfig" not in worker_pod(objects(mpijob("v1")))


def test_the_launcher_job_replaces_only_failed_pods_as_newLauncherJob_asks():
    found = objects(mpijob("v2beta1"))

    assert found["Job/pi-launcher"]["spec"]["podReplacementPolicy"] == "Failed"


def test_training_operators_launcher_job_keeps_the_default_replacement():
    assert "podReplacementPolicy" not in objects(mpijob("v1"))["Job/pi-launcher"]["spec"]
