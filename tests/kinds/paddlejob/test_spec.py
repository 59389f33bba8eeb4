"""PaddleJob: the launchers' env in collective mode (Workers only) and parameter-server mode
(a Master), on every container; who decides; elasticPolicy, which the operator ignores
(pkg/controller.v1/paddlepaddle/envvar.go and paddlepaddle_controller.go, v1.9.0)."""

from __future__ import annotations

from tests.kinds.kind_documents import env_of, job, parse, refused, replica

POD_IP = {"name": "POD_IP_DUMMY", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}


def paddlejob(**replica_specs):
    return job("PaddleJob", "paddleReplicaSpecs", **replica_specs)


def test_collective_workers_meet_at_worker_0_which_names_its_own_address():
    worker = replica("paddle", 3)
    worker["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "master", "containerPort": 37777}
    ]
    job = parse(paddlejob(Worker=worker))
    common = [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "PADDLE_JOB_ID", "value": "j"},
        {"name": "PADDLE_NNODES", "value": "3"},
    ]
    assert env_of(job, "j-worker-0") == [
        *common,
        POD_IP,
        {"name": "PADDLE_MASTER", "value": "$(POD_IP_DUMMY):37777"},
    ]
    assert env_of(job, "j-worker-2") == [
        *common,
        {"name": "PADDLE_MASTER", "value": "j-worker-0:37777"},
    ]
    assert job.success_jobs == ("j-worker-0", "j-worker-1", "j-worker-2")


def test_with_a_master_the_servers_and_trainers_are_told_so_and_the_master_decides():
    job = parse(paddlejob(Master=replica("paddle"), Worker=replica("paddle", 2)))
    assert env_of(job, "j-master-0")[3:] == [
        POD_IP,
        {"name": "PADDLE_MASTER", "value": "$(POD_IP_DUMMY):36543"},
        {"name": "PADDLE_SERVER_NUM", "value": "1"},
    ]
    assert env_of(job, "j-worker-0")[3:] == [
        {"name": "PADDLE_MASTER", "value": "j-master-0:36543"},
        {"name": "PADDLE_TRAINER_NUM", "value": "1"},
    ]
    assert job.success_jobs == ("j-master-0",)


def test_the_default_restart_policy_is_on_failure_and_pods_are_left_as_they_end():
    job = parse(paddlejob(Worker=replica("paddle", 2)))
    node = next(n for n in job.graph.nodes if n.name == "j-worker-1" and n.kind == "Job")
    assert node.manifest["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert job.clean_pod_policy == "None"


def test_an_elastic_policy_is_accepted_and_said_to_have_no_effect():
    document = paddlejob(Worker=replica("paddle", 2))
    document["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 2}
    assert [str(w) for w in parse(document).warnings] == [
        "spec.elasticPolicy: not used: training-operator's PaddleJob controller ignores it (no "
        "autoscaler, no elastic launch), so the job runs its replicas as given; remove it"
    ]


def test_a_replica_without_the_paddle_container_is_refused(tmp_path, capsys):
    assert refused(paddlejob(Worker=replica("main", 2)), tmp_path, capsys) == [
        "spec.paddleReplicaSpecs.Worker.template.spec.containers: must have a container named "
        "'paddle' (got ['main']): Kubeflow puts the job's port and environment on it; rename "
        "the main container"
    ]


def test_an_empty_replica_map_is_refused(tmp_path, capsys):
    assert refused(paddlejob(), tmp_path, capsys) == [
        "spec.paddleReplicaSpecs: required: Workers (collective mode) or a Master and Workers"
    ]
