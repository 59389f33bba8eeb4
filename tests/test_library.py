"""trainjobs as a library: the public names, and user programs that build jobs in code register
exactly what the YAML path (`trainjobs render`, the stack's own program) does."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml

import trainjobs
from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.review.preview import PreviewResult, run_preview

PUBLIC = {
    "ChainerJob",
    "ChainerJobSpec",
    "CudaImage",
    "ElasticPolicy",
    "GpuNodePool",
    "GpuNodePoolConfig",
    "GraphOptions",
    "InfraStack",
    "JAXJob",
    "JAXJobSpec",
    "JobCompletion",
    "KubeflowJob",
    "LocalRun",
    "MPIJob",
    "MPIJobSpec",
    "MasterSpec",
    "MpiConfig",
    "PaddleJob",
    "PaddleJobSpec",
    "PyTorchJob",
    "PyTorchJobSpec",
    "ReplicaSpec",
    "RunPolicy",
    "RunRecord",
    "SchedulingPolicy",
    "SchedulingProfile",
    "TFJob",
    "TFJobSpec",
    "TrainJob",
    "TrainJobSpec",
    "TrainingJob",
    "WatchSettings",
    "WorkerSpec",
    "XGBoostJob",
    "XGBoostJobSpec",
    "list_local_runs",
    "local_run_logs",
    "run_locally",
    "start_local_run",
}


def test_the_public_names_resolve_and_each_says_what_it_is():
    assert set(trainjobs.__all__) == PUBLIC
    undocumented = [name for name in PUBLIC if not (getattr(trainjobs, name).__doc__ or "").strip()]
    assert undocumented == []


def test_an_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="module 'trainjobs' has no attribute 'TFJobs'"):
        trainjobs.TFJobs  # noqa: B018


def test_importing_the_package_loads_no_pulumi():
    """`trainjobs validate` and `run` import the package: Pulumi loads only with a component."""
    code = "import sys, trainjobs; print(sorted(m for m in sys.modules if m.startswith('pulumi')))"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO
    )
    assert out.stdout.strip() == "[]"


def test_the_wheel_holds_only_the_trainjobs_package(tmp_path):
    subprocess.run(
        [
            *(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps"),
            *("--no-build-isolation", "--wheel-dir", str(tmp_path), str(REPO)),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("trainjobs-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {name.split("/", 1)[0] for name in names if not name.startswith("trainjobs-")} == {
        "trainjobs"
    }
    assert "trainjobs/deploy/jobs.py" in names
    assert "trainjobs/kinds/trainjob/releases/v2.0.0.yaml" in names


CONSTRUCT_WITH_RUNTIMES = """
import yaml
from trainjobs.deploy.provider import provider

*runtimes, document = yaml.safe_load_all(open("jobs/trainjob-mpi-chainermn.yaml"))
inputs = {"spec": document["spec"], "runtimes": runtimes}
provider().construct(document["metadata"]["name"], "trainjobs:index:TrainJob", inputs, None)
"""

LIBRARY_WITH_RUNTIMES = """
import yaml
import trainjobs

*runtimes, document = yaml.safe_load_all(open("jobs/trainjob-mpi-chainermn.yaml"))
trainjobs.TrainJob("trainjob-mpi-chainermn", document["spec"], runtimes=runtimes)
"""


def test_a_trainjob_with_its_runtime_beside_it_registers_the_objects_of_its_file(tmp_path):
    from_file = FROM_FILE.format(kind="TrainJob", file="trainjob-mpi-chainermn.yaml")
    expected = run_preview("test", program_project(tmp_path / "file", from_file))
    through_provider = run_preview(
        "test", program_project(tmp_path / "provider", CONSTRUCT_WITH_RUNTIMES)
    )
    library = run_preview("test", program_project(tmp_path / "library", LIBRARY_WITH_RUNTIMES))

    # The same objects; the runtime's record names where it was given: the file, or the component.
    from_the_component = json.dumps(registered(through_provider))
    assert json.dumps(registered(library)) == from_the_component
    assert from_the_component == json.dumps(registered(expected)).replace(
        "ClusterTrainingRuntime/mpi-chainermn (jobs/trainjob-mpi-chainermn.yaml)",
        "ClusterTrainingRuntime/mpi-chainermn (TrainJob trainjob-mpi-chainermn)",
    )
    assert from_the_component.count("(TrainJob trainjob-mpi-chainermn)") == 1
    assert [(r.type, r.name) for r in expected.resources[:1]] == [
        ("trainjobs:index:TrainJob", "trainjob-mpi-chainermn")
    ]
    assert [(kind, name) for kind, name, _ in objects(expected)] == [
        ("ConfigMap", "trainjob-mpi-chainermn-mpi-hostfile"),
        ("ConfigMap", "trainjob-mpi-chainermn-trainjob"),
        ("JobSet", "trainjob-mpi-chainermn"),
        ("Secret", "trainjob-mpi-chainermn-mpi-ssh-auth"),
    ]


def test_a_trainjob_list_named_otherwise_than_its_component_is_refused(tmp_path):
    program = """
