"""The ChainerJob graph: objects, order, least-privilege RBAC, and what the pods get."""

from __future__ import annotations

import copy
import os
import subprocess
from pathlib import Path
from typing import Any

from trainjobs.core.graph import Graph, GraphOptions
from trainjobs.kinds.chainer import spec as chainer_spec
from trainjobs.kinds.mpi.graph import WORKER_COMMAND, build_graph


def graph_of(document: dict[str, Any], options: GraphOptions | None = None) -> Graph:
    return build_graph(chainer_spec.parse(document, "job.yaml"), options)


def pod_spec(graph: Graph, key: str) -> dict[str, Any]:
    return graph.get(key).manifest["spec"]["template"]["spec"]


def test_distributed_job_objects_in_creation_order(job):
    assert [n.key for n in graph_of(job).nodes] == [
        "ConfigMap/demo-assets",
        "ServiceAccount/demo-launcher",
        "Role/demo-launcher-role",
        "RoleBinding/demo-launcher-rolebinding",
        "Service/demo",
        "StatefulSet/demo-worker",
        "Job/demo-master",
    ]


def test_single_pod_job_is_a_config_map_and_a_job(job):
    del job["spec"]["worker"]
    graph = graph_of(job)
    assert [n.key for n in graph.nodes] == ["ConfigMap/demo-assets", "Job/demo-master"]
    assert graph.get("Job/demo-master").depends_on == ("ConfigMap/demo-assets",)
    pod = pod_spec(graph, "Job/demo-master")
    assert (pod["automountServiceAccountToken"], "initContainers" in pod) == (False, False)


def test_each_tier_depends_on_the_one_before_assets_then_rbac_then_workload(job):
    graph = graph_of(job)
    assert {n.key: n.depends_on for n in graph.nodes} == {
        "ConfigMap/demo-assets": (),
        "ServiceAccount/demo-launcher": ("ConfigMap/demo-assets",),
        "Role/demo-launcher-role": ("ConfigMap/demo-assets",),
        "RoleBinding/demo-launcher-rolebinding": (
            "ServiceAccount/demo-launcher",
            "Role/demo-launcher-role",
        ),
        "Service/demo": ("RoleBinding/demo-launcher-rolebinding",),
        "StatefulSet/demo-worker": ("Service/demo",),
        "Job/demo-master": ("StatefulSet/demo-worker",),
    }


def test_the_master_job_waits_for_every_worker_set(job):
    worker = job["spec"].pop("worker")
    job["spec"]["workerSets"] = {"a": worker, "b": copy.deepcopy(worker)}
    assert graph_of(job).get("Job/demo-master").depends_on == (
        "StatefulSet/demo-workerset-a",
        "StatefulSet/demo-workerset-b",
    )


def test_role_may_only_get_and_exec_into_this_jobs_worker_pods(job):
    """No `list`: with resourceNames RBAC would match only a list that selects one name,
    which the assets never send."""
    role = graph_of(job).get("Role/demo-launcher-role").manifest
    assert role["rules"] == [
        {
            "apiGroups": [""],
            "resources": ["pods"],
            "verbs": ["get"],
            "resourceNames": ["demo-worker-0", "demo-worker-1"],
        },
        {
            "apiGroups": [""],
            "resources": ["pods/exec"],
            "verbs": ["create", "get"],
            "resourceNames": ["demo-worker-0", "demo-worker-1"],
        },
    ]


def test_role_binding_binds_the_launcher_account_to_the_role(job):
    binding = graph_of(job).get("RoleBinding/demo-launcher-rolebinding").manifest
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": "demo-launcher", "namespace": "default"}
    ]
    assert binding["roleRef"] == {
        "apiGroup": "rbac.authorization.k8s.io",
        "kind": "Role",
        "name": "demo-launcher-role",
    }


def test_only_the_master_pod_gets_an_api_token(job):
    graph = graph_of(job)
    account = graph.get("ServiceAccount/demo-launcher").manifest
    assert account["automountServiceAccountToken"] is False
    master = pod_spec(graph, "Job/demo-master")
    assert (master["serviceAccountName"], master["automountServiceAccountToken"]) == (
        "demo-launcher",
        True,
    )
    worker = pod_spec(graph, "StatefulSet/demo-worker")
    assert (worker["automountServiceAccountToken"], "serviceAccountName" in worker) == (
        False,
        False,
    )


