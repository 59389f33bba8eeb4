"""TFJob and PyTorchJob details real specs rely on: the pod labels of the operator of the
spec's version, the service account token as written, elasticPolicy.metrics, unknown pod
fields kept out of manifests, and the message for a spec missing its replica type key.

Label keys and values are the operators' own, read at their release tags (tf-operator
v0.1.0-v1.2.1 and training-operator v1.3.0-v1.5.0 in kubeflow/training-operator,
pytorch-operator v0.3.0-v0.7.0 and kubeflow/common v0.3.x-v0.4.x): written out here, not
derived from trainjobs' tables.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from tests.conftest import schema_problems
from trainjobs.cli import main
from trainjobs.kinds.registry import JobDefinition, parse_job


def container(name: str, **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "img:1", **fields}


def tf_replica(replicas: int = 1, **pod: Any) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [container("tensorflow")], **pod}},
    }


def pt_replica(replicas: int = 1, **pod: Any) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [container("pytorch")], **pod}},
    }


def tfjob(version: str, **replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "TFJob",
        "metadata": {"name": "tj"},
        "spec": {"tfReplicaSpecs": replica_specs or {"Worker": tf_replica(2), "PS": tf_replica()}},
    }


def pytorchjob(version: str, **replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {
            "pytorchReplicaSpecs": replica_specs
            or {"Master": pt_replica(), "Worker": pt_replica(2)}
        },
    }


def parse(document: dict[str, Any]) -> JobDefinition:
    return parse_job(document, "job.yaml", "default")


def pod_template(job: JobDefinition, key: str) -> dict[str, Any]:
    return job.graph.get(key).manifest["spec"]["template"]


def trainjobs_labels(kind: str, job: str, replica_type: str, index: int) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": kind,
        "app.kubernetes.io/instance": job,
        "app.kubernetes.io/component": replica_type,
        "app.kubernetes.io/managed-by": "trainjobs",
        "training.kubeflow.org/job-name": job,
        "training.kubeflow.org/replica-type": replica_type,
        "training.kubeflow.org/replica-index": str(index),
    }


# -- 1. the operator's pod labels of the spec's version ------------------------------------------

TF_WORKER_1 = {
    # tf-operator v0.2-v0.3, pkg/controller.v2/tensorflow/controller.go and pod.go
    "v1alpha2": {
        "group_name": "kubeflow.org",
        "tf_job_name": "tj",
        "tf-replica-type": "worker",
        "tf-replica-index": "1",
    },
    # v0.4 (pkg/controller.v1beta1) wrote group_name/tf_job_name, v0.5 group-name/tf-job-name
    "v1beta1": {
        "group_name": "kubeflow.org",
        "group-name": "kubeflow.org",
        "tf_job_name": "tj",
        "tf-job-name": "tj",
        "tf-replica-type": "worker",
        "tf-replica-index": "1",
    },
    "v1beta2": {
        "group_name": "kubeflow.org",
        "group-name": "kubeflow.org",
        "tf_job_name": "tj",
        "tf-job-name": "tj",
        "tf-replica-type": "worker",
        "tf-replica-index": "1",
    },
    # tf-operator 0.5.3-1.0-rc (tf-*), 1.0.1-1.2 and training-operator 1.3-1.5 (kubeflow/common)
    "v1": {
        "group-name": "kubeflow.org",
        "tf-job-name": "tj",
        "job-name": "tj",
        "tf-replica-type": "worker",
        "replica-type": "worker",
        "tf-replica-index": "1",
        "replica-index": "1",
    },
}


@pytest.mark.parametrize("version", list(TF_WORKER_1))
def test_a_tfjob_pod_carries_the_labels_of_its_versions_operator(version):
    template = pod_template(parse(tfjob(version)), "Job/tj-worker-1")
    assert template["metadata"]["labels"] == {
        **trainjobs_labels("tfjob", "tj", "worker", 1),
        **TF_WORKER_1[version],
    }


def test_the_tfjob_master_role_pod_carries_each_operators_role_label():
    labels = pod_template(parse(tfjob("v1")), "Job/tj-worker-0")["metadata"]["labels"]
    roles = {k: v for k, v in labels.items() if k.endswith(("job-role", "job_role"))}
    assert roles == {
        "training.kubeflow.org/job-role": "master",
        "tf-job-role": "master",
        "job-role": "master",
    }
    beta = pod_template(parse(tfjob("v1beta2")), "Job/tj-worker-0")["metadata"]["labels"]
    assert {k: v for k, v in beta.items() if "role" in k} == {
        "training.kubeflow.org/job-role": "master",
        "tf_job_role": "master",
        "tf-job-role": "master",
    }


def test_a_v1alpha1_tfjob_pod_carries_the_first_operators_labels():
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "TFJob",
        "metadata": {"name": "tj"},
        "spec": {
            "replicaSpecs": [
                {"tfReplicaType": "MASTER", **tf_replica()},
                {"tfReplicaType": "WORKER", **tf_replica(2)},
            ]
        },
    }
    labels = pod_template(parse(document), "Job/tj-worker-1")["metadata"]["labels"]
    # tf-operator v0.1.0, pkg/trainer/replicas.go: Labels and LabelsByIndex (runtime_id, a
    # random id per run, is left out).
    assert labels == {
        **trainjobs_labels("tfjob", "tj", "worker", 1),
        "kubeflow.org": "",
        "job_type": "WORKER",
        "tf_job_name": "tj",
        "task_index": "1",
    }


PT_WORKER_1 = {
    # pytorch-operator v0.3-v0.4, pkg/controller.v2/pytorch/controller.go and pod.go
    "v1alpha2": {
        "group_name": "kubeflow.org",
        "pytorch_job_name": "pt",
        "pytorch-replica-type": "worker",
        "pytorch-replica-index": "1",
    },
    "v1beta1": {
        "group_name": "kubeflow.org",
        "group-name": "kubeflow.org",
        "pytorch_job_name": "pt",
        "pytorch-job-name": "pt",
        "pytorch-replica-type": "worker",
        "pytorch-replica-index": "1",
    },
    "v1beta2": {
        "group-name": "kubeflow.org",
        "pytorch-job-name": "pt",
        "pytorch-replica-type": "worker",
        "pytorch-replica-index": "1",
    },
    # pytorch-operator 0.5.1-0.7 and training-operator 1.3-1.5 (kubeflow/common)
    "v1": {
        "group-name": "kubeflow.org",
        "pytorch-job-name": "pt",
        "job-name": "pt",
        "pytorch-replica-type": "worker",
        "replica-type": "worker",
        "pytorch-replica-index": "1",
        "replica-index": "1",
    },
}


@pytest.mark.parametrize("version", list(PT_WORKER_1))
def test_a_pytorchjob_pod_carries_the_labels_of_its_versions_operator(version):
    template = pod_template(parse(pytorchjob(version)), "Job/pt-worker-1")
    assert template["metadata"]["labels"] == {
        **trainjobs_labels("pytorchjob", "pt", "worker", 1),
        **PT_WORKER_1[version],
    }


def test_the_pytorchjob_master_carries_each_operators_role_label():
    labels = pod_template(parse(pytorchjob("v1")), "Job/pt-master-0")["metadata"]["labels"]
    assert {k: v for k, v in labels.items() if "role" in k} == {
        "training.kubeflow.org/job-role": "master",
        "pytorch-job-role": "master",
        "job-role": "master",
    }


def test_a_v1alpha1_pytorchjob_worker_is_labelled_with_its_rank():
    document = {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pt"},
        "spec": {
            "replicaSpecs": [
                {"replicaType": "MASTER", **pt_replica()},
                {"replicaType": "WORKER", **pt_replica(2)},
            ]
        },
    }
    labels = pod_template(parse(document), "Job/pt-worker-1")["metadata"]["labels"]
    # pytorch-operator v0.3.0, pkg/trainer/replicas.go: SyncPods labels a worker with its rank.
    assert labels == {
        **trainjobs_labels("pytorchjob", "pt", "worker", 1),
        "kubeflow.org": "",
        "job_type": "WORKER",
        "pytorch_job_name": "pt",
        "task_index": "2",
    }


def matches(selector: dict[str, Any], labels: dict[str, str]) -> bool:
    """A LabelSelector's matchLabels and matchExpressions (In, NotIn, Exists), as Kubernetes
    reads them."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expression in selector.get("matchExpressions") or []:
        key, operator = expression["key"], expression["operator"]
        if operator == "In" and labels.get(key) not in expression["values"]:
            return False
        if operator == "NotIn" and labels.get(key) in expression["values"]:
            return False
        if operator == "Exists" and key not in labels:
            return False
    return True


