"""Local runs of a job given with its companions: ConfigMaps, Secrets and Services come from
the file; what has no local equivalent is refused at once, before any pod starts."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

import trainjobs
from tests.conftest import MINIMAL_JOB
from tests.local.test_crash_safety import quick_job
from tests.local.test_local_api import own_runs  # noqa: F401 (a fixture)
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.kinds.registry import parse_job
from trainjobs.local.cluster import plan_cluster, secret_files
from trainjobs.local.containers import PodContext, container_env

SETTINGS = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}}
SETTINGS["data"] = {"EPOCHS": "3", "bad key": "x", "train.ini": "[train]\nlr = 0.1\n"}
TOKEN: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Secret",
    "metadata": {"name": "token"},
    "data": {"TOKEN": base64.b64encode(b"s3cret").decode(), "USER": "b2xk"},
    "stringData": {"USER": "alice"},
}


def with_companions(job: Path, *companions: dict[str, Any]) -> Path:
    document = yaml.safe_load(job.read_text(encoding="utf-8"))
    job.write_text(yaml.safe_dump_all([*companions, document]), encoding="utf-8")
    return job


def test_a_secret_beside_the_job_is_its_data_with_string_data_over_it():
    assert secret_files(TOKEN) == {"TOKEN": "s3cret", "USER": "alice"}


def test_a_secret_whose_data_is_not_base64_names_the_key_and_the_fix():
    broken = {**TOKEN, "data": {"TOKEN": "not base64!"}}
    with pytest.raises(UserError) as refused:
        secret_files(broken)
    assert str(refused.value) == (
        "Secret token: data.TOKEN: not base64 of UTF-8 text, which local runs write; give "
        "text in stringData instead"
    )


def test_env_from_and_secret_key_ref_read_the_objects_beside_the_job():
    context = PodContext(
        pod="p",
        namespace="default",
        address="10.0.0.2",
        node="localhost",
        service_account="default",
        labels={},
        annotations={},
        config_maps={"settings": SETTINGS["data"]},
        secrets={"token": secret_files(TOKEN)},
    )
    container = {
        "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
        "env": [
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "TOKEN"}}},
            {"name": "CFG_EPOCHS", "value": "4"},
        ],
    }
    env = container_env(container, {}, {}, context, "c")
    # "bad key" makes no variable name: the kubelet skips it; env wins over envFrom.
    assert env == {"CFG_EPOCHS": "4", "CFG_train.ini": "[train]\nlr = 0.1\n", "TOKEN": "s3cret"}


def test_a_missing_env_from_source_names_it():
    context = PodContext("p", "default", "a", "n", "default", {}, {}, {})
    container = {"envFrom": [{"secretRef": {"name": "absent"}}]}
    with pytest.raises(UserError) as refused:
        container_env(container, {}, {}, context, "c")
    assert str(refused.value) == (
        "c.envFrom[0]: Secret 'absent' not found: local runs provide the Secrets the job "
        "creates and those given beside it in its file"
    )


def test_objects_without_a_local_equivalent_are_refused_in_one_line(
    own_runs: Path,  # noqa: F811
    capsys: pytest.CaptureFixture[str],
):
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "etcd"}}
    deployment["spec"] = {"template": {"spec": {"containers": [{"image": "etcd"}]}}}
    domain = {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "ComputeDomain"}
    domain["metadata"] = {"name": "imex"}
    job = with_companions(quick_job(own_runs / "quick.yaml"), SETTINGS, deployment, domain)
    assert main(["run", str(job)]) == 2
    assert capsys.readouterr().err == (
        "error: local runs cannot create Deployment/etcd (no local equivalent), "
        "ComputeDomain/imex (no local equivalent), given beside the job in its file; they "
        "provide ConfigMap, Secret, Service, ServiceAccount: run this file on a cluster, or "
        "leave those objects out of it\n"
    )
    assert not (own_runs / "out").exists()


def test_a_pod_reads_the_config_map_and_secret_given_beside_the_job(own_runs: Path):  # noqa: F811
    script = 'echo "$CFG_EPOCHS $TOKEN $(cat /etc/token/USER) $(cat /etc/settings/train.ini)"'
    job = with_companions(
        quick_job(own_runs / "quick.yaml", command=("sh", "-c", script)), SETTINGS, TOKEN
    )
    document = yaml.safe_load_all(job.read_text(encoding="utf-8"))
    *companions, spec = list(document)
    pod = spec["spec"]["master"]["template"]["spec"]
    pod["volumes"] = [
        {"name": "token", "secret": {"secretName": "token"}},
        {"name": "settings", "configMap": {"name": "settings"}},
    ]
    container = pod["containers"][0]
    container["envFrom"] = [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}]
    container["env"] = [
        {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "token", "key": "TOKEN"}}}
    ]
    container["volumeMounts"] = [
        {"name": "token", "mountPath": "/etc/token"},
        {"name": "settings", "mountPath": "/etc/settings"},
    ]
    job.write_text(yaml.safe_dump_all([*companions, spec]), encoding="utf-8")
    record = trainjobs.run_locally(job, run_dir=own_runs / "mine")
    assert record.outcome == "Succeeded"
    assert trainjobs.local_run_logs(own_runs / "mine") == [
        "[quick-master] 3 s3cret alice [train]",
        "[quick-master] lr = 0.1",
    ]


def test_a_service_beside_the_job_names_the_one_pod_it_selects():
    service = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "rendezvous"}}
    service["spec"] = {"selector": {"training.kubeflow.org/job-role": "master"}}
    items = [service, MINIMAL_JOB]
    job = parse_job({"apiVersion": "v1", "kind": "List", "items": items}, "bundle.yaml")
    plan = plan_cluster(job.graph, job.success_jobs, job.success_any, job.companions)
    assert plan.master.service_names == ("rendezvous",)