import yaml
import trainjobs

*runtimes, document = yaml.safe_load_all(open("jobs/trainjob-mpi-chainermn.yaml"))
trainjobs.TrainJob("other", {"apiVersion": "v1", "kind": "List", "items": [*runtimes, document]})
"""
    with pytest.raises(UserError) as error:
        run_preview("test", program_project(tmp_path / "p", program))
    assert str(error.value).splitlines() == [
        "TrainJob other: invalid job spec (1 problem(s))",
        "  metadata.name: is 'trainjob-mpi-chainermn' but the component is named 'other'; "
        "name the component as the job",
    ]


def test_a_trainjob_file_whose_list_holds_a_string_fails_naming_the_item(tmp_path):
    program = """
import trainjobs

trainjobs.TrainJob.from_file("jobs/broken.yaml")
"""
    project = program_project(tmp_path / "p", program)
    (project / "jobs" / "broken.yaml").write_text(
        "apiVersion: v1\nkind: List\nitems:\n- oops\n- {kind: TrainJob}\n"
    )
    with pytest.raises(UserError) as error:
        run_preview("test", project)
    assert str(error.value).splitlines() == [
        "jobs/broken.yaml: invalid job spec (1 problem(s))",
        "  items[0]: must be a mapping (got 'oops')",
    ]


def test_a_trainjob_naming_a_runtime_not_given_fails_listing_the_runtimes_there_are(tmp_path):
    program = """
import trainjobs

trainjobs.TrainJob("t", {"runtimeRef": {"name": "mpi-chainermn"}})
"""
    with pytest.raises(UserError) as error:
        run_preview("test", program_project(tmp_path / "p", program))
    assert str(error.value).splitlines() == [
        "TrainJob t: invalid job spec (1 problem(s))",
        '  spec.runtimeRef: clustertrainingruntimes.trainer.kubeflow.org "mpi-chainermn" not '
        "found: specified clusterTrainingRuntime must be created before the TrainJob is "
        "created; the runtimes there are ClusterTrainingRuntime/deepspeed-distributed, "
        "ClusterTrainingRuntime/jax-distributed, ClusterTrainingRuntime/mlx-distributed, "
        "ClusterTrainingRuntime/torch-distributed, ClusterTrainingRuntime/xgboost-distributed "
        "(Kubeflow Trainer v2.3.0's, and those given beside the TrainJob in its file)",
    ]


# ---------------------------------------------------------------------------------------------
# User programs under the mock runtime


def program_project(tmp_path: Path, program: str, config: dict | None = None) -> Path:
    """A project whose __main__.py is ``program``, with the repository's job files."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    shutil.copytree(REPO / "jobs", tmp_path / "jobs")
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config or {}}))
    return tmp_path


def objects(result: PreviewResult) -> list[tuple[str, str, object]]:
    """(kind, name, spec or data) of every Kubernetes object, sorted."""
    found = []
    for registration in result.kubernetes_objects():
        inputs = registration.inputs
        body = inputs.get("spec", inputs.get("data", inputs.get("rules")))
        found.append((inputs["kind"], inputs["metadata"]["name"], body))
    return sorted(found, key=lambda item: (item[0], item[1]))


def rendered(path: Path, out: Path) -> list[tuple[str, str, object]]:
    assert main(["render", str(path), "--out", str(out)]) == 0
    found = []
    for file in sorted(out.glob("*.yaml")):
        manifest = yaml.safe_load(file.read_text())
        body = manifest.get("spec", manifest.get("data", manifest.get("rules")))
        found.append((manifest["kind"], manifest["metadata"]["name"], body))
    return sorted(found, key=lambda item: (item[0], item[1]))


TF_FROM_DICT = """
import yaml
import trainjobs

document = yaml.safe_load(open("jobs/tf-mnist.yaml"))
trainjobs.TFJob("tf-mnist", document["spec"])
"""


def test_a_tfjob_from_a_dict_registers_what_render_writes(tmp_path):
    result = run_preview("test", program_project(tmp_path / "project", TF_FROM_DICT))
    component = result.resources[0]
    assert (component.type, component.name) == ("trainjobs:index:TFJob", "tf-mnist")
    assert objects(result) == rendered(REPO / "jobs" / "tf-mnist.yaml", tmp_path / "render")
    assert [o[:2] for o in objects(result)] == [
        ("Job", "tf-mnist-chief-0"),
        ("Job", "tf-mnist-ps-0"),
        ("Job", "tf-mnist-worker-0"),
        ("Job", "tf-mnist-worker-1"),
        ("Service", "tf-mnist-chief-0"),
        ("Service", "tf-mnist-ps-0"),
        ("Service", "tf-mnist-worker-0"),
        ("Service", "tf-mnist-worker-1"),
    ]


