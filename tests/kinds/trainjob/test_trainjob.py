"""TrainJob rendered to the JobSet Kubeflow Trainer v2.3.0 would create, from its released
runtimes or a user's own; refused with Trainer's reasons where its webhook refuses."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from trainjobs.cli import main
from trainjobs.core.errors import SpecError
from trainjobs.core.jobset import child_jobs
from trainjobs.kinds.registry import load_job, parse_job
from trainjobs.kinds.trainjob.policies import TORCH_ENV

EXAMPLE = REPO / "jobs" / "trainjob-torch.yaml"


def trainjob(runtime: str = "torch-distributed", **trainer: Any) -> dict[str, Any]:
    return {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {"name": "tj"},
        "spec": {"runtimeRef": {"name": runtime}, "trainer": trainer},
    }


def the_jobset(job: dict[str, Any]) -> dict[str, Any]:
    manifests = parse_job(job, "tj.yaml").graph.manifests()
    return next(m for m in manifests if m["kind"] == "JobSet")


def node_container(jobset: dict[str, Any], replicated: str = "node") -> dict[str, Any]:
    job = next(j for j in jobset["spec"]["replicatedJobs"] if j["name"] == replicated)
    pod = job["template"]["spec"]["template"]["spec"]
    return next(c for c in pod["containers"] if c["name"] == "node")


def test_the_torch_example_is_trainers_jobset_with_the_users_command_and_pet_env():
    job = load_job(EXAMPLE)
    anchor, jobset = job.graph.manifests()
    replicated = jobset["spec"]["replicatedJobs"][0]
    container = node_container(jobset)

    assert (job.kind, job.name, job.success_jobs, job.queued) == (
        "TrainJob",
        "trainjob-torch",
        ("trainjob-torch-node-0",),
        True,
    )
    assert (anchor["kind"], anchor["metadata"]["name"], anchor["data"]) == (
        "ConfigMap",
        "trainjob-torch-trainjob",
        {"runtime": "ClusterTrainingRuntime/torch-distributed (Kubeflow Trainer v2.3.0)"},
    )
    assert job.anchor == ("ConfigMap", "trainjob-torch-trainjob")
    assert (replicated["name"], replicated["replicas"]) == ("node", 1)
    assert {k: replicated["template"]["spec"][k] for k in ("parallelism", "completions")} == {
        "parallelism": 2,
        "completions": 2,
    }
    assert container["command"] == ["torchrun", "/train_pytorch.py"]
    assert "args" not in container
    assert container["image"] == "trainjobs/pytorch:2.13.0-cpu"
    assert container["env"] == [
        {"name": "PET_NNODES", "value": "2"},
        {"name": "PET_NPROC_PER_NODE", "value": "1"},
        {
            "name": "PET_NODE_RANK",
            "valueFrom": {
                "fieldRef": {
                    "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"
                }
            },
        },
        {"name": "PET_MASTER_ADDR", "value": "trainjob-torch-node-0-0.trainjob-torch"},
        {"name": "PET_MASTER_PORT", "value": "29500"},
    ]
    assert container["ports"] == [{"containerPort": 29500}]
    assert replicated["template"]["metadata"]["labels"] == {
        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
    }


def test_the_jobset_controller_puts_trainers_pods_under_the_trainjobs_subdomain():
    _, jobset = load_job(EXAMPLE).graph.manifests()
    (child,) = child_jobs(jobset)

    assert child["metadata"]["name"] == "trainjob-torch-node-0"
    assert child["spec"]["template"]["spec"]["subdomain"] == "trainjob-torch"


def test_the_rendered_jobset_and_its_jobs_pass_the_strict_schemas():
    for manifest in load_job(EXAMPLE).graph.manifests():
        assert schema_problems(manifest) == []


def test_the_users_env_comes_before_the_policys_and_num_proc_resolves_from_cpus():
    jobset = the_jobset(
        trainjob(
            env=[{"name": "EPOCHS", "value": "3"}],
            resourcesPerNode={"requests": {"cpu": "2500m"}},
        )
    )

    env = node_container(jobset)["env"]
    assert [item["name"] for item in env] == [
        "EPOCHS",
        "PET_NNODES",
        "PET_NPROC_PER_NODE",
        "PET_NODE_RANK",
        "PET_MASTER_ADDR",
        "PET_MASTER_PORT",
    ]
    assert env[2] == {"name": "PET_NPROC_PER_NODE", "value": "3"}
    assert env[1] == {"name": "PET_NNODES", "value": "1"}


def test_with_gpus_num_proc_per_node_stays_auto_for_torchrun():
    jobset = the_jobset(trainjob(resourcesPerNode={"limits": {"nvidia.com/gpu": 4}}))

    assert node_container(jobset)["env"][1] == {"name": "PET_NPROC_PER_NODE", "value": "auto"}
    assert node_container(jobset)["resources"] == {"limits": {"nvidia.com/gpu": 4}}


def refusal(job: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as caught:
        parse_job(job, "tj.yaml")
    return [str(problem) for problem in caught.value.problems]


def test_a_runtime_that_does_not_exist_is_refused_listing_the_runtimes_there_are():
    assert refusal(trainjob("torch-distributed-v2")) == [
        'spec.runtimeRef: clustertrainingruntimes.trainer.kubeflow.org "torch-distributed-v2" '
        "not found: specified clusterTrainingRuntime must be created before the TrainJob is "
        "created; the runtimes there are ClusterTrainingRuntime/deepspeed-distributed, "
        "ClusterTrainingRuntime/jax-distributed, ClusterTrainingRuntime/mlx-distributed, "
        "ClusterTrainingRuntime/torch-distributed, ClusterTrainingRuntime/xgboost-distributed "
        "(Kubeflow Trainer v2.3.0's, and those given beside the TrainJob in its file)"
    ]


def test_the_cli_exits_2_on_a_missing_runtime(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    path = tmp_path / "tj.yaml"
    # No Trainer release shipped it (v2.0's mpi-distributed is found in v2.0.1's runtimes).
    path.write_text(yaml.safe_dump(trainjob("mpi-distributed-v2")))

    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"{path}: invalid job spec (1 problem(s))"
    assert err[1].startswith(
        '  spec.runtimeRef: clustertrainingruntimes.trainer.kubeflow.org "mpi-distributed-v2" '
        "not found: specified clusterTrainingRuntime must be created before the TrainJob is "
        "created"
    )


@pytest.mark.parametrize(
    "name", ["torchtune-llama3.2-1b", "torchtune-llama3.2-3b", "torchtune-qwen2.5-1.5b"]
)
def test_a_torchtune_runtime_trainer_ships_is_refused_as_trainers_not_rendered_here(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    path = tmp_path / "tj.yaml"
    path.write_text(yaml.safe_dump(trainjob(name)))

    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: invalid job spec (1 problem(s))",
        f'  spec.runtimeRef: ClusterTrainingRuntime "{name}" is one of Kubeflow Trainer '
        "v2.3.0's torchtune fine-tuning runtimes, which trainjobs does not render: the "
        "'initializer' claim its JobSet's volumeClaimPolicies has JobSet's controller create, "
        "and the `tune run` command Trainer builds from a TrainJob's trainer, are not "
        "reproduced here; give a ClusterTrainingRuntime of that name beside the TrainJob in "
        "its file, with an 'initializer' volume in its pods in place of volumeClaimPolicies "
        "and the full `tune run` command in its node container, or use one of "
        "ClusterTrainingRuntime/deepspeed-distributed, ClusterTrainingRuntime/jax-distributed, "
        "ClusterTrainingRuntime/mlx-distributed, ClusterTrainingRuntime/torch-distributed, "
        "ClusterTrainingRuntime/xgboost-distributed",
    ]


TUNE = ["tune", "run", "--rdzv_endpoint=localhost:29500", "full_finetune_distributed"]


def test_a_torchtune_runtime_given_beside_the_trainjob_with_its_volume_is_rendered(
    tmp_path: Path,
):
    pod = {
        "containers": [
            {
                "name": "node",
                "image": "ghcr.io/kubeflow/trainer/torchtune-trainer",
                "command": [*TUNE, "--config", "llama3_2/1B_full"],
                "resources": {"limits": {"nvidia.com/gpu": 2}},
                "volumeMounts": [{"mountPath": "/workspace", "name": "initializer"}],
            }
        ],
        "volumes": [{"name": "initializer", "persistentVolumeClaim": {"claimName": "tuned"}}],
    }
    runtime = {
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "ClusterTrainingRuntime",
        "metadata": {"name": "torchtune-llama3.2-1b"},
        "spec": {
            "mlPolicy": {"numNodes": 1, "torch": {}},
            "template": {
                "spec": {
                    "replicatedJobs": [
                        {
                            "name": "node",
                            "template": {
                                "metadata": {
                                    "labels": {
                                        "trainer.kubeflow.org/trainjob-ancestor-step": "trainer"
                                    }
                                },
                                "spec": {"template": {"spec": pod}},
                            },
                        }
                    ]
                }
            },
        },
    }
    path = tmp_path / "tj.yaml"
    path.write_text(
        yaml.safe_dump_all([trainjob("torchtune-llama3.2-1b", args=["epochs=1"]), runtime])
    )

    anchor, jobset = load_job(path).graph.manifests()
    container = node_container(jobset)

    assert anchor["data"] == {"runtime": f"ClusterTrainingRuntime/torchtune-llama3.2-1b ({path})"}
    assert (container["command"], container["args"]) == (
        [*TUNE, "--config", "llama3_2/1B_full"],
        ["epochs=1"],
    )
    assert [item["name"] for item in container["env"]] == list(TORCH_ENV)
    assert container["env"][1] == {"name": "PET_NPROC_PER_NODE", "value": "auto"}


def test_a_bare_tune_run_command_trainer_completes_is_refused_under_a_torch_policy():
    assert refusal(trainjob(command=["tune", "run"], args=["epochs=1"])) == [
        "spec.trainer.command: ['tune', 'run'] is Trainer's torchtune entrypoint, which its "
        "torch plugin completes (the rendezvous endpoint, the recipe and --config it picks "
        "from numNodes, numProcPerNode, the GPUs and args, the runtime's output and checkpoint "
        "paths); trainjobs does not reproduce that: give the whole command, e.g. ['tune', "
        "'run', 'full_finetune_distributed', '--config', 'llama3_2/1B_full', ...]"
    ]


def test_a_whole_tune_run_command_is_kept_as_given():
    command = ["tune", "run", "full_finetune_single_device", "--config", "llama3_2/1B_full"]

    assert node_container(the_jobset(trainjob(command=command)))["command"] == command


def test_tune_run_is_only_trainers_to_complete_under_a_torch_policy():
    container = node_container(the_jobset(trainjob("jax-distributed", command=["tune", "run"])))

    assert container["command"] == ["tune", "run"]


def test_reserved_torch_env_is_refused_with_trainers_reason():
    assert refusal(trainjob(env=[{"name": "PET_NNODES", "value": "4"}])) == [
        "spec.trainer.env: must not have reserved envs, invalid envs configured: [PET_NNODES]"
    ]


def test_the_crds_rules_on_name_and_managed_by_are_trainers():
    job = trainjob()
    job["metadata"]["name"] = "Train_Job"
    job["spec"]["managedBy"] = "example.com/other"

    assert refusal(job) == [
        "metadata.name: metadata.name must match RFC 1035 DNS label format",
        "spec.managedBy: ManagedBy must be trainer.kubeflow.org/trainjob-controller or "
        "kueue.x-k8s.io/multikueue if set",
    ]


RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1",
    "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch-distributed"},
    "spec": {
        "mlPolicy": {"numNodes": 3, "torch": {}},
        "podGroupPolicy": {"coscheduling": {}},
        "template": {
            "spec": {
                "replicatedJobs": [
                    {
                        "name": "node",
                        "template": {
                            "metadata": {
                                "labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}
                            },
                            "spec": {
                                "template": {
                                    "spec": {
                                        "containers": [
                                            {
                                                "name": "node",
                                                "image": "example.com/torch:1",
                                                "resources": {"requests": {"cpu": "2"}},
                                            }
                                        ]
                                    }
                                }
                            },
                        },
                    }
                ]
            }
        },
    },
}


def test_a_runtime_given_beside_the_trainjob_wins_over_the_released_one_of_its_name(
    tmp_path: Path,
):
    path = tmp_path / "tj.yaml"
    path.write_text(yaml.safe_dump_all([trainjob(command=["torchrun", "train.py"]), RUNTIME]))

    job = load_job(path)
    anchor, group, jobset = job.graph.manifests()
    container = node_container(jobset)

    assert (container["image"], container["env"][0], container["env"][1]) == (
        "example.com/torch:1",
        {"name": "PET_NNODES", "value": "3"},
        {"name": "PET_NPROC_PER_NODE", "value": "2"},
    )
    assert anchor["data"] == {"runtime": f"ClusterTrainingRuntime/torch-distributed ({path})"}
    assert group["kind"] == "PodGroup"
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["spec"] == {
        "minMember": 3,
        "minResources": {"cpu": "6"},
        "scheduleTimeoutSeconds": 60,
    }
    pod_labels = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["metadata"]
    assert pod_labels == {"labels": {"scheduling.x-k8s.io/pod-group": "tj"}}
    assert job.gang_min_member == 3


def test_a_deepspeed_trainjob_gets_trainers_hostfile_ssh_secret_and_open_mpi_env():
    job = trainjob("deepspeed-distributed", numNodes=3, command=["mpirun", "python", "t.py"])
    _, secret, config_map, jobset = parse_job(job, "tj.yaml").graph.manifests()
    launcher = node_container(jobset, "launcher")

    assert (secret["kind"], secret["metadata"]["name"], secret["type"]) == (
        "Secret",
        "tj-mpi-ssh-auth",
        "kubernetes.io/ssh-auth",
    )
    assert config_map["data"] == {
        "hostfile": "tj-node-0-0.tj slots=1\ntj-node-0-1.tj slots=1\ntj-launcher-0-0.tj slots=1\n"
    }
    assert launcher["command"] == ["mpirun", "python", "t.py"]
    assert launcher["env"] == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]
    assert launcher["volumeMounts"] == [
        {"name": "mpi-ssh-auth", "mountPath": "/home/mpiuser/.ssh"},
        {"name": "mpi-hostfile", "mountPath": "/etc/mpi"},
    ]
    node = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]
    assert (node["parallelism"], node["completions"]) == (2, 2)
    assert jobset["spec"]["successPolicy"] == {
        "operator": "All",
        "targetReplicatedJobs": ["launcher"],
    }
    assert parse_job(job, "tj.yaml").success_jobs == ("tj-launcher-0",)


def test_runtime_patches_of_a_container_the_runtime_lacks_are_refused():
    job = trainjob()
    job["spec"]["runtimePatches"] = [
        {
            "manager": "example.com/tool",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {
                                    "spec": {
                                        "template": {"spec": {"containers": [{"name": "sidecar"}]}}
                                    }
                                },
                            }
                        ]
                    }
                }
            },
        }
    ]
    assert refusal(job) == [
        "spec.runtimePatches: must not have container that doesn't exist in the runtime job node"
    ]


def test_pod_template_overrides_reach_their_target_jobs_pods():
    job = copy.deepcopy(trainjob())
    job["spec"]["podTemplateOverrides"] = [
        {
            "targetJobs": [{"name": "node"}],
            "spec": {"nodeSelector": {"pool": "gpu"}, "serviceAccountName": "trainer"},
        }
    ]
    pod = the_jobset(job)["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]

    assert (pod["nodeSelector"], pod["serviceAccountName"]) == ({"pool": "gpu"}, "trainer")


def test_active_deadline_seconds_warns_that_only_trainers_controller_enforces_it():
    job = trainjob()
    job["spec"]["activeDeadlineSeconds"] = 600

    assert [str(w) for w in parse_job(job, "tj.yaml").warnings] == [
        "spec.activeDeadlineSeconds: Trainer's controller enforces it on the TrainJob, which is "
        "not created here, so it has no effect; set activeDeadlineSeconds on the runtime's Jobs "
        "instead"
    ]


def test_a_malformed_runtime_beside_the_trainjob_is_refused_by_field(tmp_path: Path):
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["template"]["spec"]["replicatedJobs"][0]["template"] = {"spec": {}}
    path = tmp_path / "tj.yaml"
    path.write_text(yaml.safe_dump_all([trainjob(), runtime]))

    with pytest.raises(SpecError) as caught:
        load_job(path)
    assert [str(p) for p in caught.value.problems] == [
        "ClusterTrainingRuntime/torch-distributed.spec.template.spec.replicatedJobs[0]"
        ".template.spec.template.spec: required: the Job's pod spec"
    ]


def test_an_env_var_without_a_name_is_refused():
    assert refusal(trainjob(env=[{"value": "3"}])) == [
        "spec.trainer.env[0].name: Required value: an env var's name"
    ]


def test_two_trainjobs_in_one_file_with_a_runtime_are_refused(tmp_path: Path):
    path = tmp_path / "tj.yaml"
    path.write_text(yaml.safe_dump_all([trainjob(), trainjob(), RUNTIME]))

    with pytest.raises(SpecError) as caught:
        load_job(path)
    assert [str(p) for p in caught.value.problems] == [
        "items: training runtimes (ClusterTrainingRuntime, TrainingRuntime) go beside exactly "
        "one TrainJob (got ['TrainJob', 'TrainJob']): one job per file"
    ]


def test_a_suspended_trainjob_in_a_kueue_queue_is_kueues_to_start():
    job = trainjob()
    job["metadata"]["labels"] = {"kueue.x-k8s.io/queue-name": "training-queue", "team": "a"}
    job["spec"]["suspend"] = True
    definition = parse_job(job, "tj.yaml")
    jobset = next(m for m in definition.graph.manifests() if m["kind"] == "JobSet")

    assert (definition.suspend, jobset["spec"]["suspend"]) == (False, True)
    assert jobset["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] == "training-queue"
    assert "team" in jobset["metadata"]["labels"]
    assert parse_job(trainjob() | {"spec": {**trainjob()["spec"], "suspend": True}}, "t").suspend


def test_a_name_whose_pods_names_the_jobset_webhook_refuses_is_refused():
    job = trainjob(numNodes=12)
    job["metadata"]["name"] = "a" * 50

    assert refusal(job) == [
        "metadata.name: JobSet name is too long, pod names generated for this JobSet will "
        f"exceed 63 characters (the longest: {'a' * 50 + '-node-0-11-xxxxx'!r}, 66 characters); "
        "shorten the name to at most 47 characters"
    ]


def test_num_nodes_beyond_the_pod_bound_is_refused():
    assert refusal(trainjob(numNodes=5000)) == [
        "spec.trainer.numNodes: must be at most 1000 (got 5000): a job may have at most 1000 "
        "pods (each pod's objects and environment are written out); split it into smaller jobs"
    ]


def test_a_trainjob_managed_by_multikueue_warns_where_its_jobset_runs():
    job = trainjob()
    job["spec"]["managedBy"] = "kueue.x-k8s.io/multikueue"

    assert [str(w) for w in parse_job(job, "tj.yaml").warnings] == [
        "spec.managedBy: kueue.x-k8s.io/multikueue: on a cluster Trainer leaves the TrainJob to "
        "MultiKueue, which runs it on a worker cluster; here its JobSet is created where the "
        "stack deploys"
    ]


@pytest.mark.parametrize(
    ("field", "value", "problem"),
    [
        (
            "trainer",
            {"resourcesPerNode": {"requests": {"cpu": "abc"}}},
            'spec.trainer.resourcesPerNode.requests.cpu: Invalid value: "abc": quantities must '
            "match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
        ),
        (
            "runtimePatches",
            [{"trainingRuntimeSpec": {"template": {"spec": {"replicatedJobs": ["node"]}}}}],
            "spec.runtimePatches[0].trainingRuntimeSpec.template.spec.replicatedJobs[0]: must "
            "be a mapping (got 'node')",
        ),
        (
            "podSpecOverrides",
            [{"targetJobs": [{"name": "node"}], "containers": "node"}],
            "spec.podSpecOverrides[0].containers: must be a list (got 'node')",
        ),
        (
            "trainer",
            {"command": "python train.py"},
            "spec.trainer.command: must be a list of strings (got 'python train.py'): write it "
            "as a YAML list, e.g. ['python', 'train.py']",
        ),
    ],
)
def test_malformed_overrides_are_refused_by_field(field: str, value: Any, problem: str):
    job = trainjob()
    job["spec"][field] = value

    assert refusal(job) == [problem]


def test_a_runtime_beside_the_trainjob_is_checked_to_trainers_schema(tmp_path: Path):
    runtime = copy.deepcopy(RUNTIME)
    runtime["spec"]["mlPolicy"]["numNodes"] = "three"
    path = tmp_path / "tj.yaml"
    path.write_text(yaml.safe_dump_all([trainjob(), runtime]))

    with pytest.raises(SpecError) as caught:
        load_job(path)
    assert [str(p) for p in caught.value.problems] == [
        "ClusterTrainingRuntime/torch-distributed.spec.mlPolicy.numNodes: must be a whole "
        "number (got 'three')"
    ]


def test_a_runtime_patchs_pod_fields_are_known_and_applied():
    job = trainjob()
    pod_patch = {"nodeSelector": {"pool": "a100"}, "tolerations": [{"key": "gpu"}]}
    job["spec"]["runtimePatches"] = [
        {
            "manager": "trainer.kubeflow.org/kubeflow-sdk",
            "trainingRuntimeSpec": {
                "template": {
                    "spec": {
                        "replicatedJobs": [
                            {
                                "name": "node",
                                "template": {"spec": {"template": {"spec": pod_patch}}},
                            }
                        ]
                    }
                }
            },
        }
    ]
    definition = parse_job(job, "tj.yaml")
    jobset = next(m for m in definition.graph.manifests() if m["kind"] == "JobSet")
    pod = jobset["spec"]["replicatedJobs"][0]["template"]["spec"]["template"]["spec"]

    assert definition.warnings == ()
    assert (pod["nodeSelector"], pod["tolerations"]) == ({"pool": "a100"}, [{"key": "gpu"}])


MPI_EXAMPLE = REPO / "jobs" / "trainjob-mpi-chainermn.yaml"


def test_the_mpi_example_is_trainers_jobset_with_its_hostfile_and_key_mounts():
    """jobs/trainjob-mpi-chainermn.yaml: its own runtime beside it, rendered by the MPI policy."""
    job = load_job(MPI_EXAMPLE)
    by_kind = {(m["kind"], m["metadata"]["name"]): m for m in job.graph.manifests()}
    jobset = by_kind[("JobSet", "trainjob-mpi-chainermn")]
    launcher = node_container(jobset, "launcher")
    node = node_container(jobset, "node")
    counts = {
        j["name"]: (j["template"]["spec"]["parallelism"], j["template"]["spec"]["completions"])
        for j in jobset["spec"]["replicatedJobs"]
    }

    assert sorted(by_kind) == [
        ("ConfigMap", "trainjob-mpi-chainermn-mpi-hostfile"),
        ("ConfigMap", "trainjob-mpi-chainermn-trainjob"),
        ("JobSet", "trainjob-mpi-chainermn"),
        ("Secret", "trainjob-mpi-chainermn-mpi-ssh-auth"),
    ]
    assert by_kind[("ConfigMap", "trainjob-mpi-chainermn-trainjob")]["data"] == {
        "runtime": f"ClusterTrainingRuntime/mpi-chainermn ({MPI_EXAMPLE})"
    }
    assert by_kind[("ConfigMap", "trainjob-mpi-chainermn-mpi-hostfile")]["data"] == {
        "hostfile": "trainjob-mpi-chainermn-node-0-0.trainjob-mpi-chainermn slots=1\n"
        "trainjob-mpi-chainermn-node-0-1.trainjob-mpi-chainermn slots=1\n"
    }
    assert counts == {"launcher": (1, 1), "node": (2, 2)}
    # The user's program is the TrainJob's args, after the runtime's mpirun.
    assert launcher["args"] == ["-n", "2", "python3", "/train_mnist.py", "--communicator", "naive"]
    assert launcher["env"] == [
        {"name": "OMPI_MCA_orte_default_hostfile", "value": "/etc/mpi/hostfile"},
        {"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
        {"name": "OMPI_MCA_orte_set_default_slots", "value": "1"},
        {"name": "OMPI_MCA_plm_rsh_args", "value": "-o ConnectionAttempts=10"},
    ]
    assert [m["mountPath"] for m in launcher["volumeMounts"]] == [
        "/run/ssh-private",
        "/root/.ssh",
        "/etc/mpi",
    ]
    assert [m["mountPath"] for m in node["volumeMounts"]] == ["/run/ssh-private", "/root/.ssh"]


@pytest.mark.parametrize("kind", ["ClusterTrainingRuntime", "TrainingRuntime"])
def test_a_runtime_given_alone_is_refused_saying_where_it_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
):
    path = tmp_path / "runtime.yaml"
    runtime = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": kind}
    path.write_text(yaml.safe_dump({**runtime, "metadata": {"name": "mine"}}))

    assert main(["validate", str(path)]) == 2
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: invalid job spec (1 problem(s))",
        f"  kind: a {kind} is a training runtime, not a job: put it beside the TrainJob whose "
        "runtimeRef names it, in that TrainJob's file (YAML documents separated by ---)",
    ]
