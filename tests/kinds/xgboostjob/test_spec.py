"""XGBoostJob: the env on every container of every pod, in the operator's order; the Master
decides; the webhook's refusals (pkg/webhooks/xgboost/xgboostjob_webhook.go, v1.9.0)."""

from __future__ import annotations

from tests.kinds.kind_documents import env_of, job, parse, refused, replica


def xgboostjob(**replica_specs):
    return job("XGBoostJob", "xgbReplicaSpecs", **replica_specs)


def values(env):
    return [(item["name"], item["value"]) for item in env]


def test_every_container_of_a_worker_gets_its_rank_after_the_master_and_the_worker_list():
    worker = replica("xgboost", 3)
    worker["template"]["spec"]["containers"].append({"name": "sidecar", "image": "s:1"})
    job = parse(xgboostjob(Master=replica("xgboost"), Worker=worker))
    expected = [
        ("MASTER_PORT", "9999"),
        ("MASTER_ADDR", "j-master-0"),
        ("WORLD_SIZE", "4"),
        ("RANK", "2"),
        ("PYTHONUNBUFFERED", "1"),
        ("WORKER_PORT", "9999"),
        ("WORKER_ADDRS", "j-worker-0,j-worker-1,j-worker-2"),
    ]
    assert values(env_of(job, "j-worker-1")) == expected
    assert values(env_of(job, "j-worker-1", container=1)) == expected


def test_the_master_and_worker_ports_are_their_own_xgboostjob_ports():
    master, worker = replica("xgboost"), replica("xgboost", 1)
    master["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "xgboostjob-port", "containerPort": 9991}
    ]
    job = parse(xgboostjob(Master=master, Worker=worker))
    env = dict(values(env_of(job, "j-master-0")))
    assert (env["MASTER_PORT"], env["WORKER_PORT"], env["RANK"]) == ("9991", "9999", "0")


def test_a_lone_master_gets_no_worker_variables_and_decides():
    job = parse(xgboostjob(Master=replica("xgboost")))
    assert [item["name"] for item in env_of(job, "j-master-0")] == [
        "MASTER_PORT",
        "MASTER_ADDR",
        "WORLD_SIZE",
        "RANK",
        "PYTHONUNBUFFERED",
    ]
    assert job.success_jobs == ("j-master-0",)


def test_the_master_decides_and_the_default_restart_policy_is_never():
    job = parse(xgboostjob(Master=replica("xgboost"), Worker=replica("xgboost", 2)))
    assert job.success_jobs == ("j-master-0",)
    assert [w.name for w in job.workers] == ["j-worker-0", "j-worker-1"]
    assert job.clean_pod_policy == "None"
    node = next(n for n in job.graph.nodes if n.name == "j-worker-0" and n.kind == "Job")
    assert node.manifest["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    assert node.manifest["spec"]["backoffLimit"] == 0


def test_a_job_without_a_master_is_refused_as_the_webhook_refuses_it(tmp_path, capsys):
    assert refused(xgboostjob(Worker=replica("xgboost", 2)), tmp_path, capsys) == [
        "spec.xgbReplicaSpecs.Master: required: the operator's webhook refuses a job without "
        "a Master (rank 0, the MASTER_ADDR every replica is given); add Master: with "
        "replicas: 1"
    ]


def test_a_master_of_two_replicas_is_refused(tmp_path, capsys):
    assert refused(xgboostjob(Master=replica("xgboost", 2)), tmp_path, capsys) == [
        "spec.xgbReplicaSpecs.Master.replicas: must be 1 (got 2); add Workers instead"
    ]


def test_a_master_without_replicas_is_refused_before_any_default(tmp_path, capsys):
    assert refused(xgboostjob(Master=replica("xgboost", None)), tmp_path, capsys) == [
        "spec.xgbReplicaSpecs.Master.replicas: required: must be 1, as the operator's webhook "
        "checks it before any default applies; write replicas: 1"
    ]


def test_a_replica_type_spelled_otherwise_is_refused_with_the_spelling(tmp_path, capsys):
    document = xgboostjob(Master=replica("xgboost"), worker=replica("xgboost"))
    assert refused(document, tmp_path, capsys) == [
        "spec.xgbReplicaSpecs.worker: 'worker' is not a XGBoostJob replica type: write 'Worker'"
    ]


def test_a_replica_without_the_xgboost_container_is_refused(tmp_path, capsys):
    assert refused(xgboostjob(Master=replica("main")), tmp_path, capsys) == [
        "spec.xgbReplicaSpecs.Master.template.spec.containers: must have a container named "
        "'xgboost' (got ['main']): Kubeflow puts the job's port and environment on it; rename "
        "the main container"
    ]


def test_xgboost_operators_own_api_group_is_refused_with_the_way_to_move(tmp_path, capsys):
    document = xgboostjob(Master=replica("xgboostjob"))
    document["apiVersion"] = "xgboostjob.kubeflow.org/v1alpha1"
    assert refused(document, tmp_path, capsys) == [
        "apiVersion: 'xgboostjob.kubeflow.org/v1alpha1' is kubeflow/xgboost-operator's API "
        "group (archived); training-operator serves XGBoostJob as kubeflow.org/v1 with the "
        "same xgbReplicaSpecs: write apiVersion: kubeflow.org/v1 and name the main containers "
        "'xgboost' (xgboost-operator named them 'xgboostjob')"
    ]