TF_FROM_MODEL = """
import yaml
from trainjobs import ReplicaSpec, RunPolicy, TFJob, TFJobSpec

template = yaml.safe_load(open("jobs/tf-mnist.yaml"))["spec"]["tfReplicaSpecs"]["Chief"]["template"]
TFJob(
    "tf-mnist",
    TFJobSpec(
        run_policy=RunPolicy(clean_pod_policy="Running", backoff_limit=2, active_deadline_seconds=3600),
        tf_replica_specs={
            "Chief": ReplicaSpec(replicas=1, restart_policy="OnFailure", template=template),
            "Worker": ReplicaSpec(replicas=2, restart_policy="OnFailure", template=template),
            "PS": ReplicaSpec(replicas=1, restart_policy="OnFailure", template=template),
        },
    ),
)
"""

TF_FROM_FILE = """
from trainjobs import TFJob

TFJob.from_file("jobs/tf-mnist.yaml")
"""


@pytest.mark.parametrize("program", [TF_FROM_MODEL, TF_FROM_FILE], ids=["model", "file"])
def test_a_model_instance_and_a_file_register_the_same_objects_as_a_dict(tmp_path, program):
    from_dict = run_preview("test", program_project(tmp_path / "dict", TF_FROM_DICT))
    other = run_preview("test", program_project(tmp_path / "other", program))
    assert [(r.type, r.name, r.inputs) for r in other.resources] == [
        (r.type, r.name, r.inputs) for r in from_dict.resources
    ]


def test_an_invalid_file_fails_with_the_messages_of_validate(tmp_path, capsys):
    project = program_project(tmp_path, TF_FROM_FILE)
    spec = yaml.safe_load((project / "jobs" / "tf-mnist.yaml").read_text())
    spec["spec"]["tfReplicaSpecs"]["Worker"]["replicas"] = -1
    spec["spec"]["tfReplicaSpecs"]["Worker"]["restartPolicy"] = "Sometimes"
    (project / "jobs" / "tf-mnist.yaml").write_text(yaml.safe_dump(spec))
    assert main(["validate", str(project / "jobs" / "tf-mnist.yaml")]) == 2
    expected = capsys.readouterr().err.strip().replace(str(project) + "/", "")
    with pytest.raises(UserError) as error:
        run_preview("test", project)
    assert str(error.value) == expected
    assert expected.splitlines()[0] == "jobs/tf-mnist.yaml: invalid job spec (2 problem(s))"


def test_an_invalid_dict_names_the_component_and_the_field(tmp_path):
    program = TF_FROM_DICT.replace(
        'document["spec"])', '{**document["spec"], "successPolicy": "Everyone"})'
    )
    with pytest.raises(UserError) as error:
        run_preview("test", program_project(tmp_path, program))
    assert str(error.value) == (
        "TFJob tf-mnist: invalid job spec (1 problem(s))\n"
        "  spec.successPolicy: must be '' or 'AllWorkers' (got 'Everyone')"
    )


SWEEP = """
import trainjobs

jobs = [
    trainjobs.ChainerJob.from_file(f"jobs/{name}.yaml", watched=True)
    for name in ("chainermn-mnist", "chainer-mnist")
]
trainjobs.JobCompletion("completion", jobs)
"""


def test_several_jobs_with_one_watcher_are_the_objects_of_the_yaml_path(tmp_path):
    config = {"trainjobs:jobs": ["jobs/chainermn-mnist.yaml", "jobs/chainer-mnist.yaml"]}
    yaml_path = program_project(tmp_path / "yaml", (REPO / "__main__.py").read_text(), config)
    in_code = program_project(tmp_path / "code", SWEEP)
    expected = run_preview("test", yaml_path)
    got = run_preview("test", in_code)

    def registered(result: PreviewResult) -> list[tuple]:
        names = {r.urn: r.name for r in result.resources}
        return sorted(
            (
                r.type,
                r.name,
                json.dumps(r.inputs, sort_keys=True),
                sorted(names[d] for d in r.dependencies),
            )
            for r in result.resources
        )

    assert registered(got) == registered(expected)
    assert [r.name for r in got.resources if r.type.endswith("JobCompletion")] == ["completion"]


def test_a_job_handed_to_a_watcher_is_watched_without_watched_true(tmp_path):
    """Handing a job to a JobCompletion is what makes it watched; without ``watched=True``
    its Jobs are not created suspended, and the watcher follows the run they start."""
    program = SWEEP.replace(", watched=True", "")
    result = run_preview("test", program_project(tmp_path, program))
    (watcher,) = [r for r in result.resources if r.type.endswith(":JobCompletion")]
    watched = {job["target"]["name"]: job["target"]["gated"] for job in watcher.inputs["jobs"]}
    assert watched == {"chainermn-mnist": False, "chainer-mnist": False}
    masters = [
        r.inputs["spec"].get("suspend")
        for r in result.kubernetes_objects()
        if r.inputs["kind"] == "Job"
    ]
    assert masters == [None, None]


