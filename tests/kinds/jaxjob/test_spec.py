"""JAXJob: what `jax.distributed.initialize` is given on every container; every Worker
decides; Worker is the only replica type (pkg/controller.v1/jax/envvar.go, v1.9.0)."""

from __future__ import annotations

from tests.kinds.kind_documents import env_of, job, parse, refused, replica


def jaxjob(**replica_specs):
    return job("JAXJob", "jaxReplicaSpecs", **replica_specs)


def test_each_worker_gets_the_coordinator_the_process_count_and_its_id():
    worker = replica("jax", 3)
    worker["template"]["spec"]["containers"][0]["ports"] = [
        {"name": "jaxjob-port", "containerPort": 1234}
    ]
    job = parse(jaxjob(Worker=worker))
    assert env_of(job, "j-worker-2") == [
        {"name": "PYTHONUNBUFFERED", "value": "1"},
        {"name": "COORDINATOR_PORT", "value": "1234"},
        {"name": "COORDINATOR_ADDRESS", "value": "j-worker-0"},
        {"name": "NUM_PROCESSES", "value": "3"},
        {"name": "PROCESS_ID", "value": "2"},
    ]


def test_every_worker_decides_and_the_default_restart_policy_is_never():
    job = parse(jaxjob(Worker=replica("jax", 2)))
    assert job.success_jobs == ("j-worker-0", "j-worker-1")
    assert job.success_any is False
    node = next(n for n in job.graph.nodes if n.name == "j-worker-0" and n.kind == "Job")
    assert node.manifest["spec"]["template"]["spec"]["restartPolicy"] == "Never"
    port = node.manifest["spec"]["template"]["spec"]["containers"][0]["ports"]
    assert port == [{"name": "jaxjob-port", "containerPort": 6666}]


def test_a_master_is_no_jaxjob_replica_type(tmp_path, capsys):
    document = jaxjob(Master=replica("jax"), Worker=replica("jax", 2))
    assert refused(document, tmp_path, capsys) == [
        "spec.jaxReplicaSpecs.Master: 'Master' is not a JAXJob replica type: use Worker"
    ]