ONE_PS_PER_NODE = {
    "podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [
            {
                "labelSelector": {
                    "matchExpressions": [
                        {"key": "tf-replica-type", "operator": "In", "values": ["ps"]}
                    ],
                    "matchLabels": {"tf-job-name": "tj"},
                },
                "topologyKey": "kubernetes.io/hostname",
            }
        ]
    }
}


def test_an_anti_affinity_rule_on_tf_replica_type_selects_the_parameter_servers_again():
    document = tfjob("v1", Worker=tf_replica(2), PS=tf_replica(2, affinity=ONE_PS_PER_NODE))
    job = parse(document)
    rule = ONE_PS_PER_NODE["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    selected = [
        key
        for key in ("Job/tj-ps-0", "Job/tj-ps-1", "Job/tj-worker-0", "Job/tj-worker-1")
        if matches(rule["labelSelector"], pod_template(job, key)["metadata"]["labels"])
    ]
    assert selected == ["Job/tj-ps-0", "Job/tj-ps-1"]
    assert pod_template(job, "Job/tj-ps-1")["spec"]["affinity"] == ONE_PS_PER_NODE


def test_a_queued_jobs_shared_templates_carry_no_per_index_label():
    document = tfjob("v1")
    document["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "team"}
    jobset = parse(document).graph.get("JobSet/tj").manifest
    workers = next(r for r in jobset["spec"]["replicatedJobs"] if r["name"] == "worker")
    labels = workers["template"]["spec"]["template"]["metadata"]["labels"]
    assert sorted(k for k in labels if "index" in k or "role" in k) == []
    assert (labels["tf-replica-type"], labels["replica-type"]) == ("worker", "worker")


# -- 2. automountServiceAccountToken as written --------------------------------------------------


@pytest.mark.parametrize("written", [None, True, False])
def test_the_service_account_token_is_left_as_the_template_writes_it(written):
    pod = {"serviceAccountName": "trainer"}
    if written is not None:
        pod["automountServiceAccountToken"] = written
    job = parse(tfjob("v1", Worker=tf_replica(1, **pod)))
    spec = pod_template(job, "Job/tj-worker-0")["spec"]
    assert spec.get("automountServiceAccountToken", "unset") == (
        "unset" if written is None else written
    )
    assert spec["serviceAccountName"] == "trainer"
    torch = parse(pytorchjob("v1", Master=pt_replica(1, **pod)))
    spec = pod_template(torch, "Job/pt-master-0")["spec"]
    assert spec.get("automountServiceAccountToken", "unset") == (
        "unset" if written is None else written
    )


# -- 3. elasticPolicy.metrics --------------------------------------------------------------------

METRICS = [
    {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
]


def test_elastic_metrics_are_not_silently_ignored():
    document = pytorchjob("v1", Worker=pt_replica(2))
    document["spec"]["elasticPolicy"] = {"minReplicas": 1, "maxReplicas": 4, "metrics": METRICS}
    job = parse(document)
    assert [str(w) for w in job.warnings if w.path.startswith("spec.elasticPolicy")] == [
        "spec.elasticPolicy.metrics: not used: training-operator makes a "
        "HorizontalPodAutoscaler of them that scales the PyTorchJob's Workers through its "
        "scale subresource (1 to 4); here there is no PyTorchJob object and each Worker is a "
        "Job of its own, so nothing has a scale subresource an autoscaler could resize: the "
        "job runs its 2 Workers throughout (remove metrics, or set Worker.replicas to the "
        "size you want)"
    ]
    assert not [n.key for n in job.graph.nodes if n.key.startswith("HorizontalPodAutoscaler")]


def test_elastic_metrics_warning_reaches_validate(tmp_path, capsys):
    document = pytorchjob("v1", Worker=pt_replica(2))
    # minReplicas defaults to maxReplicas, as training-operator's setElasticPolicy does.
    document["spec"]["elasticPolicy"] = {"maxReplicas": 4, "metrics": METRICS}
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document))
    assert main(["validate", str(spec)]) == 0
    lines = capsys.readouterr().err.splitlines()
    assert [line for line in lines if "elasticPolicy.metrics" in line] == [
        f"warning: {spec}: spec.elasticPolicy.metrics: not used: training-operator makes a "
        "HorizontalPodAutoscaler of them that scales the PyTorchJob's Workers through its "
        "scale subresource (4 to 4); here there is no PyTorchJob object and each Worker is a "
        "Job of its own, so nothing has a scale subresource an autoscaler could resize: the "
        "job runs its 2 Workers throughout (remove metrics, or set Worker.replicas to the "
        "size you want)"
    ]