# ---------------------------------------------------------------------------------------------
# Types: mypy checks the package and the typed example; a misspelled spec field is an error

SWEEP_EXAMPLE = REPO / "examples" / "sweep" / "__main__.py"


def mypy(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"), *args],
        capture_output=True,
        text=True,
        cwd=REPO,
    )


def test_the_typed_example_passes_the_type_checker():
    done = mypy(str(SWEEP_EXAMPLE))
    assert (done.returncode, done.stdout.splitlines()[-1]) == (
        0,
        "Success: no issues found in 1 source file",
    )


def test_a_misspelled_spec_field_in_a_program_is_a_type_error(tmp_path):
    source = SWEEP_EXAMPLE.read_text()
    assert "            backoff_limit=1,\n" in source
    program = tmp_path / "typo.py"
    program.write_text(
        source.replace("            backoff_limit=1,\n", "            backof_limit=1,\n")
    )
    done = mypy(str(program))
    # mypy names the line where the call starts.
    line = source.splitlines().index("        master=MasterSpec(") + 1
    assert done.returncode == 1
    # The file name only: mypy's cache may keep the directory of an earlier run of this test.
    assert done.stdout.splitlines()[0].rsplit("/", 1)[-1] == (
        f'typo.py:{line}: error: Unexpected keyword argument "backof_limit" for "MasterSpec"; '
        'did you mean "backoff_limit"?  [call-arg]'
    )


def test_make_test_runs_the_type_checker():
    makefile = (REPO / "Makefile").read_text()

    def recipe(target: str) -> str:
        return makefile.split(f"\n{target}:", 1)[1].split("\n\n", 1)[0]

    # Beside the tests, with the docs site and the release artefacts.
    assert "\ntest: SUITE_CHECKS := docs dist checks\n" in makefile
    assert "$(MAKE) --no-print-directory $(SUITE_CHECKS) " in recipe("test test-frameworks")
    assert "\t$(BIN)/python -m mypy" in recipe("checks")


# ---------------------------------------------------------------------------------------------
# The typed example previews offline: three jobs, one watcher, the pool of the infra stack


def test_the_sweep_example_previews_three_jobs_on_the_pool_with_one_watcher(tmp_path, capsys):
    out = tmp_path / "preview"
    project = REPO / "examples" / "sweep"
    assert main(["preview", "--stack", "a100", "--project", str(project), "--out", str(out)]) == 0
    summary = json.loads((out / "graph.json").read_text())
    top = [(r["type"], r["name"]) for r in summary["resources"] if r["parent"] is None]
    assert top == [
        ("pulumi:pulumi:StackReference", "org/trainjobs-infra/gpu-a100"),
        ("trainjobs:index:ChainerJob", "sweep-0"),
        ("trainjobs:index:ChainerJob", "sweep-1"),
        ("trainjobs:index:ChainerJob", "sweep-2"),
        ("pulumi-python:dynamic/trainjobs:JobCompletion", "completion"),
    ]
    references = json.loads((project / "stack-references.json").read_text())
    pinned = references["org/trainjobs-infra/gpu-a100"]["images"][
        "trainjobs/chainermn:7.8.1-cuda12.2"
    ]
    files = [yaml.safe_load(path.read_text()) for path in out.glob("*.yaml")]
    for index, rate in enumerate(("0.002", "0.001", "0.0005")):
        (master,) = [
            m
            for m in files
            if m["kind"] == "Job" and m["metadata"]["name"] == f"sweep-{index}-master"
        ]
        pod = master["spec"]["template"]["spec"]
        assert pod["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}
        assert pod["tolerations"] == [
            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}
        ]
        (trainer,) = [c for c in pod["containers"] if c["image"] == pinned]
        assert trainer["command"][-2:] == ["--learning-rate", rate]
    assert summary["outputs"]["sweep-1"]["learningRate"] == 0.001
    # The watcher's record of the job (job.outcome), which a preview cannot know.
    assert summary["outputs"]["sweep-1"]["outcome"] == "[known after pulumi up]"


# ---------------------------------------------------------------------------------------------
# Every Pulumi language: the component provider, its schema, and Construct

SCHEMA_FILE = REPO / "provider" / "schema.json"


def test_the_checked_in_schema_is_the_one_the_provider_serves():
    from trainjobs.deploy.provider import schema

    assert json.loads(SCHEMA_FILE.read_text()) == schema(), (
        "provider/schema.json is stale: .venv/bin/python -m trainjobs.deploy.provider > "
        "provider/schema.json"
    )