def test_hostfile_lists_the_master_first_then_each_worker_pod_with_its_slots(job):
    job["spec"]["worker"]["mpiConfig"] = {"slots": 4}
    data = graph_of(job).get("ConfigMap/demo-assets").manifest["data"]
    assert data["hostfile"] == "demo-master slots=1\ndemo-worker-0 slots=4\ndemo-worker-1 slots=4\n"
    assert sorted(data) == ["cluster_waiter.sh", "hostfile", "kubexec.sh"]


def test_headless_service_publishes_pods_before_they_are_ready(job):
    service = graph_of(job).get("Service/demo").manifest
    assert service["spec"] == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {"training.kubeflow.org/job-name": "demo"},
    }


def test_workers_are_a_parallel_statefulset_of_sleeping_exec_targets(job):
    statefulset = graph_of(job).get("StatefulSet/demo-worker").manifest["spec"]
    assert (statefulset["serviceName"], statefulset["replicas"]) == ("demo", 2)
    assert statefulset["podManagementPolicy"] == "Parallel"
    assert statefulset["selector"]["matchLabels"] == {
        "training.kubeflow.org/job-name": "demo",
        "training.kubeflow.org/replica-type": "worker",
        "trainjobs.io/worker-set": "demo-worker",
    }
    container = statefulset["template"]["spec"]["containers"][0]
    assert container["command"] == WORKER_COMMAND
    assert "args" not in container


def test_a_worker_keeps_its_own_command_and_args(job):
    worker = job["spec"]["worker"]["template"]["spec"]["containers"][0]
    worker.update(command=["sh", "-c"], args=["while true; do sleep 1 & wait; done"])
    statefulset = graph_of(job).get("StatefulSet/demo-worker").manifest["spec"]
    container = statefulset["template"]["spec"]["containers"][0]
    assert (container["command"], container["args"]) == (
        ["sh", "-c"],
        ["while true; do sleep 1 & wait; done"],
    )


def test_a_worker_with_args_only_keeps_its_image_entrypoint(job):
    job["spec"]["worker"]["template"]["spec"]["containers"][0]["args"] = ["--serve"]
    statefulset = graph_of(job).get("StatefulSet/demo-worker").manifest["spec"]
    container = statefulset["template"]["spec"]["containers"][0]
    assert "command" not in container
    assert container["args"] == ["--serve"]


def test_worker_sleep_loop_exits_zero_on_sigterm_at_once_and_leaves_nothing_behind():
    process = subprocess.Popen(WORKER_COMMAND, start_new_session=True)
    try:
        # Give the shell time to install its trap, then stop it as the kubelet would.
        subprocess.run(["sleep", "0.3"], check=True)
        process.terminate()
        assert process.wait(timeout=5) == 0
        subprocess.run(["sleep", "0.2"], check=True)
        survivors = subprocess.run(
            ["pgrep", "-s", str(process.pid)], capture_output=True, text=True
        ).stdout.split()
        assert survivors == []
    finally:
        subprocess.run(["pkill", "-KILL", "-s", str(process.pid)], check=False)


def test_master_job_passes_backoff_limit_and_deadline_through(job):
    job["spec"]["master"].update(backoffLimit=3, activeDeadlineSeconds=7200)
    spec = graph_of(job).get("Job/demo-master").manifest["spec"]
    assert (spec["backoffLimit"], spec["activeDeadlineSeconds"]) == (3, 7200)


def test_master_job_leaves_unset_limits_to_kubernetes(job):
    spec = graph_of(job).get("Job/demo-master").manifest["spec"]
    assert ("backoffLimit" in spec, "activeDeadlineSeconds" in spec) == (False, False)


def test_master_env_wires_open_mpi_to_the_assets(job):
    container = pod_spec(graph_of(job), "Job/demo-master")["containers"][0]
    assert container["env"] == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/trainjobs/hostfile"},
        {"name": "OMPI_MCA_plm_rsh_agent", "value": "/etc/trainjobs/kubexec.sh"},
        {"name": "OMPI_MCA_plm_rsh_no_tree_spawn", "value": "1"},
        {"name": "OMPI_MCA_orte_leave_session_attached", "value": "1"},
        {"name": "TRAINJOBS_KUBECTL", "value": "/opt/trainjobs/bin/kubectl"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "t"},
        {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,docker0"},
    ]


