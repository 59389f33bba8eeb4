"""Kueue: a TFJob or PyTorchJob labelled with a queue is one JobSet, admitted whole or not at
all, whose child Jobs are the per-index Jobs of an unqueued render, pod for pod."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from tests.kinds.test_corpus import resolved
from trainjobs.cli import main
from trainjobs.core.jobset import QUEUE_LABEL, UnsharedEnv, child_jobs, shared_env
from trainjobs.kinds.registry import JobDefinition, parse_job

CORPUS = REPO / "tests" / "corpus"
KUEUE_PYTORCH = CORPUS / "pytorchjob-v1-kueue-sample-pytorchjob.yaml"
KUEUE_TF = CORPUS / "tfjob-v1-kueue-sample-tfjob.yaml"
KUEUE_ELASTIC = (
    CORPUS / "pytorchjob-v1-aws-awsome-distributed-training-hyperpod-task-governance-team-a.yaml"
)


def load(path) -> dict[str, Any]:
    return yaml.safe_load(path.read_text())


def parse(document: dict[str, Any]) -> JobDefinition:
    return parse_job(document, "job.yaml", "default")


def with_workers(document: dict[str, Any], replicas: int) -> dict[str, Any]:
    document = copy.deepcopy(document)
    specs = document["spec"].get("pytorchReplicaSpecs") or document["spec"]["tfReplicaSpecs"]
    specs["Worker"]["replicas"] = replicas
    return document


def unqueued(document: dict[str, Any]) -> dict[str, Any]:
    document = copy.deepcopy(document)
    del document["metadata"]["labels"][QUEUE_LABEL]
    return document


def the_jobset(job: JobDefinition) -> dict[str, Any]:
    (node,) = [node for node in job.graph.nodes if node.kind == "JobSet"]
    return node.manifest


def test_a_queued_pytorchjob_is_one_jobset_and_only_the_jobset_names_the_queue():
    job = parse(with_workers(load(KUEUE_PYTORCH), 3))

    assert [node.key for node in job.graph.nodes] == [
        "Service/pytorch-simple-master-0",
        "Service/pytorch-simple-worker-0",
        "Service/pytorch-simple-worker-1",
        "Service/pytorch-simple-worker-2",
        "JobSet/pytorch-simple",
    ]
    labelled = [
        node.key for node in job.graph.nodes if QUEUE_LABEL in node.manifest["metadata"]["labels"]
    ]
    assert labelled == ["JobSet/pytorch-simple"]
    manifest = the_jobset(job)
    assert manifest["metadata"]["labels"][QUEUE_LABEL] == "user-queue"
    assert manifest["spec"]["successPolicy"] == {
        "operator": "All",
        "targetReplicatedJobs": ["master"],
    }
    assert [(r["name"], r["replicas"]) for r in manifest["spec"]["replicatedJobs"]] == [
        ("master", 1),
        ("worker", 3),
    ]
    pod_labels = [
        r["template"]["spec"]["template"]["metadata"]["labels"]
        for r in manifest["spec"]["replicatedJobs"]
    ]
    assert all(QUEUE_LABEL not in labels for labels in pod_labels)


def test_the_jobset_controllers_jobs_are_the_unqueued_jobs_pod_for_pod():
    document = with_workers(load(KUEUE_PYTORCH), 3)
    queued = parse(document)
    plain = parse(unqueued(document))

    children = {job["metadata"]["name"]: job for job in child_jobs(the_jobset(queued))}

    assert tuple(children) == plain.success_jobs + tuple(w.name for w in plain.workers)
    for name, child in children.items():
        pod = resolved(child["spec"]["template"])
        expected = plain.graph.get(f"Job/{name}").manifest["spec"]["template"]["spec"]
        (container,) = pod["containers"]
        # The index variable (workers only: the master's env is the same at its one index);
        # the rest is the operator's env, value for value.
        index_variables = [
            i["name"] for i in container["env"] if i["name"].startswith("TRAINJOBS_")
        ]
        assert index_variables == (
            [] if name.endswith("master-0") else ["TRAINJOBS_JOB_GLOBAL_INDEX"]
        )
        env = [item for item in container["env"] if not item["name"].startswith("TRAINJOBS_")]
        assert env == expected["containers"][0]["env"]
        assert {**container, "env": None} == {**expected["containers"][0], "env": None}


def test_each_workers_rank_comes_from_the_jobset_global_index():
    manifest = the_jobset(parse(with_workers(load(KUEUE_PYTORCH), 3)))
    worker = manifest["spec"]["replicatedJobs"][1]["template"]["spec"]["template"]["spec"]
    env = {item["name"]: item for item in worker["containers"][0]["env"]}

    assert env["TRAINJOBS_JOB_GLOBAL_INDEX"] == {
        "name": "TRAINJOBS_JOB_GLOBAL_INDEX",
        "valueFrom": {
            "fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-global-index']"}
        },
    }
    assert env["RANK"] == {"name": "RANK", "value": "$(TRAINJOBS_JOB_GLOBAL_INDEX)"}
    assert env["PET_NODE_RANK"] == {
        "name": "PET_NODE_RANK",
        "value": "$(TRAINJOBS_JOB_GLOBAL_INDEX)",
    }
    assert env["WORLD_SIZE"] == {"name": "WORLD_SIZE", "value": "4"}


def test_tf_config_takes_the_task_index_from_the_job_index():
    manifest = the_jobset(parse(load(KUEUE_TF)))
    worker = next(r for r in manifest["spec"]["replicatedJobs"] if r["name"] == "worker")
    (container,) = worker["template"]["spec"]["template"]["spec"]["containers"]

    assert container["env"] == [
        {
            "name": "TRAINJOBS_JOB_INDEX",
            "valueFrom": {
                "fieldRef": {"fieldPath": "metadata.annotations['jobset.sigs.k8s.io/job-index']"}
            },
        },
        {
            "name": "TF_CONFIG",
            "value": '{"cluster":{"ps":["tensorflow-dist-mnist-ps-0.default.svc:2222"],'
            '"worker":["tensorflow-dist-mnist-worker-0.default.svc:2222",'
            '"tensorflow-dist-mnist-worker-1.default.svc:2222"]},'
            '"task":{"type":"worker","index":$(TRAINJOBS_JOB_INDEX)},"environment":"cloud"}',
        },
    ]


def test_services_select_each_pod_by_the_jobset_controllers_index_label():
    job = parse(with_workers(load(KUEUE_PYTORCH), 3))

    assert job.graph.get("Service/pytorch-simple-worker-2").manifest["spec"]["selector"] == {
        "training.kubeflow.org/job-name": "pytorch-simple",
        "training.kubeflow.org/replica-type": "worker",
        "jobset.sigs.k8s.io/job-index": "2",
    }
    pod = next(
        job for job in child_jobs(the_jobset(job)) if job["metadata"]["name"].endswith("worker-2")
    )["spec"]["template"]
    selector = job.graph.get("Service/pytorch-simple-worker-2").manifest["spec"]["selector"]
    assert selector.items() <= pod["metadata"]["labels"].items()


def test_a_queued_elastic_job_ends_when_any_worker_ends_as_torchrun_does():
    job = parse(load(KUEUE_ELASTIC))
    manifest = the_jobset(job)

    assert manifest["spec"]["successPolicy"] == {
        "operator": "Any",
        "targetReplicatedJobs": ["worker"],
    }
    assert manifest["metadata"]["labels"][QUEUE_LABEL] == "hyperpod-ns-team-a-localqueue"
    assert manifest["metadata"]["labels"]["kueue.x-k8s.io/priority-class"] == ("training-priority")
    assert (job.success_any, job.workers) == (True, [])


def test_a_tfjob_decided_by_worker_0_waits_for_every_worker_when_queued_and_says_so():
    job = parse(load(KUEUE_TF))  # no Chief: Kubeflow's v1 TFJob succeeds with worker 0

    assert the_jobset(job)["spec"]["successPolicy"] == {
        "operator": "All",
        "targetReplicatedJobs": ["worker"],
    }
    assert job.success_jobs == ("tensorflow-dist-mnist-worker-0", "tensorflow-dist-mnist-worker-1")
    assert [str(w) for w in job.warnings] == [
        "metadata.labels.kueue.x-k8s.io/queue-name: queued as a JobSet, the job succeeds when "
        "every worker succeeds (a JobSet's success policy names replica types, not indexes; "
        "Kubeflow waits for worker 0 only)"
    ]


def test_an_always_replica_is_a_job_restarted_on_failure_with_a_warning():
    document = load(KUEUE_TF)
    document["spec"]["tfReplicaSpecs"]["PS"]["restartPolicy"] = "Always"

    job = parse(document)

    ps = next(r for r in the_jobset(job)["spec"]["replicatedJobs"] if r["name"] == "ps")
    assert ps["template"]["spec"]["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert [str(w) for w in job.warnings][1:] == [
        "spec.tfReplicaSpecs.PS.restartPolicy: queued as a JobSet, an Always replica is a Job "
        "whose container restarts when it fails (OnFailure): a JobSet runs Jobs only"
    ]


def test_suspend_and_ttl_move_to_the_jobset():
    document = load(KUEUE_PYTORCH)
    document["spec"]["runPolicy"] = {"suspend": True, "ttlSecondsAfterFinished": 600}

    manifest = the_jobset(parse(document))

    assert (manifest["spec"]["suspend"], manifest["spec"]["ttlSecondsAfterFinished"]) == (True, 600)
    for replicated in manifest["spec"]["replicatedJobs"]:
        assert "suspend" not in replicated["template"]["spec"]
        assert "ttlSecondsAfterFinished" not in replicated["template"]["spec"]


def test_the_jobset_passes_its_crd_schema_and_its_jobs_the_strict_kubernetes_schema():
    manifest = the_jobset(parse(with_workers(load(KUEUE_PYTORCH), 3)))
    assert schema_problems(manifest) == []

    broken = copy.deepcopy(manifest)
    broken["spec"]["replicatedJobs"][1]["replicas"] = "three"
    assert schema_problems(broken) == ["JobSet/pytorch-simple: 'three' is not of type 'integer'"]


def test_a_dollar_in_a_per_index_value_is_escaped_so_expansion_restores_it():
    per_index = [[{"name": "X", "value": "$a-0"}], [{"name": "X", "value": "$a-1"}]]

    assert shared_env(per_index, offset=0)[1] == {
        "name": "X",
        "value": "$$a-$(TRAINJOBS_JOB_INDEX)",
    }


def test_a_value_that_is_no_function_of_the_index_cannot_be_shared():
    per_index = [[{"name": "X", "value": "a"}], [{"name": "X", "value": "b"}]]

    with pytest.raises(UnsharedEnv, match="of X is not a function of the JobSet's index"):
        shared_env(per_index, offset=0)


def test_a_queued_chainerjob_is_refused_naming_the_label(tmp_path, capsys):
    document = load(REPO / "jobs" / "chainermn-mnist.yaml")
    document["metadata"].setdefault("labels", {})[QUEUE_LABEL] = "user-queue"
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))

    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[1:] == [
        "  metadata.labels.kueue.x-k8s.io/queue-name: a ChainerJob cannot be queued by Kueue as "
        "one unit (its workers are a StatefulSet, which Kueue would admit apart from the "
        "master's Job); remove the label (TFJobs and PyTorchJobs can be queued)"
    ]


def test_a_queued_tfjob_whose_per_worker_env_the_jobset_cannot_share_is_refused(tmp_path, capsys):
    # enableDynamicWorker: each worker's TF_CONFIG names its own index twice (the cluster key
    # and its address), which one template per replica type cannot express.
    document = with_workers(load(KUEUE_TF), 2)
    document["spec"]["enableDynamicWorker"] = True
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(document))

    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines()[1:] == [
        "  metadata.labels.kueue.x-k8s.io/queue-name: queued, the job runs as one JobSet whose "
        "'worker' pods share one template, but the env its operator sets, TF_CONFIG, differs "
        "between them in more than their index; remove the label to run the job unqueued"
    ]
    path.with_name("unqueued.yaml").write_text(yaml.safe_dump(unqueued(document)))
    capsys.readouterr()
    assert main(["validate", str(path.with_name("unqueued.yaml"))]) == 0


def test_env_some_indexes_lack_cannot_be_shared_and_names_the_variable():
    per_index = [
        [{"name": "A", "value": "1"}, {"name": "B", "value": "x"}],
        [{"name": "A", "value": "1"}],
    ]

    with pytest.raises(UnsharedEnv) as raised:
        shared_env(per_index, offset=0)

    assert raised.value.name == "B"


def test_a_float_quantity_is_written_as_text_which_the_jobsets_schema_takes():
    document = load(KUEUE_PYTORCH)
    for replica in document["spec"]["pytorchReplicaSpecs"].values():
        container = replica["template"]["spec"]["containers"][0]
        container["resources"] = {"requests": {"cpu": 0.5, "memory": 1}, "limits": {"cpu": 1.5}}

    manifest = the_jobset(parse(document))

    for replicated in manifest["spec"]["replicatedJobs"]:
        container = replicated["template"]["spec"]["template"]["spec"]["containers"][0]
        assert container["resources"] == {
            "requests": {"cpu": "0.5", "memory": 1},
            "limits": {"cpu": "1.5"},
        }
    assert schema_problems(manifest) == []