# -- 4. unknown pod fields never reach a manifest ------------------------------------------------


@pytest.mark.parametrize("kind", ["TFJob", "PyTorchJob"])
def test_an_unknown_pod_field_is_dropped_from_the_manifest_with_the_warning(kind):
    name = "tensorflow" if kind == "TFJob" else "pytorch"
    replica = {
        "replicas": 1,
        "template": {
            "metadata": {"labels": {"team": "a"}, "bogusMeta": 1},
            "spec": {
                "containers": [container(name, bogus=1, resources={"limits": {"cpu": "1"}})],
                "bogusPod": {"x": 1},
            },
        },
    }
    document = (
        tfjob("v1", Worker=copy.deepcopy(replica))
        if kind == "TFJob"
        else pytorchjob("v1", Master=copy.deepcopy(replica))
    )
    job = parse(document)
    key = "Job/tj-worker-0" if kind == "TFJob" else "Job/pt-master-0"
    template = pod_template(job, key)
    assert "bogusMeta" not in template["metadata"]
    assert "bogusPod" not in template["spec"]
    assert "bogus" not in template["spec"]["containers"][0]
    assert template["metadata"]["labels"]["team"] == "a"
    assert template["spec"]["containers"][0]["resources"] == {"limits": {"cpu": "1"}}
    assert schema_problems(job.graph.get(key).manifest) == []
    source = "spec.tfReplicaSpecs.Worker" if kind == "TFJob" else "spec.pytorchReplicaSpecs.Master"
    assert sorted(w.path for w in job.warnings) == [
        f"{source}.template.metadata.bogusMeta",
        f"{source}.template.spec.bogusPod",
        f"{source}.template.spec.containers[0].bogus",
    ]


# -- 5. a spec missing its replica type key ------------------------------------------------------


def validate_errors(document: dict[str, Any], tmp_path: Any, capsys: Any) -> list[str]:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document, sort_keys=False))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.splitlines()[1:]


def test_a_tfjob_missing_its_replica_type_key_is_told_which_key(tmp_path, capsys):
    document = tfjob("v1")
    document["spec"]["tfReplicaSpecs"] = {
        "replicas": 2,
        "restartPolicy": "OnFailure",
        "template": tf_replica()["template"],
    }
    assert validate_errors(document, tmp_path, capsys) == [
        "  spec.tfReplicaSpecs: 'replicas', 'restartPolicy' and 'template' are a replica "
        "spec's fields, not replica types: put them under a replica type such as Worker:"
    ]


def test_a_pytorchjob_missing_its_replica_type_key_is_told_which_key(tmp_path, capsys):
    document = pytorchjob("v1")
    document["spec"]["pytorchReplicaSpecs"] = {"template": pt_replica()["template"]}
    assert validate_errors(document, tmp_path, capsys) == [
        "  spec.pytorchReplicaSpecs: 'template' is a replica spec's field, not a replica "
        "type: put it under a replica type such as Master: or Worker:"
    ]