def test_master_is_reachable_by_the_name_in_the_hostfile(job):
    pod = pod_spec(graph_of(job), "Job/demo-master")
    assert (pod["hostname"], pod["subdomain"], pod["restartPolicy"]) == (
        "demo-master",
        "demo",
        "Never",
    )


def test_master_init_containers_deliver_kubectl_then_wait_for_workers(job):
    graph = graph_of(
        job, GraphOptions(kubectl_image="mirror.local/kubectl@sha256:abc", wait_timeout_seconds=90)
    )
    init = pod_spec(graph, "Job/demo-master")["initContainers"]
    assert [(c["name"], c["image"], c["command"]) for c in init] == [
        (
            "trainjobs-kubectl-delivery",
            "mirror.local/kubectl@sha256:abc",
            ["cp", "/bin/kubectl", "/opt/trainjobs/bin/kubectl"],
        ),
        (
            "trainjobs-cluster-waiter",
            "mirror.local/kubectl@sha256:abc",
            ["sh", "/etc/trainjobs/cluster_waiter.sh"],
        ),
    ]
    assert init[1]["env"] == [
        {"name": "TRAINJOBS_KUBECTL", "value": "/bin/kubectl"},
        {"name": "TRAINJOBS_WAIT_TIMEOUT_SECONDS", "value": "90"},
    ]
    assert all(c["securityContext"]["runAsNonRoot"] for c in init)


def test_user_env_volumes_init_containers_and_labels_are_kept_and_ours_appended(job):
    master = job["spec"]["master"]["template"]
    master["metadata"] = {"labels": {"team": "vision"}}
    master["spec"]["volumes"] = [{"name": "data", "emptyDir": {}}]
    master["spec"]["initContainers"] = [{"name": "fetch", "image": "busybox:1"}]
    container = master["spec"]["containers"][0]
    container["env"] = [
        {"name": "EPOCHS", "value": "5"},
        {"name": "OMPI_MCA_btl_tcp_if_exclude", "value": "lo,eth1"},
    ]
    container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
    graph = graph_of(job)
    pod = graph.get("Job/demo-master").manifest["spec"]["template"]
    assert pod["metadata"]["labels"]["team"] == "vision"
    assert pod["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "master"
    assert [v["name"] for v in pod["spec"]["volumes"]] == [
        "data",
        "trainjobs-assets",
        "trainjobs-kubectl",
    ]
    assert [c["name"] for c in pod["spec"]["initContainers"]] == [
        "fetch",
        "trainjobs-kubectl-delivery",
        "trainjobs-cluster-waiter",
    ]
    env = pod["spec"]["containers"][0]["env"]
    assert env[:2] == container["env"]
    # A variable the user set is an intended override: ours is not added a second time.
    assert [e["value"] for e in env if e["name"] == "OMPI_MCA_btl_tcp_if_exclude"] == ["lo,eth1"]
    mounts = pod["spec"]["containers"][0]["volumeMounts"]
    assert [m["mountPath"] for m in mounts] == ["/data", "/etc/trainjobs", "/opt/trainjobs/bin"]


def test_every_object_carries_recommended_and_kubeflow_labels(job):
    job["metadata"]["labels"] = {"team": "vision"}
    for node in graph_of(job).nodes:
        labels = node.manifest["metadata"]["labels"]
        assert {k: labels[k] for k in sorted(labels)} == {
            "app.kubernetes.io/component": labels["app.kubernetes.io/component"],
            "app.kubernetes.io/instance": "demo",
            "app.kubernetes.io/managed-by": "trainjobs",
            "app.kubernetes.io/name": "chainerjob",
            "team": "vision",
            "training.kubeflow.org/job-name": "demo",
        }


def test_gpu_worker_sets_get_slots_from_their_gpu_limit_in_the_hostfile(job):
    worker = job["spec"].pop("worker")
    gpu = {
        "replicas": 1,
        "template": {
            "spec": {
                "containers": [{"image": "img:1", "resources": {"limits": {"nvidia.com/gpu": 8}}}]
            }
        },
    }
    job["spec"]["workerSets"] = {"cpu": worker, "gpu": gpu}
    data = graph_of(job).get("ConfigMap/demo-assets").manifest["data"]
    assert data["hostfile"] == (
        "demo-master slots=1\n"
        "demo-workerset-cpu-0 slots=1\n"
        "demo-workerset-cpu-1 slots=1\n"
        "demo-workerset-gpu-0 slots=8\n"
    )


# The generated scripts, run for real against a kubectl that records its arguments.


def write_assets(job: dict[str, Any], tmp_path: Path) -> dict[str, Path]:
    data = graph_of(job).get("ConfigMap/demo-assets").manifest["data"]
    paths = {}
    for name, content in data.items():
        path = tmp_path / name
        path.write_text(content, encoding="utf-8")
        path.chmod(0o755)
        paths[name] = path
    return paths


def recording_kubectl(
    tmp_path: Path, phase: str = "Running", answer: str = "trainjobs-ready"
) -> Path:
    log = tmp_path / "kubectl.log"
    kubectl = tmp_path / "kubectl"
    kubectl.write_text(
        "#!/bin/sh\n"
        # One write per call: the waiter runs its probes at once.
        f'line=$(printf "%s|" "$@"); echo "$line" >> {log}\n'
        # As the API server does, an exec reaches only a Running pod's container.
        f'case "$1" in get) echo {phase} ;; exec) [ {phase} = Running ] && echo {answer} ;; esac\n',
        encoding="utf-8",
    )
    kubectl.chmod(0o755)
    return kubectl


def run_script(script: Path, kubectl: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(script), *args],
        env={**os.environ, "TRAINJOBS_KUBECTL": str(kubectl), **env},
        capture_output=True,
        text=True,
        timeout=20,
    )