def test_the_schema_lists_each_job_with_typed_inputs():
    served = json.loads(SCHEMA_FILE.read_text())
    assert sorted(served["resources"]) == [
        "trainjobs:index:ChainerJob",
        "trainjobs:index:JAXJob",
        "trainjobs:index:MPIJob",
        "trainjobs:index:PaddleJob",
        "trainjobs:index:PyTorchJob",
        "trainjobs:index:TFJob",
        "trainjobs:index:TrainJob",
        "trainjobs:index:XGBoostJob",
    ]
    tfjob = served["resources"]["trainjobs:index:TFJob"]
    assert (tfjob["isComponent"], tfjob["requiredInputs"]) == (True, ["spec"])
    assert tfjob["inputProperties"]["spec"]["$ref"] == "#/types/trainjobs:index:TFJobSpecArgs"
    assert sorted(tfjob["properties"]) == ["masterJobName", "name", "namespace", "workerPodNames"]
    spec = served["types"]["trainjobs:index:TFJobSpecArgs"]["properties"]
    # The model's fields: the v1 ones, and those early v1 read at the top of spec.
    assert sorted(spec) == [
        "activeDeadlineSeconds",
        "backoffLimit",
        "cleanPodPolicy",
        "enableDynamicWorker",
        "runPolicy",
        "successPolicy",
        "tfReplicaSpecs",
        "ttlSecondsAfterFinished",
    ]
    assert spec["tfReplicaSpecs"]["additionalProperties"]["$ref"] == (
        "#/types/trainjobs:index:ReplicaSpecArgs"
    )
    replica = served["types"]["trainjobs:index:ReplicaSpecArgs"]
    assert {name: p.get("type", p.get("$ref")) for name, p in replica["properties"].items()} == {
        "replicas": "integer",
        "restartPolicy": "string",
        "template": "object",
    }
    assert "required" not in replica  # the parser names a missing template, as for YAML
    pytorch = served["types"]["trainjobs:index:PyTorchJobSpecArgs"]["properties"]
    assert pytorch["runPolicy"]["$ref"] == "#/types/trainjobs:index:RunPolicyArgs"
    chainer = served["types"]["trainjobs:index:ChainerJobSpecArgs"]
    assert (sorted(chainer["properties"]), chainer["required"]) == (
        ["backend", "master", "worker", "workerSets"],
        ["master"],
    )
    mpijob = served["types"]["trainjobs:index:MPIJobSpecArgs"]
    assert (sorted(mpijob["properties"]), mpijob.get("required")) == (
        [
            "launcherCreationPolicy",
            "mpiImplementation",
            "mpiReplicaSpecs",
            "runLauncherAsWorker",
            "runPolicy",
            "slotsPerWorker",
            "sshAuthMountPath",
        ],
        None,
    )
    trainjob = served["resources"]["trainjobs:index:TrainJob"]
    assert (sorted(trainjob["inputProperties"]), trainjob["requiredInputs"]) == (
        ["labels", "namespace", "runtimes", "spec"],
        ["spec"],
    )
    about = "Training runtime documents beside the TrainJob, as in its file. Default: none."
    assert trainjob["inputProperties"]["runtimes"] == {
        "description": about,
        "items": {
            "additionalProperties": {
                "$ref": "pulumi.json#/Any",
                "description": about,
                "plain": True,
            },
            "description": about,
            "plain": True,
            "type": "object",
        },
        "plain": True,
        "type": "array",
    }
    trainjob_spec = served["types"]["trainjobs:index:TrainJobSpecArgs"]
    assert (sorted(trainjob_spec["properties"]), trainjob_spec.get("required")) == (
        [
            "activeDeadlineSeconds",
            "annotations",
            "initializer",
            "labels",
            "managedBy",
            "podSpecOverrides",
            "podTemplateOverrides",
            "runtimePatches",
            "runtimeRef",
            "suspend",
            "trainer",
        ],
        None,  # runtimeRef defaults to one named '', which the parser refuses by name
    )
    trainer = served["types"]["trainjobs:index:TrainerArgs"]["properties"]
    assert sorted(trainer) == [
        "args",
        "command",
        "env",
        "image",
        "numNodes",
        "numProcPerNode",
        "resourcesPerNode",
    ]


CONSTRUCT = """
import yaml
from trainjobs.deploy.provider import provider

document = yaml.safe_load(open("jobs/{file}"))
inputs = {{"spec": document["spec"]}}
provider().construct(document["metadata"]["name"], "trainjobs:index:{kind}", inputs, None)
"""

FROM_FILE = """
import trainjobs

trainjobs.{kind}.from_file("jobs/{file}")
"""


def registered(result: PreviewResult) -> list[tuple]:
    names = {r.urn: r.name for r in result.resources}
    return [
        (r.type, r.name, names.get(r.parent), sorted(names[d] for d in r.dependencies), r.inputs)
        for r in result.resources
    ]


