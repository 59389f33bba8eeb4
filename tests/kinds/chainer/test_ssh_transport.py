"""The ssh transport's graph: a Secret instead of RBAC, sshd on workers, ssh from the master."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from trainjobs.cli import main
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.mpi import ssh_assets
from trainjobs.kinds.registry import load_job, parse_job

SSH = GraphOptions(mpi_transport="ssh")
EXAMPLE = REPO / "jobs" / "chainermn-mnist.yaml"


def manifests(document: dict[str, Any], options: GraphOptions = SSH) -> dict[str, Any]:
    graph = parse_job(document, "test", options=options).graph
    return {node.key: node.manifest for node in graph.nodes}


def pod_spec(objects: dict[str, Any], key: str) -> dict[str, Any]:
    return objects[key]["spec"]["template"]["spec"]


def test_the_ssh_graph_has_a_secret_and_no_rbac_objects(job):
    graph = parse_job(job, "test", options=SSH).graph

    assert [(node.key, node.depends_on) for node in graph.nodes] == [
        ("ConfigMap/demo-assets", ()),
        ("Secret/demo-ssh", ("ConfigMap/demo-assets",)),
        ("Service/demo", ("Secret/demo-ssh",)),
        ("StatefulSet/demo-worker", ("Service/demo",)),
        ("Job/demo-master", ("StatefulSet/demo-worker",)),
    ]


def test_the_secret_is_an_ssh_auth_secret_without_key_material(job):
    secret = manifests(job)["Secret/demo-ssh"]

    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert "data" not in secret and "stringData" not in secret
    assert secret["metadata"]["annotations"] == {
        "trainjobs.io/ssh-key": "ED25519 key pair made at deploy time (data: ssh-privatekey, "
        "ssh-publickey, known_hosts); never rendered"
    }


def test_the_kubectl_transport_stays_the_default(job):
    kinds = [node.kind for node in parse_job(job, "test").graph.nodes]

    assert GraphOptions().mpi_transport == "kubectl"
    assert kinds == [
        "ConfigMap",
        "ServiceAccount",
        "Role",
        "RoleBinding",
        "Service",
        "StatefulSet",
        "Job",
    ]


def test_a_single_pod_job_is_the_same_with_either_transport(job):
    del job["spec"]["worker"]

    assert manifests(job) == manifests(job, GraphOptions())


def test_the_hostfile_names_workers_by_their_service_dns_names(job):
    job["spec"]["worker"]["replicas"] = 3
    job["metadata"]["namespace"] = "team-a"

    assert manifests(job)["ConfigMap/demo-assets"]["data"]["hostfile"] == (
        "demo-master slots=1\n"
        "demo-worker-0.demo.team-a.svc slots=1\n"
        "demo-worker-1.demo.team-a.svc slots=1\n"
        "demo-worker-2.demo.team-a.svc slots=1\n"
    )


def test_the_assets_are_the_ssh_transports_files(job):
    data = manifests(job)["ConfigMap/demo-assets"]["data"]

    assert sorted(data) == [
        "cluster_waiter.sh",
        "hostfile",
        "ssh_config",
        "ssh_session.sh",
        "sshd.sh",
        "sshd_config",
        "sshexec.sh",
    ]
    assert "    HostKeyAlias trainjobs-demo\n" in data["ssh_config"]
    assert "    StrictHostKeyChecking yes\n" in data["ssh_config"]
    assert "Port 2222\n" in data["sshd_config"]
    assert "PasswordAuthentication no\n" in data["sshd_config"]


def test_the_master_has_no_token_and_starts_daemons_over_ssh(job):
    pod = pod_spec(manifests(job), "Job/demo-master")
    (container,) = pod["containers"]

    assert pod["automountServiceAccountToken"] is False
    assert "serviceAccountName" not in pod
    assert pod["subdomain"] == "demo"
    assert container["env"] == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/trainjobs/hostfile"},
        {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/trainjobs/sshexec.sh"},
        {"name": "TRAINJOBS_SSH_DIR", "value": "/etc/trainjobs-ssh"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "t"},
        {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,docker0"},
    ]
    assert container["volumeMounts"] == [
        {"name": "trainjobs-assets", "mountPath": "/etc/trainjobs", "readOnly": True},
        {"name": "trainjobs-ssh", "mountPath": "/etc/trainjobs-ssh", "readOnly": True},
    ]
    assert pod["volumes"] == [
        {"name": "trainjobs-assets", "configMap": {"name": "demo-assets", "defaultMode": 0o555}},
        {"name": "trainjobs-ssh", "secret": {"secretName": "demo-ssh", "defaultMode": 0o400}},
    ]


def test_the_master_waits_for_every_sshd_from_its_own_image(job):
    job["spec"]["master"]["template"]["spec"]["containers"][0]["image"] = "my/mpi:2"
    (waiter,) = pod_spec(manifests(job), "Job/demo-master")["initContainers"]

    assert waiter == {
        "name": "trainjobs-cluster-waiter",
        "image": "my/mpi:2",
        "command": ["sh", "/etc/trainjobs/cluster_waiter.sh"],
        "env": [
            {"name": "TRAINJOBS_SSH_DIR", "value": "/etc/trainjobs-ssh"},
            {"name": "TRAINJOBS_WAIT_TIMEOUT_SECONDS", "value": "600"},
        ],
        "volumeMounts": [
            {"name": "trainjobs-assets", "mountPath": "/etc/trainjobs", "readOnly": True},
            {"name": "trainjobs-ssh", "mountPath": "/etc/trainjobs-ssh", "readOnly": True},
        ],
        "securityContext": {
            "allowPrivilegeEscalation": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
        },
        "resources": {"requests": {"cpu": "10m", "memory": "32Mi"}, "limits": {"memory": "128Mi"}},
    }


def test_workers_run_sshd_with_the_jobs_key_and_a_private_state_volume(job):
    pod = pod_spec(manifests(job), "StatefulSet/demo-worker")
    (container,) = pod["containers"]

    assert pod["automountServiceAccountToken"] is False
    assert container["command"] == ["sh", "/etc/trainjobs/sshd.sh"]
    assert container["env"] == [
        {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/trainjobs/sshexec.sh"},
        {"name": "TRAINJOBS_SSH_DIR", "value": "/etc/trainjobs-ssh"},
        {"name": "TRAINJOBS_SSH_STATE_DIR", "value": "/run/trainjobs-ssh"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "t"},
        {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,docker0"},
    ]
    assert pod["volumes"] == [
        {"name": "trainjobs-assets", "configMap": {"name": "demo-assets", "defaultMode": 0o555}},
        {"name": "trainjobs-ssh", "secret": {"secretName": "demo-ssh", "defaultMode": 0o400}},
        {"name": "trainjobs-ssh-state", "emptyDir": {"medium": "Memory", "sizeLimit": "1Mi"}},
    ]
    assert container["volumeMounts"] == [
        {"name": "trainjobs-assets", "mountPath": "/etc/trainjobs", "readOnly": True},
        {"name": "trainjobs-ssh", "mountPath": "/etc/trainjobs-ssh", "readOnly": True},
        {"name": "trainjobs-ssh-state", "mountPath": "/run/trainjobs-ssh"},
    ]


def test_a_worker_with_its_own_command_keeps_it(job):
    worker = job["spec"]["worker"]["template"]["spec"]["containers"][0]
    worker["command"] = ["my-sshd-wrapper"]

    (container,) = pod_spec(manifests(job), "StatefulSet/demo-worker")["containers"]

    assert container["command"] == ["my-sshd-wrapper"]


def test_the_rsh_agent_and_the_waiter_know_every_pod_of_every_worker_set(job):
    job["spec"].pop("worker")
    template = {"spec": {"containers": [{"image": "img:1"}]}}
    job["spec"]["workerSets"] = {
        "a": {"replicas": 1, "template": template},
        "b": {"replicas": 2, "template": template},
    }
    data = manifests(job)["ConfigMap/demo-assets"]["data"]

    cases = [line.strip() for line in data["sshexec.sh"].splitlines() if line.endswith(";;")]
    assert cases[:-1] == [
        'demo-master) exec sh -c "$*" ;;',
        "demo-workerset-a-0) ;;",
        "demo-workerset-b-0) ;;",
        "demo-workerset-b-1) ;;",
    ]
    assert (
        "workers='demo-workerset-a-0 demo-workerset-a-0.demo.default.svc\n"
        "demo-workerset-b-0 demo-workerset-b-0.demo.default.svc\n"
        "demo-workerset-b-1 demo-workerset-b-1.demo.default.svc'\n"
    ) in data["cluster_waiter.sh"]


def test_secret_files_make_known_hosts_from_the_public_key():
    files = ssh_assets.secret_files(
        "trainjobs-demo", "-----BEGIN OPENSSH PRIVATE KEY-----\nAAA\n", "ssh-ed25519 AAAAC3 x\n"
    )

    assert files == {
        "ssh-privatekey": "-----BEGIN OPENSSH PRIVATE KEY-----\nAAA\n",
        "ssh-publickey": "ssh-ed25519 AAAAC3 x\n",
        "known_hosts": "trainjobs-demo ssh-ed25519 AAAAC3 x\n",
    }


# -- `trainjobs render --mpi-transport ssh` ----------------------------------------------------


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("render") / "ssh"
    assert main(["render", str(EXAMPLE), "--out", str(out), "--mpi-transport", "ssh"]) == 0
    return out


def test_render_writes_the_ssh_graph(rendered: Path):
    assert sorted(path.name for path in rendered.glob("*.yaml")) == [
        "01-ConfigMap-chainermn-mnist-assets.yaml",
        "02-Secret-chainermn-mnist-ssh.yaml",
        "03-Service-chainermn-mnist.yaml",
        "04-StatefulSet-chainermn-mnist-worker.yaml",
        "05-Job-chainermn-mnist-master.yaml",
    ]


def test_rendered_ssh_manifests_pass_strict_schema_validation(rendered: Path):
    problems = [
        problem
        for path in sorted(rendered.glob("*.yaml"))
        for problem in schema_problems(yaml.safe_load(path.read_text(encoding="utf-8")))
    ]

    assert problems == []


def test_rendered_ssh_manifests_grant_no_api_access_and_hold_no_key(rendered: Path):
    text = "".join(path.read_text(encoding="utf-8") for path in sorted(rendered.glob("*")))

    for needle in ("pods/exec", "Role", "serviceAccountName", "PRIVATE KEY", "ssh-ed25519"):
        assert needle not in text
    assert "automountServiceAccountToken: true" not in text


def test_an_unknown_transport_is_refused_by_the_command_line(capsys, tmp_path):
    with pytest.raises(SystemExit) as raised:
        main(["render", str(EXAMPLE), "--out", str(tmp_path / "x"), "--mpi-transport", "rsh"])

    assert raised.value.code == 2
    assert (
        "argument --mpi-transport: invalid choice: 'rsh' (choose from 'kubectl', 'ssh')"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "x").exists()


def test_the_example_job_loads_with_the_ssh_transport():
    job = load_job(EXAMPLE, options=SSH)

    assert [node.key for node in job.graph.nodes][1] == "Secret/chainermn-mnist-ssh"