def test_kubexec_execs_the_remote_command_in_the_named_container(job, tmp_path):
    job["spec"]["worker"]["template"]["spec"]["containers"] = [
        {"name": "sidecar", "image": "proxy:1"},
        {"name": "chainer", "image": "img:1"},
    ]
    kubectl = recording_kubectl(tmp_path)
    result = run_script(
        write_assets(job, tmp_path)["kubexec.sh"],
        kubectl,
        "demo-worker-1.demo.default.svc",
        "orted",
        "-mca",
        "x",
        "1",
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "kubectl.log").read_text() == (
        "exec|-i|demo-worker-1|-c|chainer|--|sh|-c|orted -mca x 1|\n"
    )


def test_kubexec_runs_locally_for_the_master_itself(job, tmp_path):
    kubectl = recording_kubectl(tmp_path)
    result = run_script(
        write_assets(job, tmp_path)["kubexec.sh"], kubectl, "demo-master", "echo", "local"
    )
    assert (result.returncode, result.stdout) == (0, "local\n")
    assert not (tmp_path / "kubectl.log").exists()


def test_kubexec_refuses_a_host_that_is_not_a_pod_of_the_job(job, tmp_path):
    kubectl = recording_kubectl(tmp_path)
    result = run_script(write_assets(job, tmp_path)["kubexec.sh"], kubectl, "other-pod;id", "true")
    assert result.returncode == 2
    assert result.stderr == "kubexec.sh: 'other-pod;id' is not a pod of job demo\n"
    assert not (tmp_path / "kubectl.log").exists()


def both_workers_ready(stdout: str) -> bool:
    """The waiter's output once both workers answered in its first round."""
    *lines, last = stdout.splitlines()
    # Whole seconds by `date +%s`: a round that crosses a second's edge says 1s.
    return lines == [
        "cluster_waiter: demo-worker-0 is ready",
        "cluster_waiter: demo-worker-1 is ready",
    ] and last in (
        "cluster_waiter: all 2 workers ready after 0s",
        "cluster_waiter: all 2 workers ready after 1s",
    )