@pytest.mark.parametrize(
    ("kind", "file"),
    [
        ("ChainerJob", "chainermn-mnist.yaml"),
        ("TFJob", "tf-mnist.yaml"),
        ("PyTorchJob", "pytorch-mnist.yaml"),
        ("MPIJob", "mpijob-chainermn.yaml"),
        ("TrainJob", "trainjob-torch.yaml"),
        ("XGBoostJob", "xgboost-digits.yaml"),
        ("PaddleJob", "paddle-digits.yaml"),
        ("JAXJob", "jax-digits.yaml"),
    ],
)
def test_construct_through_the_provider_registers_what_the_python_api_does(tmp_path, kind, file):
    construct = CONSTRUCT.format(kind=kind, file=file)
    through_provider = run_preview("test", program_project(tmp_path / "provider", construct))
    python_api = FROM_FILE.format(kind=kind, file=file)
    expected = run_preview("test", program_project(tmp_path / "api", python_api))
    assert registered(through_provider) == registered(expected)
    assert through_provider.resources[0].type == f"trainjobs:index:{kind}"
    assert len(through_provider.kubernetes_objects()) > 1


# ---------------------------------------------------------------------------------------------
# The Pulumi YAML example. The offline preview evaluates Python programs only, so the YAML
# program is checked against the provider's schema, and its resources are constructed through
# the provider under the mock runtime.

YAML_EXAMPLE = REPO / "examples" / "yaml" / "Pulumi.yaml"


def schema_problems(value: object, spec: dict, types: dict, where: str) -> list[str]:
    """Where ``value`` does not fit the schema property or object type ``spec``."""
    if spec.get("$ref") == "pulumi.json#/Any":
        return []
    if "$ref" in spec:
        return schema_problems(value, types[spec["$ref"].removeprefix("#/types/")], types, where)
    kind = spec.get("type")
    if kind == "object" and "properties" in spec:
        if not isinstance(value, dict):
            return [f"{where}: must be an object"]
        problems = [
            f"{where}.{key}: not in the schema" for key in value if key not in spec["properties"]
        ]
        problems += [
            f"{where}.{key}: required" for key in spec.get("required", []) if key not in value
        ]
        for key, item in value.items():
            if key in spec["properties"]:
                problems += schema_problems(item, spec["properties"][key], types, f"{where}.{key}")
        return problems
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{where}: must be an object"]
        items = spec.get("additionalProperties", {})
        return [
            p for k, v in value.items() for p in schema_problems(v, items, types, f"{where}.{k}")
        ]
    if kind == "array":
        if not isinstance(value, list):
            return [f"{where}: must be a list"]
        return [
            p
            for i, v in enumerate(value)
            for p in schema_problems(v, spec["items"], types, f"{where}[{i}]")
        ]
    python = {"string": str, "integer": int, "number": (int, float), "boolean": bool}.get(kind)
    if python is not None and not isinstance(value, python):
        return [f"{where}: must be a {kind} (got {value!r})"]
    return []


def test_the_yaml_example_fits_the_providers_schema():
    program = yaml.safe_load(YAML_EXAMPLE.read_text())
    served = json.loads(SCHEMA_FILE.read_text())
    assert program["runtime"] == "yaml"
    assert program["packages"] == {"trainjobs": "../../provider"}
    problems = []
    for name, resource in program["resources"].items():
        component = served["resources"][resource["type"]]
        inputs = {
            "type": "object",
            "properties": component["inputProperties"],
            "required": component["requiredInputs"],
        }
        problems += schema_problems(resource["properties"], inputs, served["types"], name)
    assert problems == []
    outputs = served["resources"]["trainjobs:index:TFJob"]["properties"]
    assert {value.split(".")[1].rstrip("}") for value in program["outputs"].values()} <= set(
        outputs
    )


def test_the_schema_check_sees_a_misspelled_field():
    served = json.loads(SCHEMA_FILE.read_text())
    spec = {"$ref": "#/types/trainjobs:index:TFJobSpecArgs"}
    typo = {"tfReplicaSpecs": {"Worker": {"replicas": "two", "templat": {}}}}
    assert schema_problems(typo, spec, served["types"], "spec") == [
        "spec.tfReplicaSpecs.Worker.templat: not in the schema",
        "spec.tfReplicaSpecs.Worker.replicas: must be a integer (got 'two')",
    ]


YAML_CONSTRUCT = """
import yaml
from trainjobs.deploy.provider import provider

program = yaml.safe_load(open("Pulumi.yaml"))
for name, resource in program["resources"].items():
    provider().construct(name, resource["type"], resource["properties"], None)
"""


def test_the_yaml_examples_resources_construct_the_objects_of_the_python_api(tmp_path):
    project = program_project(tmp_path / "yaml", YAML_CONSTRUCT)
    shutil.copy(YAML_EXAMPLE, project / "Pulumi.yaml")
    through_provider = run_preview("test", project)
    python_api = FROM_FILE.format(kind="TFJob", file="tf-mnist.yaml")
    expected = run_preview("test", program_project(tmp_path / "api", python_api))
    assert registered(through_provider) == registered(expected)


