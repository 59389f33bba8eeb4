"""MPIJob (v1alpha2, v1, v2beta1): each version rendered as its operator runs it."""

from __future__ import annotations

import copy
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import parse_job

EXAMPLE = REPO / "jobs" / "mpijob-chainermn.yaml"


def mpijob(version: str, workers: int = 2, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "MPIJob",
        "metadata": {"name": "pi"},
        "spec": {
            **spec,
            "mpiReplicaSpecs": {
                "Launcher": {
                    "replicas": 1,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "launcher", "image": "mpi:1", "command": ["mpirun", "pi"]}
                            ]
                        }
                    },
                },
                "Worker": {
                    "replicas": workers,
                    "template": {"spec": {"containers": [{"name": "worker", "image": "mpi:1"}]}},
                },
            },
        },
    }


def objects(document: dict[str, Any], options: GraphOptions | None = None) -> dict[str, Any]:
    graph = parse_job(document, "test", options=options).graph
    return {node.key: node.manifest for node in graph.nodes}


def launcher(found: dict[str, Any]) -> dict[str, Any]:
    return found["Job/pi-launcher"]["spec"]["template"]


def env(template: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(e["name"], e.get("value")) for e in template["spec"]["containers"][0]["env"]]


def validate(tmp_path: Path, document: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))
    return subprocess.run(
        [sys.executable, "-m", "trainjobs.cli", "validate", str(path)],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_v2beta1_is_a_launcher_job_and_ssh_workers_with_the_operators_names():
    found = objects(mpijob("v2beta1"))

    assert list(found) == [
        "ConfigMap/pi-config",
        "Secret/pi-ssh",
        "Service/pi",
        "StatefulSet/pi-worker",
        "Job/pi-launcher",
    ]
    assert launcher(found)["spec"]["containers"][0]["command"] == ["mpirun", "pi"]
    assert launcher(found)["spec"]["hostname"] == "pi-launcher"
    assert launcher(found)["spec"]["restartPolicy"] == "OnFailure"
    assert [schema_problems(manifest) for manifest in found.values()] == [[]] * 5


def test_v2beta1_hostfile_and_discover_hosts_list_every_worker_by_its_dns_name():
    data = objects(mpijob("v2beta1", slotsPerWorker=4))["ConfigMap/pi-config"]["data"]

    assert data["hostfile"] == (
        "pi-worker-0.pi.default.svc slots=4\npi-worker-1.pi.default.svc slots=4\n"
    )
    assert data["discover_hosts.sh"] == (
        "#!/bin/sh\necho pi-worker-0.pi.default.svc\necho pi-worker-1.pi.default.svc\n"
    )


def test_v2beta1_open_mpi_env_and_labels_are_the_operators():
    found = objects(mpijob("v2beta1", slotsPerWorker=4))
    template = launcher(found)
    worker = found["StatefulSet/pi-worker"]["spec"]["template"]

    assert env(template)[-7:] == [
        ("K_MPI_JOB_ROLE", "launcher"),
        ("OMPI_MCA_orte_keep_fqdn_hostnames", "true"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("OMPI_MCA_plm_rsh_args", "-o ConnectionAttempts=10"),
        ("OMPI_MCA_orte_set_default_slots", "4"),
        ("NVIDIA_VISIBLE_DEVICES", None),
        ("NVIDIA_DRIVER_CAPABILITIES", None),
    ]
    assert env(worker)[-1] == ("K_MPI_JOB_ROLE", "worker")
    labels = template["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "launcher",
        "training.kubeflow.org/operator-name": "mpi-operator",
    }
    assert worker["metadata"]["labels"]["training.kubeflow.org/job-role"] == "worker"


def test_v2beta1_mounts_the_key_where_sshAuthMountPath_says_as_the_operator_does():
    found = objects(mpijob("v2beta1", sshAuthMountPath="/home/mpiuser/.ssh"))
    pod = found["StatefulSet/pi-worker"]["spec"]["template"]["spec"]

    assert pod["volumes"][-1] == {
        "name": "ssh-auth",
        "secret": {
            "secretName": "pi-ssh",
            "items": [
                {"key": "ssh-privatekey", "path": "id_rsa"},
                {"key": "ssh-publickey", "path": "id_rsa.pub"},
                {"key": "ssh-publickey", "path": "authorized_keys"},
            ],
        },
    }
    assert pod["containers"][0]["volumeMounts"][-2:] == [
        {"name": "mpi-job-config", "mountPath": "/etc/mpi", "readOnly": True},
        {"name": "ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
    ]


@pytest.mark.parametrize(
    ("implementation", "expected_env"),
    [
        (
            "Intel",
            [
                ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS", "-o ConnectionAttempts=10"),
                ("I_MPI_PERHOST", "2"),
            ],
        ),
        (
            "MPICH",
            [
                ("HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
                ("HYDRA_LAUNCH_EXTRA_ARGS", "-o ConnectionAttempts=10"),
            ],
        ),
    ],
)
def test_v2beta1_hydra_implementations_get_host_colon_slots_and_their_env(
    implementation, expected_env
):
    found = objects(mpijob("v2beta1", slotsPerWorker=2, mpiImplementation=implementation))

    assert found["ConfigMap/pi-config"]["data"]["hostfile"] == (
        "pi-worker-0.pi.default.svc:2\npi-worker-1.pi.default.svc:2\n"
    )
    names = [name for name, _ in env(launcher(found))]
    start = names.index("K_MPI_JOB_ROLE") + 1
    assert env(launcher(found))[start : start + len(expected_env)] == expected_env


def test_v2beta1_run_launcher_as_worker_puts_the_launcher_first_and_keeps_its_gpus():
    found = objects(mpijob("v2beta1", runLauncherAsWorker=True))
    data = found["ConfigMap/pi-config"]["data"]

    assert data["hostfile"].splitlines() == [
        "pi-launcher.pi.default.svc slots=1",
        "pi-worker-0.pi.default.svc slots=1",
        "pi-worker-1.pi.default.svc slots=1",
    ]
    assert data["discover_hosts.sh"].splitlines()[1] == "echo pi-launcher.pi.default.svc"
    assert "NVIDIA_VISIBLE_DEVICES" not in dict(env(launcher(found)))
    labels = launcher(found)["metadata"]["labels"]
    assert labels["training.kubeflow.org/replica-index"] == "0"


def test_v1_runs_over_kubectl_exec_with_training_operators_files_and_env():
    found = objects(mpijob("v1", slotsPerWorker=2, mainContainer="worker"))
    data = found["ConfigMap/pi-config"]["data"]
    template = launcher(found)

    assert list(found) == [
        "ConfigMap/pi-config",
        "ServiceAccount/pi-launcher",
        "Role/pi-launcher-role",
        "RoleBinding/pi-launcher-rolebinding",
        "Service/pi",
        "StatefulSet/pi-worker",
        "Job/pi-launcher",
    ]
    assert data["hostfile"] == "pi-worker-0 slots=2\npi-worker-1 slots=2\n"
    assert data["discover_hosts.sh"] == "#!/bin/sh\necho pi-worker-0:2\necho pi-worker-1:2"
    assert [line for line in data["kubexec.sh"].splitlines() if "container=" in line] == [
        "    pi-worker-0) container=worker ;;",
        "    pi-worker-1) container=worker ;;",
    ]
    assert env(template)[-6:] == [
        ("OMPI_MCA_plm_rsh_agent", "/etc/mpi/kubexec.sh"),
        ("OMPI_MCA_orte_default_hostfile", "/etc/mpi/hostfile"),
        ("NVIDIA_VISIBLE_DEVICES", ""),
        ("NVIDIA_DRIVER_CAPABILITIES", ""),
        ("I_MPI_HYDRA_BOOTSTRAP", "rsh"),
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
    ]
    assert template["spec"]["restartPolicy"] == "Never"
    assert {
        k: v for k, v in template["metadata"]["labels"].items() if "training.kubeflow" in k
    } == {
        "training.kubeflow.org/job-name": "pi",
        "training.kubeflow.org/replica-type": "launcher",
        "training.kubeflow.org/job-role": "master",
        "training.kubeflow.org/operator-name": "mpijob-controller",
    }
    assert [schema_problems(manifest) for manifest in found.values()] == [[]] * 7


def test_v1_a_gpu_launcher_is_the_hostfiles_first_host():
    document = mpijob("v1")
    container = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]
    container["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": 1}}
    data = objects(document)["ConfigMap/pi-config"]["data"]

    assert data["hostfile"] == "pi-launcher slots=1\npi-worker-0 slots=1\npi-worker-1 slots=1\n"
    assert data["discover_hosts.sh"] == (
        "#!/bin/sh\necho pi-launcher:1\n\necho pi-worker-0:1\necho pi-worker-1:1"
    )


def test_v1alpha2_intel_mpi_gets_its_distributions_variables_and_hostfile():
    found = objects(mpijob("v1alpha2", mpiDistribution="IntelMPI"))
    template = launcher(found)

    assert found["ConfigMap/pi-config"]["data"]["hostfile"] == "pi-worker-0:1\npi-worker-1:1\n"
    assert env(template)[-4:] == [
        ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "/etc/mpi/kubexec.sh"),
        ("I_MPI_HYDRA_HOST_FILE", "/etc/mpi/hostfile"),
        ("NVIDIA_VISIBLE_DEVICES", ""),
        ("NVIDIA_DRIVER_CAPABILITIES", ""),
    ]
    assert found["Job/pi-launcher"]["spec"]["backoffLimit"] == 6
    assert template["spec"]["restartPolicy"] == "OnFailure"
    assert template["metadata"]["labels"]["mpi-job-role"] == "launcher"
    assert template["metadata"]["labels"]["group-name"] == "kubeflow.org"


def test_the_launcher_decides_and_clean_pod_policy_defaults_to_none():
    definition = parse_job(mpijob("v2beta1"), "test")

    assert definition.kind == "MPIJob"
    assert definition.success_jobs == ("pi-launcher",)
    assert definition.worker_pods == ["pi-worker-0", "pi-worker-1"]
    assert definition.clean_pod_policy == "None"
    assert definition.anchor == ("ConfigMap", "pi-config")


def test_run_policy_suspend_ttl_and_deadline_reach_the_launcher_job():
    document = mpijob(
        "v2beta1",
        runPolicy={"suspend": True, "ttlSecondsAfterFinished": 60, "activeDeadlineSeconds": 30},
    )
    found = objects(document)
    definition = parse_job(document, "test")

    spec = found["Job/pi-launcher"]["spec"]
    assert (spec["suspend"], spec["ttlSecondsAfterFinished"], spec["activeDeadlineSeconds"]) == (
        True,
        60,
        30,
    )
    assert found["StatefulSet/pi-worker"]["spec"]["replicas"] == 0
    assert (definition.suspend, definition.ttl_seconds_after_finished) == (True, 60)


def test_a_gang_scheduler_places_launcher_and_workers_together():
    document = mpijob("v2beta1", runPolicy={"schedulingPolicy": {"queue": "q"}})
    found = objects(document, GraphOptions(gang_scheduler="volcano"))

    assert found["PodGroup/pi"]["spec"] == {"minMember": 3, "queue": "q"}
    assert launcher(found)["spec"]["schedulerName"] == "volcano"
    assert launcher(found)["metadata"]["annotations"] == {
        "scheduling.k8s.io/group-name": "pi",
        "volcano.sh/task-spec": "launcher",
    }
    worker = found["StatefulSet/pi-worker"]["spec"]["template"]
    assert worker["metadata"]["annotations"]["volcano.sh/task-spec"] == "worker"
    assert (
        parse_job(document, "test", options=GraphOptions(gang_scheduler="volcano")).gang_min_member
        == 3
    )


def test_the_example_keeps_its_command_and_workers():
    document = yaml.safe_load(EXAMPLE.read_text())
    found = objects(document)
    command = document["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]

    assert (
        found["Job/mpijob-chainermn-launcher"]["spec"]["template"]["spec"]["containers"][0][
            "command"
        ]
        == command[0]["command"]
    )
    assert found["StatefulSet/mpijob-chainermn-worker"]["spec"]["replicas"] == 2


def without(document: dict[str, Any], key: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    changed["spec"]["mpiReplicaSpecs"].pop(key)
    return changed


def with_value(document: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


def without_key(document: dict[str, Any], path: list[str], key: str) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target = changed
    for part in path:
        target = target[part]
    target.pop(key)
    return changed


@pytest.mark.parametrize(
    ("document", "first_line"),
    [
        (
            without(mpijob("v2beta1"), "Launcher"),
            "  spec.mpiReplicaSpecs.Launcher: required: an MPIJob's launcher runs mpirun; add a "
            "Launcher with its pod template",
        ),
        (
            with_value(mpijob("v1"), ["spec", "mpiReplicaSpecs", "Launcher", "replicas"], 2),
            "  spec.mpiReplicaSpecs.Launcher.replicas: must be 1 (got 2): an MPIJob has one "
            "launcher; omit it",
        ),
        (
            mpijob("v2beta1", mpiImplementation="MVAPICH"),
            "  spec.mpiImplementation: must be one of OpenMPI, Intel, MPICH (got 'MVAPICH')",
        ),
        (
            mpijob("v1", mpiImplementation="Intel"),
            "  spec.mpiImplementation: 'Intel' is not a field of kubeflow.org/v1: "
            "training-operator's MPIJob runs Open MPI (and Intel MPI over rsh); use apiVersion "
            "kubeflow.org/v2beta1 (mpi-operator), or remove it",
        ),
        (
            with_value(
                mpijob("v2beta1"), ["spec", "mpiReplicaSpecs", "Worker", "restartPolicy"], "Always"
            ),
            "  spec.mpiReplicaSpecs.Worker.restartPolicy: must be Never or OnFailure "
            "(got 'Always')",
        ),
        (
            mpijob("v2beta1", launcherCreationPolicy="Later"),
            "  spec.launcherCreationPolicy: must be one of AtStartup, WaitForWorkersReady "
            "(got 'Later')",
        ),
        (
            with_value(mpijob("v2beta1"), ["spec", "mpiReplicaSpecs", "Worker", "replicas"], 1001),
            "  spec.mpiReplicaSpecs.Worker.replicas: must be at most 1000 (got 1001): a job may "
            "have at most 1000 pods (each pod's objects and environment are written out); split "
            "it into smaller jobs",
        ),
        (
            with_value(mpijob("v1"), ["spec", "mpiReplicaSpecs", "Worker", "replicas"], 1000),
            "  spec: 1001 pods in all: a job may have at most 1000 pods (each pod's objects and "
            "environment are written out); split it into smaller jobs",
        ),
        (
            mpijob("v2beta1", slotsPerWorker=2**31),
            "  spec.slotsPerWorker: must be at most 2147483647 (got 2147483648): it is an int32 "
            "field",
        ),
        (
            without_key(mpijob("v2beta1"), ["spec", "mpiReplicaSpecs", "Worker"], "replicas"),
            "  spec.mpiReplicaSpecs.Worker.replicas: must be at least 1 (got 0, mpi-operator's "
            "default when it is not set); set it, or remove the Worker for a launcher-only job",
        ),
    ],
)
def test_what_the_operator_refuses_is_refused_with_exit_2(tmp_path, document, first_line):
    result = validate(tmp_path, document)

    assert result.returncode == 2
    assert result.stderr.splitlines()[1] == first_line


def test_the_watcher_sees_the_launcher_decide_and_stops_the_workers_as_clean_pod_policy_says():
    from trainjobs.cluster.target import WorkerRef
    from trainjobs.deploy.watch_target import watch_target

    document = mpijob("v1", runPolicy={"cleanPodPolicy": "Running"})
    target = watch_target(parse_job(document, "test"), gated=True)

    assert target.kind == "MPIJob"
    assert (target.rules.master, target.rules.success_jobs, target.rules.worker_jobs) == (
        "pi-launcher",
        ("pi-launcher",),
        (),
    )
    assert target.workers == (WorkerRef("StatefulSet", "pi-worker", 2),)
    assert target.clean_pod_policy == "Running"
    assert target.anchor == ("ConfigMap", "pi-config")


def test_kubexec_skips_the_options_a_launcher_passes_before_the_host(tmp_path):
    from tests.kinds.chainer.test_graph import recording_kubectl, run_script

    data = objects(mpijob("v1"))["ConfigMap/pi-config"]["data"]
    script = tmp_path / "kubexec.sh"
    script.write_text(data["kubexec.sh"])
    script.chmod(0o755)
    kubectl = recording_kubectl(tmp_path)

    # Hydra's rsh bootstrap passes -x; Open MPI's plm_rsh_args an -o pair.
    result = run_script(
        script, kubectl, "-x", "-o", "ConnectionAttempts=10", "pi-worker-1", "orted"
    )

    assert result.returncode == 0, result.stderr
    assert (tmp_path / "kubectl.log").read_text() == (
        "exec|-i|pi-worker-1|-c|worker|--|sh|-c|orted|\n"
    )


def test_sshexec_skips_open_mpis_rsh_args_before_the_host(tmp_path):
    data = objects(mpijob("v2beta1"))["ConfigMap/pi-config"]["data"]
    script = tmp_path / "sshexec.sh"
    script.write_text(data["sshexec.sh"])

    local = subprocess.run(
        ["sh", str(script), "-o", "ConnectionAttempts=10", "pi-launcher", "echo", "local"],
        capture_output=True,
        text=True,
        timeout=20,
    )
    other = subprocess.run(
        ["sh", str(script), "-o", "ConnectionAttempts=10", "elsewhere", "true"],
        capture_output=True,
        text=True,
        timeout=20,
    )

    assert (local.returncode, local.stdout) == (0, "local\n")
    assert (other.returncode, other.stderr) == (
        2,
        "sshexec.sh: 'elsewhere' is not a pod of job pi\n",
    )


def _pi_as_mpiuser() -> dict[str, Any]:
    """mpi-operator's examples/v2beta1/pi: containers run as user 1000 (the image's default
    user is root), the workers run their own sshd, the key goes under the user's home."""
    document = mpijob("v2beta1", sshAuthMountPath="/home/mpiuser/.ssh")
    specs = document["spec"]["mpiReplicaSpecs"]
    for replica in ("Launcher", "Worker"):
        container = specs[replica]["template"]["spec"]["containers"][0]
        container["securityContext"] = {"runAsUser": 1000}
    worker = specs["Worker"]["template"]["spec"]["containers"][0]
    worker["command"] = ["/usr/sbin/sshd", "-De", "-f", "/home/mpiuser/.sshd_config"]
    return document


def _volume(template: dict[str, Any], name: str) -> dict[str, Any]:
    return next(v for v in template["spec"]["volumes"] if v["name"] == name)


def test_a_launcher_running_as_a_user_waits_as_that_user_and_can_read_the_jobs_key():
    found = objects(_pi_as_mpiuser())
    template = launcher(found)
    waiter = template["spec"]["initContainers"][-1]

    # The workers' sshd runs as 1000 and accepts only that user: the waiter connects as it.
    assert waiter["name"] == "trainjobs-cluster-waiter"
    assert waiter["securityContext"]["runAsUser"] == 1000
    # Root-owned and readable by all, as mpi-operator mounts the same key at sshAuthMountPath
    # (0644): ssh accepts a private key another user owns; 0400 would be unreadable to 1000.
    assert _volume(template, "trainjobs-ssh")["secret"]["defaultMode"] == 0o444
    worker = found["StatefulSet/pi-worker"]["spec"]["template"]
    assert _volume(worker, "trainjobs-ssh")["secret"]["defaultMode"] == 0o444


def test_a_root_launcher_keeps_the_key_owner_only():
    template = launcher(objects(mpijob("v2beta1")))

    assert "runAsUser" not in template["spec"]["initContainers"][-1]["securityContext"]
    assert _volume(template, "trainjobs-ssh")["secret"]["defaultMode"] == 0o400