def test_cluster_waiter_succeeds_once_every_worker_answers_an_exec(job, tmp_path):
    kubectl = recording_kubectl(tmp_path)
    result = run_script(write_assets(job, tmp_path)["cluster_waiter.sh"], kubectl)
    assert result.returncode == 0, result.stderr
    assert both_workers_ready(result.stdout)
    # An exec that answers needs no get: one API call per ready worker.
    assert sorted((tmp_path / "kubectl.log").read_text().splitlines()) == [
        "exec|demo-worker-0|-c|chainer|--|sh|-c|echo trainjobs-ready|",
        "exec|demo-worker-1|-c|chainer|--|sh|-c|echo trainjobs-ready|",
    ]


def rendezvous_kubectl(tmp_path: Path) -> Path:
    """A kubectl whose exec answers only once every worker's exec has started (it gives up
    after 5 s): workers probed one after another never all answer in one round."""
    kubectl = tmp_path / "kubectl"
    started = tmp_path / "started"
    kubectl.write_text(
        "#!/bin/sh\n"
        'case "$1" in\n'
        "    get) echo Running ;;\n"
        f'    exec) touch "{started}-$2"\n'
        "        for _ in 1 2 3 4 5 6 7 8 9 10; do\n"
        f"            if [ -e {started}-demo-worker-0 ] && [ -e {started}-demo-worker-1 ]; then\n"
        "                echo trainjobs-ready; exit 0\n"
        "            fi\n"
        "            sleep 0.5\n"
        "        done ;;\n"
        "esac\n",
        encoding="utf-8",
    )
    kubectl.chmod(0o755)
    return kubectl


def test_cluster_waiter_probes_every_worker_at_once(job, tmp_path):
    result = run_script(
        write_assets(job, tmp_path)["cluster_waiter.sh"],
        rendezvous_kubectl(tmp_path),
        TRAINJOBS_WAIT_TIMEOUT_SECONDS="1",
    )
    assert result.returncode == 0, result.stderr
    assert both_workers_ready(result.stdout)


def test_cluster_waiter_probes_at_most_its_batch_at_once(job, tmp_path):
    result = run_script(
        write_assets(job, tmp_path)["cluster_waiter.sh"],
        rendezvous_kubectl(tmp_path),
        TRAINJOBS_WAIT_TIMEOUT_SECONDS="1",
        TRAINJOBS_WAIT_PARALLEL="1",
    )
    assert result.returncode == 1
    # worker-0's exec gave up waiting for worker-1's, which started only after it.
    assert result.stdout.splitlines() == ["cluster_waiter: demo-worker-1 is ready"]
    assert result.stderr == (
        "cluster_waiter: timed out after 1s; workers not ready: demo-worker-0(Running)\n"
    )


def wait_one_second(job, tmp_path: Path, kubectl: Path) -> subprocess.CompletedProcess:
    """The cluster waiter with a 1 s timeout, looking every 0.2 s."""
    return run_script(
        write_assets(job, tmp_path)["cluster_waiter.sh"],
        kubectl,
        TRAINJOBS_WAIT_TIMEOUT_SECONDS="1",
        TRAINJOBS_WAIT_INTERVAL_SECONDS="0.2",
    )


def test_cluster_waiter_fails_loudly_naming_workers_that_never_came_up(job, tmp_path):
    kubectl = recording_kubectl(tmp_path, phase="Pending")
    result = wait_one_second(job, tmp_path, kubectl)
    assert result.returncode == 1
    assert result.stderr == (
        "cluster_waiter: timed out after 1s; workers not ready: "
        "demo-worker-0(Pending) demo-worker-1(Pending)\n"
    )


def test_cluster_waiter_does_not_trust_running_without_an_exec_round_trip(job, tmp_path):
    kubectl = recording_kubectl(tmp_path, phase="Running", answer="")
    result = wait_one_second(job, tmp_path, kubectl)
    assert result.returncode == 1
    assert "workers not ready: demo-worker-0(Running) demo-worker-1(Running)" in result.stderr


def test_cluster_waiter_reports_a_phase_it_does_not_know_as_unknown(job, tmp_path):
    # The answer is parsed as POD:PHASE words: an API answer cannot bend that parsing.
    kubectl = recording_kubectl(tmp_path, phase="'Running demo-worker-1:ready'")
    result = wait_one_second(job, tmp_path, kubectl)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "cluster_waiter: timed out after 1s; workers not ready: "
        "demo-worker-0(Unknown) demo-worker-1(Unknown)\n"
    )