def test_the_library_pages_example_registers_two_tfjobs_and_one_watcher(tmp_path):
    page = (REPO / "docs" / "library.md").read_text()
    example = page.split("```python\n", 1)[1].split("```", 1)[0]
    result = run_preview("test", program_project(tmp_path, example))
    urns = {r.urn for r in result.resources}
    assert [(r.type, r.name) for r in result.resources if r.parent not in urns] == [
        ("trainjobs:index:TFJob", "mnist-2"),
        ("trainjobs:index:TFJob", "mnist-4"),
        ("pulumi-python:dynamic/trainjobs:JobCompletion", "completion"),
    ]
    assert result.outputs == {"chief": "mnist-2-chief-0"}


# ---------------------------------------------------------------------------------------------
# Hostile input: the library refuses what `validate` refuses, and echoes no value it was given

SHADOW = "root:$6$secrethash:19000:0:99999:7:::\ndaemon:*:19000:0:99999:7:::\n"


def refused(call) -> str:
    """The message of the pulumi.RunError ``call`` raises (Pulumi prints it, no traceback)."""
    import pulumi

    with pytest.raises(pulumi.RunError) as raised:
        call()
    return str(raised.value)


def test_a_file_without_kind_is_refused_naming_the_kind_and_echoing_none_of_it(tmp_path):
    path = tmp_path / "shadow.yaml"
    path.write_text(SHADOW)
    assert refused(lambda: trainjobs.TFJob.from_file(path)).splitlines() == [
        f"{path}: invalid job spec (1 problem(s))",
        "  kind: must be TFJob, the kind trainjobs.TFJob reads (not set); set kind: TFJob in "
        "the document",
    ]


def test_a_file_of_another_kind_is_refused_naming_the_class_that_reads_it():
    assert refused(
        lambda: trainjobs.TFJob.from_file("jobs/mpijob-chainermn.yaml")
    ).splitlines() == [
        "jobs/mpijob-chainermn.yaml: invalid job spec (1 problem(s))",
        "  kind: must be TFJob, the kind trainjobs.TFJob reads (got 'MPIJob'); read it with "
        "trainjobs.MPIJob",
    ]


def test_a_document_of_another_kind_given_to_a_constructor_is_refused():
    document = yaml.safe_load((REPO / "jobs" / "mpijob-chainermn.yaml").read_text())
    del document["spec"]  # a document without spec is still a document, not a spec section
    assert refused(lambda: trainjobs.PyTorchJob("mpijob-chainermn", document)).splitlines() == [
        "PyTorchJob mpijob-chainermn: invalid job spec (1 problem(s))",
        "  kind: must be PyTorchJob, the kind trainjobs.PyTorchJob reads (got 'MPIJob'); read "
        "it with trainjobs.MPIJob",
    ]


def test_a_trainjob_list_is_read_only_by_the_trainjob_class():
    assert refused(lambda: trainjobs.TFJob.from_file("jobs/trainjob-mpi-chainermn.yaml")) == (
        "jobs/trainjob-mpi-chainermn.yaml: invalid job spec (1 problem(s))\n"
        "  kind: must be TFJob, the kind trainjobs.TFJob reads (got 'TrainJob'); read it with "
        "trainjobs.TrainJob"
    )


