"""TFJob: every released version read as its operator ran it: the objects, TF_CONFIG on each
pod (exactly as that version wrote it), restart and success policies, and what is refused."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core.graph import GraphOptions
from trainjobs.kinds.registry import JobDefinition, Workload, parse_job

CORPUS = REPO / "tests" / "corpus"


def container(name: str = "tensorflow", **fields: Any) -> dict[str, Any]:
    return {"name": name, "image": "tf:1", **fields}


def replica(replicas: int = 1, **fields: Any) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "template": {"spec": {"containers": [container(command=["python", "train.py"])]}},
        **fields,
    }


def tfjob(version: str = "v1", **replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": f"kubeflow.org/{version}",
        "kind": "TFJob",
        "metadata": {"name": "tj"},
        "spec": {
            "tfReplicaSpecs": replica_specs
            or {"Chief": replica(), "Worker": replica(2), "PS": replica()}
        },
    }


def parse(document: dict[str, Any], options: GraphOptions | None = None) -> JobDefinition:
    return parse_job(document, "job.yaml", "default", options)


def pod(job: JobDefinition, name: str) -> dict[str, Any]:
    manifest = job.graph.get(name).manifest
    return manifest["spec"]["template"]["spec"]


def env_of(job: JobDefinition, name: str, index: int = 0) -> dict[str, str]:
    return {item["name"]: item["value"] for item in pod(job, name)["containers"][index]["env"]}


def tf_config(job: JobDefinition, name: str, index: int = 0) -> dict[str, Any]:
    return json.loads(env_of(job, name, index)["TF_CONFIG"])


V1_CLUSTER = {
    "chief": ["tj-chief-0.default.svc:2222"],
    "ps": ["tj-ps-0.default.svc:2222"],
    "worker": ["tj-worker-0.default.svc:2222", "tj-worker-1.default.svc:2222"],
}


# -- objects ------------------------------------------------------------------------------------


def test_each_replica_is_a_headless_service_and_a_job_and_the_chief_comes_last():
    job = parse(tfjob())
    assert [(node.key, node.depends_on) for node in job.graph.nodes] == [
        ("Service/tj-chief-0", ()),
        ("Service/tj-worker-0", ()),
        ("Job/tj-worker-0", ("Service/tj-worker-0",)),
        ("Service/tj-worker-1", ()),
        ("Job/tj-worker-1", ("Service/tj-worker-1",)),
        ("Service/tj-ps-0", ()),
        ("Job/tj-ps-0", ("Service/tj-ps-0",)),
        (
            "Job/tj-chief-0",
            ("Service/tj-chief-0", "Job/tj-worker-0", "Job/tj-worker-1", "Job/tj-ps-0"),
        ),
    ]
    assert (job.success_jobs, job.workers) == (
        ("tj-chief-0",),
        [
            Workload("Job", "tj-worker-0", 1),
            Workload("Job", "tj-worker-1", 1),
            Workload("Job", "tj-ps-0", 1),
        ],
    )


def test_a_replica_service_selects_its_one_pod_by_the_kubeflow_labels():
    service = parse(tfjob()).graph.get("Service/tj-worker-1").manifest["spec"]
    assert service == {
        "clusterIP": "None",
        "publishNotReadyAddresses": True,
        "selector": {
            "training.kubeflow.org/job-name": "tj",
            "training.kubeflow.org/replica-type": "worker",
            "training.kubeflow.org/replica-index": "1",
        },
        "ports": [{"name": "tfjob-port", "port": 2222}],
    }


def test_pods_carry_the_kubeflow_labels_and_the_chief_the_master_role():
    job = parse(tfjob())
    chief = job.graph.get("Job/tj-chief-0").manifest["spec"]["template"]["metadata"]["labels"]
    worker = job.graph.get("Job/tj-worker-0").manifest["spec"]["template"]["metadata"]["labels"]
    assert {k: v for k, v in chief.items() if k.startswith("training.kubeflow.org/")} == {
        "training.kubeflow.org/job-name": "tj",
        "training.kubeflow.org/replica-type": "chief",
        "training.kubeflow.org/replica-index": "0",
        "training.kubeflow.org/job-role": "master",
    }
    assert "training.kubeflow.org/job-role" not in worker


def test_command_args_and_image_are_never_rewritten():
    job = parse(
        tfjob(
            Worker=replica(
                2, template={"spec": {"containers": [container(args=["--steps", "5"])]}}
            ),
        )
    )
    main = pod(job, "Job/tj-worker-1")["containers"][0]
    assert "command" not in main
    assert (main["args"], main["image"]) == (["--steps", "5"], "tf:1")


def test_the_api_token_is_left_as_each_template_writes_it():
    job = parse(
        tfjob(
            Chief=replica(
                template={
                    "spec": {"automountServiceAccountToken": True, "containers": [container()]}
                }
            ),
            Worker=replica(),
        )
    )
    # Kubeflow's operator leaves the field alone: unset, Kubernetes mounts the token.
    assert pod(job, "Job/tj-chief-0")["automountServiceAccountToken"] is True
    assert "automountServiceAccountToken" not in pod(job, "Job/tj-worker-0")


# -- TF_CONFIG by version -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "task"),
    [
        ("Job/tj-chief-0", {"type": "chief", "index": 0}),
        ("Job/tj-worker-0", {"type": "worker", "index": 0}),
        ("Job/tj-worker-1", {"type": "worker", "index": 1}),
        ("Job/tj-ps-0", {"type": "ps", "index": 0}),
    ],
)
def test_v1_every_replica_gets_the_cluster_and_its_own_task(name, task):
    assert tf_config(parse(tfjob()), name) == {
        "cluster": V1_CLUSTER,
        "task": task,
        "environment": "cloud",
    }


def test_v1_tf_config_is_go_json_compact_with_sorted_cluster_keys():
    value = env_of(parse(tfjob()), "Job/tj-ps-0")["TF_CONFIG"]
    assert value == (
        '{"cluster":{"chief":["tj-chief-0.default.svc:2222"],"ps":["tj-ps-0.default.svc:2222"],'
        '"worker":["tj-worker-0.default.svc:2222","tj-worker-1.default.svc:2222"]},'
        '"task":{"type":"ps","index":0},"environment":"cloud"}'
    )


def test_v1_tf_config_goes_on_the_first_tensorflow_container_only():
    sidecar = container("sidecar")
    document = tfjob(
        Chief=replica(template={"spec": {"containers": [sidecar, container()]}}), Worker=replica()
    )
    containers = pod(parse(document), "Job/tj-chief-0")["containers"]
    assert "env" not in containers[0]
    assert [item["name"] for item in containers[1]["env"]] == ["TF_CONFIG"]


def test_v1_single_replica_job_gets_no_tf_config():
    job = parse(tfjob(Worker=replica()))
    assert "env" not in pod(job, "Job/tj-worker-0")["containers"][0]


def test_v1_lists_evaluators_in_the_cluster():
    job = parse(tfjob(Chief=replica(), Worker=replica(), Evaluator=replica()))
    assert tf_config(job, "Job/tj-evaluator-0")["cluster"] == {
        "chief": ["tj-chief-0.default.svc:2222"],
        "evaluator": ["tj-evaluator-0.default.svc:2222"],
        "worker": ["tj-worker-0.default.svc:2222"],
    }


def test_v1beta1_leaves_evaluators_out_of_the_cluster_but_gives_them_a_task():
    job = parse(tfjob("v1beta1", Chief=replica(), Worker=replica(), Evaluator=replica()))
    assert tf_config(job, "Job/tj-evaluator-0") == {
        "cluster": {
            "chief": ["tj-chief-0.default.svc:2222"],
            "worker": ["tj-worker-0.default.svc:2222"],
        },
        "task": {"type": "evaluator", "index": 0},
        "environment": "cloud",
    }


def test_v1beta2_puts_tf_config_on_every_container_even_for_one_replica():
    document = tfjob(
        "v1beta2",
        Worker=replica(template={"spec": {"containers": [container(), container("sidecar")]}}),
    )
    containers = pod(parse(document), "Job/tj-worker-0")["containers"]
    expected = {
        "cluster": {"worker": ["tj-worker-0.default.svc:2222"]},
        "task": {"type": "worker", "index": 0},
        "environment": "cloud",
    }
    assert [json.loads(c["env"][0]["value"]) for c in containers] == [expected, expected]


def test_v1alpha2_names_hosts_by_their_service_in_the_pods_namespace():
    job = parse(tfjob("v1alpha2", Worker=replica(2), PS=replica()))
    assert tf_config(job, "Job/tj-worker-1")["cluster"] == {
        "ps": ["tj-ps-0:2222"],
        "worker": ["tj-worker-0:2222", "tj-worker-1:2222"],
    }


def test_a_custom_tfjob_port_is_the_address_and_the_service_port():
    ports = [{"name": "tfjob-port", "containerPort": 3333}]
    document = tfjob(
        Chief=replica(), Worker=replica(template={"spec": {"containers": [container(ports=ports)]}})
    )
    job = parse(document)
    assert tf_config(job, "Job/tj-chief-0")["cluster"]["worker"] == ["tj-worker-0.default.svc:3333"]
    assert job.graph.get("Service/tj-worker-0").manifest["spec"]["ports"] == [
        {"name": "tfjob-port", "port": 3333}
    ]


def test_enable_dynamic_worker_gives_each_worker_a_sparse_cluster():
    document = tfjob(Worker=replica(2), PS=replica())
    document["spec"]["enableDynamicWorker"] = True
    job = parse(document)
    assert env_of(job, "Job/tj-worker-1")["TF_CONFIG"] == (
        '{"cluster":{"worker":{"1":"tj-worker-1.default.svc:2222"},'
        '"ps":["tj-ps-0.default.svc:2222"]},"task":{"type":"worker","index":1}}'
    )
    assert env_of(job, "Job/tj-ps-0")["TF_CONFIG"] == (
        '{"cluster":{"worker":{},"ps":["tj-ps-0.default.svc:2222"]},"task":{"type":"ps","index":0}}'
    )


def test_the_operators_tf_config_replaces_one_the_spec_sets_with_a_warning():
    env = [{"name": "TF_CONFIG", "value": "{}"}, {"name": "DATA", "value": "/data"}]
    document = tfjob(
        Chief=replica(), Worker=replica(template={"spec": {"containers": [container(env=env)]}})
    )
    job = parse(document)
    assert [item["name"] for item in pod(job, "Job/tj-worker-0")["containers"][0]["env"]] == [
        "DATA",
        "TF_CONFIG",
    ]
    assert [str(w) for w in job.warnings] == [
        "spec.tfReplicaSpecs.Worker.template.spec.containers[0].env[0]: TF_CONFIG is set by "
        "Kubeflow's operator, whose value replaces this one"
    ]


# -- restart policies ---------------------------------------------------------------------------


def workload(document: dict[str, Any], name: str) -> dict[str, Any]:
    return parse(document).graph.get(name).manifest


def test_restart_policy_never_is_the_default_and_one_failure_fails_the_replica():
    spec = workload(tfjob(), "Job/tj-worker-0")["spec"]
    assert (spec["template"]["spec"]["restartPolicy"], spec["backoffLimit"]) == ("Never", 0)
    assert "podFailurePolicy" not in spec


def test_restart_policy_never_with_a_backoff_limit_allows_that_many_new_pods():
    document = tfjob()
    document["spec"]["runPolicy"] = {"backoffLimit": 3}
    spec = workload(document, "Job/tj-worker-0")["spec"]
    assert (spec["template"]["spec"]["restartPolicy"], spec["backoffLimit"]) == ("Never", 3)


def test_restart_policy_on_failure_restarts_in_place_up_to_kubernetes_default():
    spec = workload(tfjob(Worker=replica(restartPolicy="OnFailure")), "Job/tj-worker-0")["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "OnFailure"
    assert "backoffLimit" not in spec


def test_restart_policy_exit_code_fails_at_once_on_1_to_127_and_retries_the_rest():
    spec = workload(tfjob(Worker=replica(restartPolicy="ExitCode")), "Job/tj-worker-0")["spec"]
    assert spec["template"]["spec"]["restartPolicy"] == "Never"
    assert spec["podFailurePolicy"] == {
        "rules": [
            {
                "action": "FailJob",
                "onExitCodes": {
                    "containerName": "tensorflow",
                    "operator": "In",
                    "values": list(range(1, 128)),
                },
            },
            {
                "action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}],
            },
        ]
    }


def test_restart_policy_always_is_a_one_pod_statefulset_of_the_same_name():
    manifest = workload(
        tfjob(Chief=replica(), PS=replica(restartPolicy="Always")), "StatefulSet/tj-ps-0"
    )
    assert manifest["spec"]["serviceName"] == "tj-ps-0"
    assert manifest["spec"]["replicas"] == 1
    assert manifest["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert manifest["spec"]["selector"] == {
        "matchLabels": {
            "training.kubeflow.org/job-name": "tj",
            "training.kubeflow.org/replica-type": "ps",
            "training.kubeflow.org/replica-index": "0",
        }
    }


def test_a_chief_that_always_restarts_runs_as_on_failure_so_that_the_job_can_end():
    job = parse(tfjob(Chief=replica(restartPolicy="Always"), Worker=replica()))
    assert pod(job, "Job/tj-chief-0")["restartPolicy"] == "OnFailure"
    assert [str(w) for w in job.warnings] == [
        "spec.tfReplicaSpecs.Chief.restartPolicy: 'Always' restarts the chief even after it "
        "succeeds, so the job could never end: it runs as 'OnFailure', which restarts it only "
        "when it fails"
    ]


def test_the_templates_own_restart_policy_is_replaced_with_a_warning():
    document = tfjob(Chief=replica(), Worker=replica())
    document["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["restartPolicy"] = "OnFailure"
    job = parse(document)
    assert pod(job, "Job/tj-worker-0")["restartPolicy"] == "Never"
    assert [str(w) for w in job.warnings] == [
        "spec.tfReplicaSpecs.Worker.template.spec.restartPolicy: 'OnFailure' is replaced by the "
        "replica's restartPolicy 'Never', as Kubeflow's operator replaces it"
    ]


# -- success and run policies -------------------------------------------------------------------


def test_without_a_chief_worker_0_decides():
    job = parse(tfjob(Worker=replica(3), PS=replica()))
    assert job.success_jobs == ("tj-worker-0",)


def test_success_policy_all_workers_waits_for_every_worker():
    document = tfjob(Worker=replica(3))
    document["spec"]["successPolicy"] = "AllWorkers"
    assert parse(document).success_jobs == ("tj-worker-0", "tj-worker-1", "tj-worker-2")


def test_clean_pod_policy_defaults_to_none_in_v1_and_running_before():
    assert parse(tfjob()).clean_pod_policy == "None"
    assert parse(tfjob("v1beta2")).clean_pod_policy == "Running"


def test_early_v1_run_policies_at_the_top_of_spec_are_honoured():
    document = tfjob()
    document["spec"].update(cleanPodPolicy="All", activeDeadlineSeconds=60)
    job = parse(document)
    assert job.clean_pod_policy == "All"
    assert job.graph.get("Job/tj-chief-0").manifest["spec"]["activeDeadlineSeconds"] == 60


def test_ttl_and_suspend_go_on_every_job():
    document = tfjob()
    document["spec"]["runPolicy"] = {"ttlSecondsAfterFinished": 600, "suspend": True}
    spec = parse(document).graph.get("Job/tj-worker-1").manifest["spec"]
    assert (spec["ttlSecondsAfterFinished"], spec["suspend"]) == (600, True)


def test_replica_type_keys_match_without_regard_to_case_before_v1():
    job = parse(tfjob("v1beta1", MASTER=replica(), worker=replica(), Ps=replica()))
    assert [n.key for n in job.graph.nodes if n.kind == "Job"] == [
        "Job/tj-worker-0",
        "Job/tj-ps-0",
        "Job/tj-master-0",
    ]


def test_an_unknown_replica_type_runs_as_written_with_a_warning():
    job = parse(tfjob(Chief=replica(), Launcher=replica()))
    assert "Job/tj-launcher-0" in [n.key for n in job.graph.nodes]
    assert [str(w) for w in job.warnings] == [
        "spec.tfReplicaSpecs.Launcher: 'Launcher' is not a TFJob replica type (Chief, Master, PS, "
        "Worker, Evaluator); Kubeflow runs it as written, so it runs here too"
    ]


def test_an_unknown_spec_field_is_a_warning_that_names_the_version():
    document = tfjob()
    document["spec"]["schedulerName"] = "volcano"
    assert [str(w) for w in parse(document).warnings] == [
        "spec.schedulerName: not a field of TFJob kubeflow.org/v1: Kubeflow's API server keeps "
        "or drops it and its operator ignores it, so it has no effect here"
    ]


# -- v1alpha1 (the design doc) ------------------------------------------------------------------


def seed() -> dict[str, Any]:
    return yaml.safe_load((CORPUS / "seed-tfjob.yaml").read_text())


def test_the_design_docs_example_renders_with_a_default_parameter_server():
    job = parse(seed())
    assert [n.key for n in job.graph.nodes] == [
        "ConfigMap/example-job-assets",
        "Service/example-job-master-0",
        "Service/example-job-worker-0",
        "Job/example-job-worker-0",
        "Service/example-job-worker-1",
        "Job/example-job-worker-1",
        "Service/example-job-ps-0",
        "Job/example-job-ps-0",
        "Job/example-job-master-0",
    ]
    ps = pod(job, "Job/example-job-ps-0")
    assert ps["containers"][0]["image"] == "tensorflow/tensorflow:1.15.5-py3"
    assert ps["containers"][0]["command"] == ["python", "/etc/trainjobs/tf_server.py"]
    assert ps["volumes"] == [
        {
            "name": "trainjobs-assets",
            "configMap": {"name": "example-job-assets", "defaultMode": 0o444},
        }
    ]
    assets = job.graph.get("ConfigMap/example-job-assets").manifest["data"]
    assert list(assets) == ["tf_server.py"]


def test_v1alpha1_tf_config_names_each_service_with_its_tf_port():
    assert json.loads(env_of(parse(seed()), "Job/example-job-worker-1")["TF_CONFIG"]) == {
        "cluster": {
            "master": ["example-job-master-0:2222"],
            "ps": ["example-job-ps-0:2222"],
            "worker": ["example-job-worker-0:2222", "example-job-worker-1:2222"],
        },
        "task": {"type": "worker", "index": 1},
        "environment": "cloud",
    }


def test_v1alpha1_keeps_args_and_the_images_entrypoint():
    main = pod(parse(seed()), "Job/example-job-master-0")["containers"][0]
    assert "command" not in main
    assert main["args"] == ["--log_dir=gs://my-job/log-dir"]


def test_the_default_parameter_server_runs_the_jobs_tf_image_first_then_the_stacks():
    document = seed()
    assert (
        pod(
            parse(document, GraphOptions(tensorflow_server_image="mirror/tf:2")),
            "Job/example-job-ps-0",
        )["containers"][0]["image"]
        == "mirror/tf:2"
    )
    document["spec"]["tfImage"] = "tensorflow/tensorflow:1.8.0"
    assert (
        pod(
            parse(document, GraphOptions(tensorflow_server_image="mirror/tf:2")),
            "Job/example-job-ps-0",
        )["containers"][0]["image"]
        == "tensorflow/tensorflow:1.8.0"
    )


def test_v1alpha1_an_unset_restart_policy_runs_as_on_failure():
    document = seed()
    del document["spec"]["replicaSpecs"][1]["template"]["spec"]["restartPolicy"]
    assert pod(parse(document), "Job/example-job-worker-0")["restartPolicy"] == "OnFailure"


def test_v1alpha1_the_chief_is_master_0_unless_the_termination_policy_says_otherwise():
    document = seed()
    document["spec"]["terminationPolicy"] = {"chief": {"replicaName": "WORKER", "replicaIndex": 1}}
    assert parse(document).success_jobs == ("example-job-worker-1",)


# -- refused ------------------------------------------------------------------------------------


def refused(document: dict[str, Any], tmp_path: Any, capsys: Any) -> list[str]:
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document))
    out = tmp_path / "out"
    assert main(["render", str(spec), "--out", str(out)]) == 2
    assert not out.exists()
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [
        line.strip() for line in err.splitlines()[1:] if not line.strip().startswith("warning:")
    ]


def without_tensorflow_container() -> dict[str, Any]:
    document = tfjob(Chief=replica(), Worker=replica())
    document["spec"]["tfReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["name"] = (
        "trainer"
    )
    return document


def both_chief_and_master() -> dict[str, Any]:
    return tfjob(Chief=replica(), Master=replica(), Worker=replica())


INVALID = [
    (
        "no-tensorflow-container",
        without_tensorflow_container(),
        [
            "spec.tfReplicaSpecs.Worker.template.spec.containers: must have a container named "
            "'tensorflow' (got ['trainer']): Kubeflow puts the job's port and environment on it; "
            "rename the main container"
        ],
    ),
    (
        "chief-and-master",
        both_chief_and_master(),
        [
            "spec.tfReplicaSpecs: must not have both 'Chief' and 'Master': a TFJob has one chief; "
            "keep one of them"
        ],
    ),
    (
        "bad-restart-policy",
        tfjob(Worker=replica(restartPolicy="Sometimes")),
        [
            "spec.tfReplicaSpecs.Worker.restartPolicy: must be one of Always, OnFailure, Never, "
            "ExitCode (got 'Sometimes')"
        ],
    ),
    (
        "two-evaluators-in-v1beta1",
        tfjob("v1beta1", Chief=replica(), Evaluator=replica(2)),
        [
            "spec.tfReplicaSpecs.Evaluator.replicas: must be at most 1 in v1beta1 (got 2): its "
            "operator refuses more than one evaluator"
        ],
    ),
    (
        "parameter-servers-alone",
        tfjob(PS=replica(2)),
        [
            "spec.tfReplicaSpecs: needs a Chief, a Master or Workers: parameter servers and "
            "evaluators alone never finish"
        ],
    ),
    (
        "kubedl-group",
        {**tfjob(), "apiVersion": "training.kubedl.io/v1alpha1"},
        [
            "apiVersion: must be one of kubeflow.org/v1alpha1, kubeflow.org/v1alpha2, "
            "kubeflow.org/v1beta1, kubeflow.org/v1beta2, kubeflow.org/v1 "
            "('training.kubedl.io/v1alpha1' is another project's TFJob, not Kubeflow's)"
        ],
    ),
    (
        "zero-workers",
        tfjob(Chief=replica(), Worker=replica(0)),
        [
            "spec.tfReplicaSpecs.Worker.replicas: must be at least 1 (got 0); remove the replica "
            "type instead"
        ],
    ),
]


@pytest.mark.parametrize(
    ("document", "expected"), [c[1:] for c in INVALID], ids=[c[0] for c in INVALID]
)
def test_a_spec_the_operator_would_refuse_is_refused_naming_field_value_and_fix(
    tmp_path, capsys, document, expected
):
    assert refused(copy.deepcopy(document), tmp_path, capsys) == expected


def test_run_policy_in_both_places_is_refused(tmp_path, capsys):
    document = tfjob()
    document["spec"].update(backoffLimit=1, runPolicy={"backoffLimit": 2})
    assert refused(document, tmp_path, capsys) == [
        "spec.backoffLimit: also set as spec.runPolicy.backoffLimit; keep one (runPolicy is where "
        "training-operator 1.3+ reads it)"
    ]


def test_every_problem_of_a_spec_is_reported_at_once(tmp_path, capsys):
    document = tfjob(
        Chief=replica(restartPolicy="Sometimes"), Worker=replica(0), Evaluator=replica()
    )
    document["spec"]["runPolicy"] = {"cleanPodPolicy": "Some"}
    assert refused(document, tmp_path, capsys) == [
        "spec.runPolicy.cleanPodPolicy: must be one of None, Running, All (got 'Some')",
        "spec.tfReplicaSpecs.Chief.restartPolicy: must be one of Always, OnFailure, Never, "
        "ExitCode (got 'Sometimes')",
        "spec.tfReplicaSpecs.Worker.replicas: must be at least 1 (got 0); remove the replica type "
        "instead",
    ]


def test_a_name_whose_replica_names_exceed_63_characters_is_refused(tmp_path, capsys):
    document = tfjob(Chief=replica(), Worker=replica(10))
    document["metadata"]["name"] = "t" * 55
    assert refused(document, tmp_path, capsys) == [
        f"spec.tfReplicaSpecs.Worker: the derived replica name '{'t' * 55}-worker-9' is 64 "
        "characters; Kubernetes allows 63 for its Service and workload; shorten metadata.name"
    ]
