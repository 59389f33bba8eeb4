"""The XGBoostJob, PaddleJob and JAXJob examples seen through by the completion watcher
against the API fake with its Job controller, each ended by the replica training-operator
v1.9 watches: the XGBoostJob's Master; every Worker of a JAXJob and of a collective PaddleJob.
cleanPodPolicy None (their default) leaves the others' pods running, as under Kubeflow."""

from __future__ import annotations

import time
from typing import Any

import yaml

from tests.cluster.test_training_jobs import api, deployed, kube, pods, wait_for, watch
from tests.conftest import REPO

__all__ = ["api", "kube"]  # fixtures


def example(name: str) -> dict[str, Any]:
    return yaml.safe_load((REPO / "jobs" / f"{name}.yaml").read_text())


def test_an_xgboostjob_ends_when_its_master_succeeds(kube, api, tmp_path) -> None:
    jobs = ["xgboost-digits-master-0", "xgboost-digits-worker-0", "xgboost-digits-worker-1"]
    outcome = watch(api, deployed(kube, tmp_path, example("xgboost-digits")))
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in jobs))
    kube.complete_job("xgboost-digits-master-0")
    seen = outcome()
    assert seen.status.phase == "Succeeded"
    assert {job: pods(kube, job) for job in jobs} == {
        "xgboost-digits-master-0": ["Succeeded"],
        "xgboost-digits-worker-0": ["Running"],
        "xgboost-digits-worker-1": ["Running"],
    }


def test_a_collective_paddlejob_ends_when_every_worker_has_succeeded(kube, api, tmp_path):
    jobs = ["paddle-digits-worker-0", "paddle-digits-worker-1"]
    outcome = watch(api, deployed(kube, tmp_path, example("paddle-digits")))
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in jobs))
    kube.complete_job("paddle-digits-worker-0")
    time.sleep(0.3)  # one Worker done is not the job done
    assert pods(kube, "paddle-digits-worker-1") == ["Running"]
    kube.complete_job("paddle-digits-worker-1")
    assert outcome().status.phase == "Succeeded"


def test_a_jaxjob_ends_when_every_worker_has_succeeded(kube, api, tmp_path) -> None:
    jobs = ["jax-digits-worker-0", "jax-digits-worker-1"]
    outcome = watch(api, deployed(kube, tmp_path, example("jax-digits")))
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in jobs))
    kube.complete_job("jax-digits-worker-1")
    time.sleep(0.3)
    assert pods(kube, "jax-digits-worker-0") == ["Running"]
    kube.complete_job("jax-digits-worker-0")
    assert outcome().status.phase == "Succeeded"


def test_a_jaxjob_fails_when_a_worker_fails_for_good(kube, api, tmp_path) -> None:
    document = example("jax-digits")
    document["spec"]["jaxReplicaSpecs"]["Worker"]["restartPolicy"] = "Never"
    jobs = ["jax-digits-worker-0", "jax-digits-worker-1"]
    outcome = watch(api, deployed(kube, tmp_path, document))
    wait_for(lambda: all(pods(kube, job) == ["Running"] for job in jobs))
    kube.fail_job("jax-digits-worker-1")
    assert outcome().status.phase == "Failed"