def test_a_namespace_that_is_no_dns_label_is_refused_as_the_api_server_would():
    spec = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())["spec"]
    assert refused(lambda: trainjobs.TFJob("tf-mnist", spec, namespace="Bad_NS")) == (
        "TFJob tf-mnist: invalid arguments (1 problem(s))\n"
        '  namespace: Invalid value: "Bad_NS": a lowercase RFC 1123 label must consist of lower '
        "case alphanumeric characters or '-', and must start and end with an alphanumeric "
        "character (e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )


@pytest.mark.parametrize("metadata", [[1, 2], "abc"])
def test_a_document_whose_metadata_is_no_mapping_fails_as_validate_says(tmp_path, metadata):
    path = tmp_path / "job.yaml"
    path.write_text(
        yaml.safe_dump(
            {"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": metadata, "spec": {}}
        )
    )
    assert main(["validate", str(path)]) == 2
    expected = f"  metadata: must be a mapping (got {metadata!r})"
    assert refused(lambda: trainjobs.TFJob.from_file(path)).splitlines()[1] == expected
    document = yaml.safe_load(path.read_text())
    assert refused(lambda: trainjobs.TFJob("x", document)).splitlines()[1] == expected


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda: trainjobs.TFJob("x", 42),
            "TFJob x: invalid arguments (1 problem(s))\n"
            "  spec: must be a TFJobSpec or a mapping (got int)",
        ),
        (
            lambda: trainjobs.TFJob(42, {}),
            "TFJob: invalid arguments (1 problem(s))\n  name: must be a str (got int)",
        ),
        (
            lambda: trainjobs.TFJob(
                "x", {}, namespace=5, labels="a=b", images=[], require_digests="yes"
            ),
            "TFJob x: invalid arguments (4 problem(s))\n"
            "  namespace: must be a str (got int)\n"
            "  labels: must be a mapping, or None (got str)\n"
            "  images: must be a mapping, or None (got list)\n"
            "  require_digests: must be a bool (got str)",
        ),
        (
            lambda: trainjobs.TFJob("x", {}, options={}, pool="a100", watched=1, source=b"x"),
            "TFJob x: invalid arguments (4 problem(s))\n"
            "  options: must be a GraphOptions, or None (got dict)\n"
            "  pool: must be a SchedulingProfile, or None (got str)\n"
            "  source: must be a str, or None (got bytes)\n"
            "  watched: must be a bool (got int)",
        ),
        (
            lambda: trainjobs.TFJob("x", trainjobs.PyTorchJobSpec()),
            "TFJob x: invalid arguments (1 problem(s))\n"
            "  spec: must be a TFJobSpec or a mapping (got PyTorchJobSpecV1)",
        ),
        (
            lambda: trainjobs.TrainJob("t", {"runtimeRef": {"name": "a"}}, runtimes="abc"),
            "TrainJob t: invalid arguments (1 problem(s))\n"
            "  runtimes: must be a list of training runtime documents (mappings) (got str)",
        ),
        (
            lambda: trainjobs.TrainJob("t", {"runtimeRef": {"name": "a"}}, runtimes=[{}, 1]),
            "TrainJob t: invalid arguments (1 problem(s))\n"
            "  runtimes[1]: must be a mapping (got int)",
        ),
        (
            lambda: trainjobs.TFJob.from_file(42),
            "TFJob.from_file: invalid arguments (1 problem(s))\n"
            "  path: must be a str or a Path (got int)",
        ),
    ],
)
def test_a_wrongly_typed_argument_is_named_with_the_type_given_and_expected(call, message):
    assert refused(call) == message


def test_the_warnings_of_a_program_show_a_keys_control_characters_escaped(tmp_path, monkeypatch):
    import pulumi

    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None: warned.append(message))
    program = TF_FROM_DICT.replace(
        'document["spec"])', '{**document["spec"], "x\\x1b]52;c;aGk=\\x07": "secret"})'
    )
    run_preview("test", program_project(tmp_path, program))
    assert warned == [
        "TFJob tf-mnist: spec.x\\x1b]52;c;aGk=\\x07: not a field of TFJob kubeflow.org/v1: "
        "Kubeflow's API server keeps or drops it and its operator ignores it, so it has no "
        "effect here"
    ]


PROVIDER_INPUTS = """
from trainjobs.deploy.provider import provider

provider().construct("x", "trainjobs:index:{kind}", {inputs}, None)
"""

TF_SPEC = {"tfReplicaSpecs": {"Worker": {"template": {}}}}


@pytest.mark.parametrize(
    ("kind", "inputs", "message"),
    [
        (
            "TFJob",
            {"spec": TF_SPEC, "namespace": 5, "labels": "a=b"},
            "TFJob x: invalid arguments (2 problem(s))\n"
            "  namespace: must be a str (got int)\n"
            "  labels: must be a mapping, or None (got str)",
        ),
        (
            "TrainJob",
            {"spec": {"runtimeRef": {"name": "a"}}, "runtimes": "abc"},
            "TrainJob x: invalid arguments (1 problem(s))\n"
            "  runtimes: must be a list of training runtime documents (mappings) (got str)",
        ),
        (
            "TrainJob",
            {"spec": {"runtimeRef": {"name": "a"}}, "runtimes": [1]},
            "TrainJob x: invalid arguments (1 problem(s))\n"
            "  runtimes[0]: must be a mapping (got int)",
        ),
    ],
)
def test_the_provider_refuses_wrong_inputs_as_the_library_does(tmp_path, kind, inputs, message):
    """The SDK checks the inputs' shape against the schema first (a missing ``spec`` is its
    InputPropertyError); what its schema leaves free is checked by the library."""
    from pulumi.errors import InputPropertiesError

    program = PROVIDER_INPUTS.format(kind=kind, inputs=repr(inputs))
    with pytest.raises(InputPropertiesError) as error:
        run_preview("test", program_project(tmp_path, program))
    assert error.value.message == message


def test_the_provider_reports_an_invalid_spec_as_invalid_inputs_without_a_stack(tmp_path):
    """The host shows any other error from a component with its Python stack."""
    from pulumi.errors import InputPropertiesError

    program = PROVIDER_INPUTS.format(kind="TFJob", inputs=repr({"spec": TF_SPEC}))
    with pytest.raises(InputPropertiesError) as error:
        run_preview("test", program_project(tmp_path, program))
    assert error.value.message.splitlines()[:2] == [
        "TFJob x: invalid job spec (1 problem(s))",
        "  spec.tfReplicaSpecs.Worker.template.spec: a pod spec with 'containers' is required",
    ]
