"""The real Pulumi program under the SDK's mock runtime: what `pulumi up` would register."""

from __future__ import annotations

import gc
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.cluster.target import WatchTarget
from trainjobs.core.errors import UserError
from trainjobs.deploy.program import outcome_export
from trainjobs.review.preview import PreviewResult, Registration, run_preview

CHAINER = "trainjobs:index:ChainerJob"
COMPLETION = "pulumi-python:dynamic/trainjobs:JobCompletion"
UNKNOWN = "[known after pulumi up]"


@pytest.fixture(scope="module")
def distributed() -> PreviewResult:
    return run_preview("chainermn-mnist", REPO)


def by_name(result: PreviewResult) -> dict[str, Registration]:
    return {r.name: r for r in result.resources}


def names_of(result: PreviewResult, urns: list[str]) -> set[str]:
    urn_to_name = {r.urn: r.name for r in result.resources}
    return {urn_to_name[urn] for urn in urns}


def test_component_and_children_types(distributed):
    assert [(r.type, r.name) for r in distributed.resources] == [
        (CHAINER, "chainermn-mnist"),
        ("kubernetes:core/v1:ConfigMap", "chainermn-mnist-assets"),
        ("kubernetes:core/v1:ServiceAccount", "chainermn-mnist-launcher"),
        ("kubernetes:rbac.authorization.k8s.io/v1:Role", "chainermn-mnist-launcher-role"),
        (
            "kubernetes:rbac.authorization.k8s.io/v1:RoleBinding",
            "chainermn-mnist-launcher-rolebinding",
        ),
        ("kubernetes:core/v1:Service", "chainermn-mnist"),
        ("kubernetes:apps/v1:StatefulSet", "chainermn-mnist-worker"),
        ("kubernetes:batch/v1:Job", "chainermn-mnist-master"),
        (COMPLETION, "completion"),
    ]


def test_every_kubernetes_object_is_parented_to_the_component(distributed):
    component = next(r for r in distributed.resources if r.type == CHAINER)
    assert {r.parent for r in distributed.kubernetes_objects()} == {component.urn}


def test_depends_on_edges_order_assets_then_rbac_then_workload(distributed):
    edges = {
        r.name: names_of(distributed, r.dependencies) for r in distributed.kubernetes_objects()
    }
    assert edges == {
        "chainermn-mnist-assets": set(),
        "chainermn-mnist-launcher": {"chainermn-mnist-assets"},
        "chainermn-mnist-launcher-role": {"chainermn-mnist-assets"},
        "chainermn-mnist-launcher-rolebinding": {
            "chainermn-mnist-launcher",
            "chainermn-mnist-launcher-role",
        },
        "chainermn-mnist": {"chainermn-mnist-launcher-rolebinding"},
        "chainermn-mnist-worker": {"chainermn-mnist"},
        "chainermn-mnist-master": {"chainermn-mnist-worker"},
    }


def test_pulumi_ignores_what_the_watcher_owns_so_refresh_never_revives_workers(distributed):
    """The workers' size, and the Jobs' suspension (the watcher starts and stops runs)."""
    options = {r.name: r.ignore_changes for r in distributed.kubernetes_objects()}
    assert options == {
        "chainermn-mnist-assets": [],
        "chainermn-mnist-launcher": [],
        "chainermn-mnist-launcher-role": [],
        "chainermn-mnist-launcher-rolebinding": [],
        "chainermn-mnist": [],
        "chainermn-mnist-worker": ["spec.replicas"],
        "chainermn-mnist-master": ["spec.suspend"],
    }


def test_the_master_job_is_created_suspended_and_without_its_ttl(distributed):
    """The watcher starts the run, and hands a TTL to the Jobs once the run is recorded."""
    spec = by_name(distributed)["chainermn-mnist-master"].inputs["spec"]
    assert (spec["suspend"], "ttlSecondsAfterFinished" in spec) == (True, False)


def test_jobs_are_replaced_on_any_change(distributed):
    """A Job runs once: an update could not reach one its TTL removed (pulumi-kubernetes'
    Update fails on NotFound), and Kubernetes refuses updates of many Job fields."""
    replace = {r.name: r.replace_on_changes for r in distributed.kubernetes_objects()}
    assert replace["chainermn-mnist-master"] == ["metadata", "spec"]
    assert [name for name, paths in replace.items() if paths] == ["chainermn-mnist-master"]


def test_master_job_is_deleted_before_it_is_replaced(distributed):
    flagged = [r.name for r in distributed.kubernetes_objects() if r.delete_before_replace]
    assert flagged == ["chainermn-mnist-master"]


def test_pulumi_waits_for_the_workloads_to_exist_not_to_finish_and_awaits_their_deletion(
    distributed,
):
    """waitFor, not skipAwait: skipAwait would also skip awaiting a Job's deletion, and the
    replacement of a fixed-name Job would then race its predecessor."""
    annotations = {
        r.name: r.inputs["metadata"].get("annotations") for r in distributed.kubernetes_objects()
    }
    wait = {"pulumi.com/waitFor": "jsonpath={.metadata.uid}"}
    assert annotations["chainermn-mnist-master"] == wait
    assert annotations["chainermn-mnist-worker"] == wait
    assert all("pulumi.com/skipAwait" not in (value or {}) for value in annotations.values())


def test_the_anchor_carries_the_jobs_watch_description(distributed):
    annotations = by_name(distributed)["chainermn-mnist-assets"].inputs["metadata"]["annotations"]
    target = WatchTarget.from_annotation(annotations["trainjobs.io/watch"], "test")
    assert (target.key, target.rules.master, target.anchor, target.gated) == (
        "default/chainermn-mnist",
        "chainermn-mnist-master",
        ("ConfigMap", "chainermn-mnist-assets"),
        True,
    )


def test_role_rules_registered_with_pulumi_are_exact(distributed):
    role = by_name(distributed)["chainermn-mnist-launcher-role"]
    pods = ["chainermn-mnist-worker-0", "chainermn-mnist-worker-1"]
    assert role.inputs["rules"] == [
        {"apiGroups": [""], "resourceNames": pods, "resources": ["pods"], "verbs": ["get"]},
        {
            "apiGroups": [""],
            "resourceNames": pods,
            "resources": ["pods/exec"],
            "verbs": ["create", "get"],
        },
    ]


def test_stack_exports_each_jobs_outputs(distributed):
    assert distributed.outputs == {
        "chainermn-mnist": {
            "kind": "ChainerJob",
            "masterJobName": "chainermn-mnist-master",
            "namespace": "default",
            "outcome": UNKNOWN,
            "workerPodNames": ["chainermn-mnist-worker-0", "chainermn-mnist-worker-1"],
        }
    }


def test_a_jobs_exported_outcome_names_every_field_the_watcher_records():
    outcomes = {
        "default/a": {"phase": "Succeeded", "reason": "CompletionsReached", "succeeded": 1},
        "default/b": {"phase": "Failed"},
    }

    assert outcome_export(outcomes, "default/a") == {
        "completionTime": None,
        "diagnosis": None,
        "durationSeconds": None,
        "failed": None,
        "message": None,
        "notes": None,
        "phase": "Succeeded",
        "reason": "CompletionsReached",
        "startTime": None,
        "succeeded": 1,
        "workersScaledDown": None,
    }
    assert outcome_export(None, "default/a") == dict.fromkeys(
        outcome_export(outcomes, "default/a"), None
    )


def make_project(tmp_path: Path, config: dict, jobs: dict[str, str] | None = None) -> Path:
    """A project directory with the real program and the given stack config and job files."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "__main__.py", tmp_path / "__main__.py")
    shutil.copy(REPO / "Pulumi.yaml", tmp_path / "Pulumi.yaml")
    (tmp_path / "jobs").mkdir()
    for name, text in (jobs or {}).items():
        (tmp_path / "jobs" / name).write_text(text, encoding="utf-8")
    (tmp_path / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": config}))
    return tmp_path


def job_yaml(name: str, workers: int = 1) -> str:
    source = yaml.safe_load((REPO / "jobs" / "chainermn-mnist.yaml").read_text())
    source["metadata"]["name"] = name
    source["spec"]["worker"]["replicas"] = workers
    return yaml.safe_dump(source)


def test_a_stack_of_many_jobs_from_a_glob(tmp_path):
    jobs = {f"job-{i}.yaml": job_yaml(f"job-{i}") for i in range(3)}
    project = make_project(
        tmp_path, {"trainjobs:jobs": "jobs/*.yaml", "trainjobs:namespace": "ml"}, jobs
    )
    result = run_preview("test", project)
    components = [r.name for r in result.resources if r.type == CHAINER]
    assert components == ["job-0", "job-1", "job-2"]
    assert {r.inputs["metadata"]["namespace"] for r in result.kubernetes_objects()} == {"ml"}
    assert sorted(result.outputs) == ["job-0", "job-1", "job-2"]


@pytest.fixture
def default_collector():
    saved = gc.get_threshold()
    gc.set_threshold(700, 10, 10)  # CPython's defaults
    yield
    gc.set_threshold(*saved)


def test_the_program_collects_garbage_less_often_while_it_registers(tmp_path, default_collector):
    project = make_project(tmp_path, {"trainjobs:job": "jobs/a.yaml"}, {"a.yaml": job_yaml("a")})
    run_preview("test", project)
    assert gc.get_threshold() == (50_000, 10, 10)


def test_the_program_keeps_a_larger_collector_threshold_already_set(tmp_path, default_collector):
    gc.set_threshold(80_000, 5, 7)
    project = make_project(tmp_path, {"trainjobs:job": "jobs/a.yaml"}, {"a.yaml": job_yaml("a")})
    run_preview("test", project)
    assert gc.get_threshold() == (80_000, 5, 7)


def test_a_stack_of_jobs_from_a_list(tmp_path):
    jobs = {"a.yaml": job_yaml("alpha"), "b.yaml": job_yaml("beta")}
    project = make_project(tmp_path, {"trainjobs:jobs": ["jobs/b.yaml", "jobs/a.yaml"]}, jobs)
    result = run_preview("test", project)
    assert sorted(r.name for r in result.resources if r.type == CHAINER) == ["alpha", "beta"]


def test_kubectl_image_and_wait_timeout_come_from_stack_config(tmp_path):
    config = {
        "trainjobs:job": "jobs/a.yaml",
        "trainjobs:kubectlImage": f"mirror.local/kubectl@sha256:{'0123' * 16}",
        "trainjobs:clusterWaitTimeout": "120",
    }
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    job = by_name(run_preview("test", project))["alpha-master"]
    init = job.inputs["spec"]["template"]["spec"]["initContainers"]
    assert {c["image"] for c in init} == {f"mirror.local/kubectl@sha256:{'0123' * 16}"}
    assert init[1]["env"][1] == {"name": "TRAINJOBS_WAIT_TIMEOUT_SECONDS", "value": "120"}


def preview_error(tmp_path: Path, config: dict, capsys) -> str:
    """What `trainjobs preview` of a stack with ``config`` prints, asserting it exits 2 having
    written nothing."""
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    out_dir = tmp_path / "out"
    code = main(["preview", "--stack", "test", "--project", str(project), "--out", str(out_dir)])
    assert (code, out_dir.exists()) == (2, False)
    return capsys.readouterr().err


def test_entries_of_the_jobs_list_that_are_no_strings_are_named_with_their_index(tmp_path, capsys):
    config = {"trainjobs:jobs": ["jobs/a.yaml", 1, {"a": 2}]}
    assert preview_error(tmp_path, config, capsys) == (
        "error: stack config trainjobs:jobs: [1] (int), [2] (dict) are not file names or "
        'globs; list strings, e.g. ["jobs/a.yaml", "jobs/*.yaml"]\n'
    )


def test_a_jobs_entry_holding_a_nul_is_refused(tmp_path, capsys):
    config = {"trainjobs:jobs": ["\0/*.yaml"]}
    assert preview_error(tmp_path, config, capsys) == (
        "error: stack config trainjobs:jobs: [0] '\\x00/*.yaml' holds a NUL character, which "
        "no file name can; name the job files\n"
    )


@pytest.mark.parametrize("value", ["\u00b2", "\uff11\uff12", "+5", "1_0"])
def test_a_wait_timeout_of_other_than_ascii_digits_is_refused(tmp_path, capsys, value):
    config = {"trainjobs:job": "jobs/a.yaml", "trainjobs:clusterWaitTimeout": value}
    assert preview_error(tmp_path, config, capsys) == (
        "error: stack config trainjobs:clusterWaitTimeout must be a positive number of "
        f"seconds (got {value!r})\n"
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("kubectlImage", "registry.k8s.io/kubectl:v1.34.2\nimage: evil"),
        ("kubectlImage", "Registry/Kubectl"),
        ("kubectlImage", "\x1b]0;x\x07"),
        ("tensorflowServerImage", "tensorflow/tensorflow:2.20.0 --privileged"),
    ],
)
def test_an_image_setting_that_is_no_image_reference_is_refused(tmp_path, capsys, key, value):
    config = {"trainjobs:job": "jobs/a.yaml", f"trainjobs:{key}": value}
    shown = repr(value).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert preview_error(tmp_path, config, capsys) == (
        f"error: stack config trainjobs:{key}: {shown} is not a valid image reference "
        "([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case repository); set one with "
        f"`pulumi config set trainjobs:{key} REFERENCE`\n"
    )


def test_the_stacks_warnings_show_a_keys_control_characters_escaped(tmp_path, monkeypatch):
    import pulumi

    warned: list[str] = []
    monkeypatch.setattr(pulumi.log, "warn", lambda message, resource=None: warned.append(message))
    source = yaml.safe_load(job_yaml("alpha"))
    source["spec"]["x\x1b]52;c;aGk=\x07"] = "secret"
    project = make_project(
        tmp_path, {"trainjobs:job": "jobs/a.yaml"}, {"a.yaml": yaml.safe_dump(source)}
    )
    run_preview("test", project)
    assert warned == [
        "ChainerJob alpha: spec.x\\x1b]52;c;aGk=\\x07: not a field of ChainerJob "
        "kubeflow.org/v1alpha1: Kubeflow's API server keeps or drops it and its operator "
        "ignores it, so it has no effect here"
    ]


def test_two_jobs_with_one_name_are_refused(tmp_path):
    jobs = {"a.yaml": job_yaml("same"), "b.yaml": job_yaml("same")}
    project = make_project(tmp_path, {"trainjobs:jobs": "jobs/*.yaml"}, jobs)
    with pytest.raises(UserError) as raised:
        run_preview("test", project)
    assert str(raised.value) == (
        "jobs/b.yaml: invalid job spec (1 problem(s))\n"
        "  metadata.name: job 'same' is also defined in jobs/a.yaml"
    )


def test_a_stack_without_a_job_setting_is_a_clear_error(tmp_path):
    project = make_project(tmp_path, {"trainjobs:namespace": "ml"})
    with pytest.raises(UserError) as raised:
        run_preview("test", project)
    assert str(raised.value) == (
        "stack config: set trainjobs:job to a job spec file (e.g. jobs/chainermn-mnist.yaml) "
        "or trainjobs:jobs to a list of files or globs"
    )


def test_a_glob_matching_nothing_is_a_clear_error(tmp_path):
    project = make_project(tmp_path, {"trainjobs:jobs": "jobs/nothing-*.yaml"})
    with pytest.raises(UserError, match=r"trainjobs:jobs: 'jobs/nothing-\*.yaml' matches no files"):
        run_preview("test", project)


def test_preview_of_an_invalid_job_exits_2_and_writes_nothing(tmp_path, capsys):
    bad = job_yaml("Bad_Name")
    project = make_project(tmp_path, {"trainjobs:job": "jobs/a.yaml"}, {"a.yaml": bad})
    out_dir = tmp_path / "out"
    code = main(["preview", "--stack", "test", "--project", str(project), "--out", str(out_dir)])
    stderr = capsys.readouterr().err
    assert code == 2
    assert "  metadata.name: 'Bad_Name' is not a valid job name" in stderr
    assert "Traceback" not in stderr
    assert not out_dir.exists()


def test_preview_writes_each_object_and_a_graph_summary(tmp_path, capsys):
    out_dir = tmp_path / "preview"
    assert (
        main(
            ["preview", "--stack", "chainermn-mnist", "--project", str(REPO), "--out", str(out_dir)]
        )
        == 0
    )
    assert sorted(p.name for p in out_dir.iterdir()) == [
        ".trainjobs-output",
        "01-ConfigMap-chainermn-mnist-assets.yaml",
        "02-ServiceAccount-chainermn-mnist-launcher.yaml",
        "03-Role-chainermn-mnist-launcher-role.yaml",
        "04-RoleBinding-chainermn-mnist-launcher-rolebinding.yaml",
        "05-Service-chainermn-mnist.yaml",
        "06-StatefulSet-chainermn-mnist-worker.yaml",
        "07-Job-chainermn-mnist-master.yaml",
        "graph.json",
    ]
    summary = json.loads((out_dir / "graph.json").read_text())
    worker = next(r for r in summary["resources"] if r["name"] == "chainermn-mnist-worker")
    assert worker == {
        "type": "kubernetes:apps/v1:StatefulSet",
        "name": "chainermn-mnist-worker",
        "parent": f"{CHAINER}::chainermn-mnist",
        "dependsOn": ["kubernetes:core/v1:Service::chainermn-mnist"],
        "ignoreChanges": ["spec.replicas"],
        "replaceOnChanges": [],
        "deleteBeforeReplace": False,
    }
    assert "stack chainermn-mnist: 9 resources, 7 Kubernetes objects" in capsys.readouterr().out


def test_preview_is_deterministic(tmp_path):
    first, second = tmp_path / "a", tmp_path / "b"
    for out in (first, second):
        assert (
            main(
                ["preview", "--stack", "chainermn-mnist", "--project", str(REPO), "--out", str(out)]
            )
            == 0
        )
    assert {p.name: p.read_text() for p in first.iterdir()} == {
        p.name: p.read_text() for p in second.iterdir()
    }


def test_each_kind_is_its_own_component_type():
    components = {
        stack: [(r.type, r.name) for r in run_preview(stack, REPO).resources if not r.custom]
        for stack in ("tf-mnist", "pytorch-mnist")
    }
    assert components == {
        "tf-mnist": [("trainjobs:index:TFJob", "tf-mnist")],
        "pytorch-mnist": [("trainjobs:index:PyTorchJob", "pytorch-mnist")],
    }


def test_tf_job_stack_exports_the_chief_as_the_job_to_watch():
    outputs = run_preview("tf-mnist", REPO).outputs
    outputs["tf-mnist"].pop("outcome")
    assert outputs == {
        "tf-mnist": {
            "kind": "TFJob",
            "masterJobName": "tf-mnist-chief-0",
            "namespace": "default",
            "workerPodNames": ["tf-mnist-worker-0", "tf-mnist-worker-1", "tf-mnist-ps-0"],
        }
    }


# The completion watcher: one for the stack, watching every job at once


def watched_jobs(result: PreviewResult) -> list[dict]:
    return by_name(result)["completion"].inputs["jobs"]


def test_watcher_starts_after_every_workload_and_anchor(distributed):
    watcher = by_name(distributed)["completion"]
    assert watcher.parent.endswith("::trainjobs::pulumi:pulumi:Stack::trainjobs-chainermn-mnist")
    assert names_of(distributed, watcher.dependencies) == {
        "chainermn-mnist-assets",
        "chainermn-mnist-master",
        "chainermn-mnist-worker",
    }


def test_watcher_inputs_describe_the_job_and_its_workers_with_their_size(distributed):
    inputs = by_name(distributed)["completion"].inputs
    assert {k: v for k, v in inputs.items() if k not in ("__provider", "jobs")} == {
        "fail_on_failure": True,
        "timeout_seconds": 86400,
        "mode": "finish",
    }
    [job] = inputs["jobs"]
    job["target"].pop("run")
    assert job == {
        "target": {
            "anchor": ["ConfigMap", "chainermn-mnist-assets"],
            "clean_pod_policy": "Running",
            "gated": True,
            "kind": "ChainerJob",
            "name": "chainermn-mnist",
            "namespace": "default",
            "success_any": False,
            "success_jobs": ["chainermn-mnist-master"],
            "suspend": False,
            "worker_jobs": [],
            "workers": [{"kind": "StatefulSet", "name": "chainermn-mnist-worker", "replicas": 2}],
        },
        "uids": {},  # known once the Jobs exist
    }


def test_a_stack_of_many_jobs_has_one_watcher_for_all_of_them(tmp_path):
    jobs = {f"job-{i}.yaml": job_yaml(f"job-{i}") for i in range(6)}
    project = make_project(tmp_path, {"trainjobs:jobs": "jobs/*.yaml"}, jobs)
    result = run_preview("test", project)
    assert [r.name for r in result.resources if r.type == COMPLETION] == ["completion"]
    assert [job["target"]["name"] for job in watched_jobs(result)] == [f"job-{i}" for i in range(6)]


def test_watch_false_creates_no_watcher_and_leaves_jobs_unsuspended(tmp_path):
    config = {"trainjobs:job": "jobs/a.yaml", "trainjobs:watch": "false"}
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    result = run_preview("test", project)
    assert [r.name for r in result.resources if r.type == COMPLETION] == []
    assert "outcome" not in result.outputs["alpha"]
    master = by_name(result)["alpha-master"]
    assert ("suspend" in master.inputs["spec"], master.ignore_changes) == (False, [])


def test_watch_timeout_and_kubeconfig_come_from_stack_config_and_the_kubeconfig_stays_secret(
    tmp_path,
):
    config = {
        "trainjobs:job": "jobs/a.yaml",
        "trainjobs:watchTimeout": "90m",
        "kubernetes:kubeconfig": "apiVersion: v1\nusers: [{name: admin, user: {token: s3cr3t}}]",
    }
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    result = run_preview("test", project)
    inputs = by_name(result)["completion"].inputs
    assert (inputs["timeout_seconds"], inputs["kubeconfig"]) == (5400, "[secret]")
    out = tmp_path / "out"
    assert main(["preview", "--stack", "test", "--project", str(project), "--out", str(out)]) == 0
    assert not [p.name for p in out.iterdir() if "s3cr3t" in p.read_text()]


@pytest.mark.parametrize("namespace", ["Team_A", "../kube-system", "a\nb"])
def test_an_invalid_stack_namespace_is_refused_before_anything_is_registered(
    tmp_path, capsys, namespace
):
    config = {"trainjobs:job": "jobs/a.yaml", "trainjobs:namespace": namespace}
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    out_dir = tmp_path / "out"
    code = main(["preview", "--stack", "test", "--project", str(project), "--out", str(out_dir)])
    message = capsys.readouterr().err
    assert code == 2
    assert message.startswith(
        f"error: stack config trainjobs:namespace: Invalid value: {json.dumps(namespace)}: a "
        "lowercase RFC 1123 label must consist of"
    )
    assert message.endswith(
        "; set a valid one with `pulumi config set trainjobs:namespace team-a`\n"
    )
    assert len(message.splitlines()) == 1
    assert not out_dir.exists()


def test_an_invalid_watch_timeout_is_a_clear_error(tmp_path):
    config = {"trainjobs:job": "jobs/a.yaml", "trainjobs:watchTimeout": "soon"}
    project = make_project(tmp_path, config, {"a.yaml": job_yaml("alpha")})
    with pytest.raises(UserError, match="trainjobs:watchTimeout"):
        run_preview("test", project)


def test_tf_watcher_decides_by_the_chief_and_watches_every_other_job():
    result = run_preview("tf-mnist", REPO)
    target = watched_jobs(result)[0]["target"]
    assert (target["success_jobs"], target["worker_jobs"], target["anchor"]) == (
        ["tf-mnist-chief-0"],
        ["tf-mnist-worker-0", "tf-mnist-worker-1", "tf-mnist-ps-0"],
        ["Service", "tf-mnist-chief-0"],
    )
    ignored = {r.name: r.ignore_changes for r in result.kubernetes_objects() if r.ignore_changes}
    # Every Job: the watcher starts them, and stops them (the chief too, when a worker fails).
    assert ignored == {
        "tf-mnist-worker-0": ["spec.suspend"],
        "tf-mnist-worker-1": ["spec.suspend"],
        "tf-mnist-ps-0": ["spec.suspend"],
        "tf-mnist-chief-0": ["spec.suspend"],
    }


def test_an_elastic_pytorch_job_is_watched_as_torchruns_group(tmp_path):
    spec = (REPO / "jobs" / "pytorch-elastic.yaml").read_text()
    project = make_project(tmp_path, {"trainjobs:job": "jobs/e.yaml"}, {"e.yaml": spec})
    target = watched_jobs(run_preview("test", project))[0]["target"]
    assert (target["success_jobs"], target["success_any"], target["elastic"]) == (
        ["pytorch-elastic-worker-0", "pytorch-elastic-worker-1"],
        True,
        {"min_members": 2, "restart_never": False},
    )


def test_a_ttl_is_left_to_the_watcher_and_refused_without_one(tmp_path):
    spec = yaml.safe_load((REPO / "jobs" / "pytorch-elastic.yaml").read_text())
    spec["spec"]["runPolicy"]["ttlSecondsAfterFinished"] = 60
    jobs = {"e.yaml": yaml.safe_dump(spec)}
    watched = run_preview(
        "test", make_project(tmp_path / "a", {"trainjobs:job": "jobs/e.yaml"}, jobs)
    )
    target = watched_jobs(watched)[0]["target"]
    assert target["ttl_seconds_after_finished"] == 60
    assert (
        "ttlSecondsAfterFinished" not in by_name(watched)["pytorch-elastic-worker-0"].inputs["spec"]
    )
    config = {"trainjobs:job": "jobs/e.yaml", "trainjobs:watch": "false"}
    unwatched = run_preview("test", make_project(tmp_path / "b", config, jobs))
    worker = by_name(unwatched)["pytorch-elastic-worker-0"].inputs["spec"]
    assert ("ttlSecondsAfterFinished" in worker, "suspend" in worker) == (False, False)


def test_a_duplicate_name_is_reported_against_the_right_files_when_another_file_is_invalid(
    tmp_path,
):
    jobs = {"a.yaml": "kind: Nope\n", "b.yaml": job_yaml("same"), "c.yaml": job_yaml("same")}
    project = make_project(tmp_path, {"trainjobs:jobs": "jobs/*.yaml"}, jobs)
    with pytest.raises(UserError) as raised:
        run_preview("test", project)
    assert str(raised.value).splitlines()[-2:] == [
        "jobs/c.yaml: invalid job spec (1 problem(s))",
        "  metadata.name: job 'same' is also defined in jobs/b.yaml",
    ]


def test_a_kueue_queued_job_is_one_jobset_resource_replaced_whole(tmp_path):
    sample = REPO / "tests" / "corpus" / "pytorchjob-v1-kueue-sample-pytorchjob.yaml"
    project = make_project(
        tmp_path, {"trainjobs:job": "jobs/queued.yaml"}, {"queued.yaml": sample.read_text()}
    )

    result = run_preview("test", project)

    objects = [(r.type, r.name, r.delete_before_replace) for r in result.kubernetes_objects()]
    assert objects == [
        ("kubernetes:core/v1:Service", "pytorch-simple-master-0", False),
        ("kubernetes:core/v1:Service", "pytorch-simple-worker-0", False),
        ("kubernetes:jobset.x-k8s.io/v1alpha2:JobSet", "pytorch-simple", True),
    ]
    queued = [
        r.name
        for r in result.kubernetes_objects()
        if "kueue.x-k8s.io/queue-name" in (r.inputs["metadata"].get("labels") or {})
    ]
    assert queued == ["pytorch-simple"]


@pytest.mark.parametrize(
    "stack", sorted(p.stem.removeprefix("Pulumi.") for p in REPO.glob("Pulumi.*.yaml"))
)
def test_no_workload_of_any_stack_skips_the_await_of_its_deletion(stack):
    """A replaced workload keeps its name: pulumi-kubernetes must wait for the old object to
    be gone before creating the new one, which skipAwait would turn off for Jobs and
    StatefulSets; their create await is replaced by waitFor instead.

    A JobSet (a TrainJob's or a Kueue-queued job's workload) is a custom resource: its
    deletion is awaited whatever its annotations (pulumi-kubernetes
    provider/pkg/metadata/overrides.go ``DeletedCondition``: only the built-in kinds of
    ``allowsSkipAwaitWithDelete`` honour skipAwait on delete), and without waitFor its
    create is not awaited (``ReadyCondition``: an immediate condition unless
    PULUMI_K8S_AWAIT_ALL is set). It carries neither annotation."""
    workloads = [
        r
        for r in run_preview(stack, REPO).kubernetes_objects()
        if r.inputs["kind"] in ("Job", "StatefulSet", "JobSet")
    ]
    assert workloads
    expected = {
        "Job": (None, "jsonpath={.metadata.uid}"),
        "StatefulSet": (None, "jsonpath={.metadata.uid}"),
        "JobSet": (None, None),
    }
    assert {
        r.name: (
            (r.inputs["metadata"].get("annotations") or {}).get("pulumi.com/skipAwait"),
            (r.inputs["metadata"].get("annotations") or {}).get("pulumi.com/waitFor"),
        )
        for r in workloads
    } == {r.name: expected[r.inputs["kind"]] for r in workloads}


# ---------------------------------------------------------------------------------------------
# trainjobs:infraStack: the pool's profile and the image pins through a StackReference

INFRA_STACK = "org/trainjobs-infra/gpu-a100"
CHAINERMN_IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/trainjobs/chainermn:7.8.1-cuda12.2"
PINNED = CHAINERMN_IMAGE.split(":7.8.1")[0] + "@sha256:" + "ab" * 32


@pytest.fixture(scope="module")
def infra_outputs() -> dict:
    """What the example infra stack gpu-a100 exports (its own offline preview)."""
    return run_preview("gpu-a100", REPO / "infra").outputs


def gpu_job_project(tmp_path: Path, config: dict, references: dict | None) -> Path:
    project = make_project(tmp_path, config)
    shutil.copy(REPO / "jobs" / "chainermn-gpu.yaml", project / "jobs")
    if references is not None:
        (project / "stack-references.json").write_text(json.dumps(references))
    return project


def test_a_stack_naming_the_infra_stack_gets_the_pools_profile_and_its_image_pins(
    tmp_path, infra_outputs
):
    references = {
        INFRA_STACK: {
            "schedulingProfiles": infra_outputs["schedulingProfiles"],
            "images": {CHAINERMN_IMAGE: PINNED},
        }
    }
    config = {
        "trainjobs:job": "jobs/chainermn-gpu.yaml",
        "trainjobs:infraStack": INFRA_STACK,
        "trainjobs:gpuPoolName": "a100",
    }
    result = run_preview("test", gpu_job_project(tmp_path / "ref", config, references))
    reference = by_name(result)[INFRA_STACK]
    assert (reference.type, reference.inputs) == (
        "pulumi:pulumi:StackReference",
        {"name": INFRA_STACK},
    )
    objects = {r.name: r.inputs for r in result.kubernetes_objects()}
    for name in ("chainermn-gpu-worker", "chainermn-gpu-master"):
        pod = objects[name]["spec"]["template"]["spec"]
        assert pod["tolerations"] == [
            {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}
        ]
        assert pod["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}
        assert pod["containers"][0]["image"] == PINNED
    # The same objects as the profile and pins copied into the stack's config by hand.
    copied = {
        "trainjobs:job": "jobs/chainermn-gpu.yaml",
        "trainjobs:gpuPool": infra_outputs["schedulingProfiles"]["a100"],
        "trainjobs:images": {CHAINERMN_IMAGE: PINNED},
    }
    by_hand = run_preview("test", gpu_job_project(tmp_path / "copied", copied, None))
    assert [(r.name, r.inputs) for r in by_hand.kubernetes_objects()] == [
        (r.name, r.inputs) for r in result.kubernetes_objects()
    ]


def test_the_only_pool_of_the_infra_stack_needs_no_name(tmp_path, infra_outputs):
    references = {INFRA_STACK: {"schedulingProfiles": infra_outputs["schedulingProfiles"]}}
    config = {"trainjobs:job": "jobs/chainermn-gpu.yaml", "trainjobs:infraStack": INFRA_STACK}
    result = run_preview("test", gpu_job_project(tmp_path, config, references))
    pod = by_name(result)["chainermn-gpu-master"].inputs["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"trainjobs.io/gpu-pool": "a100"}


@pytest.mark.parametrize(
    ("config", "references", "message"),
    [
        (
            {"trainjobs:gpuPoolName": "h100"},
            {INFRA_STACK: {"schedulingProfiles": {"a100": {}}}},
            "trainjobs:gpuPoolName: stack org/trainjobs-infra/gpu-a100 has no GPU pool 'h100' "
            "(it has a100)",
        ),
        (
            {},
            {INFRA_STACK: {}},
            "stack org/trainjobs-infra/gpu-a100 exports no GPU pool (schedulingProfiles is "
            "None); deploy the infra stack with trainjobs-infra:pools first",
        ),
        (
            {
                "trainjobs:gpuPool": yaml.safe_load(
                    (REPO / "Pulumi.chainermn-gpu.yaml").read_text()
                )["config"]["trainjobs:gpuPool"]
            },
            {},
            "stack config: set trainjobs:gpuPool or trainjobs:infraStack, not both (the infra "
            "stack exports the pool's profile)",
        ),
        (
            {},
            {},
            "stack org/trainjobs-infra/gpu-a100 exports no GPU pool (schedulingProfiles is "
            "None); deploy the infra stack with trainjobs-infra:pools first\n(offline preview: "
            "the program references stack org/trainjobs-infra/gpu-a100; put its outputs, as "
            "`pulumi stack output --stack NAME --json` prints them, under its name in "
            "stack-references.json)",
        ),
    ],
    ids=["unknown-pool", "no-pools", "both-forms", "not-in-the-offline-file"],
)
def test_infra_stack_mistakes_are_clear_errors(tmp_path, config, references, message):
    config = {
        "trainjobs:job": "jobs/chainermn-gpu.yaml",
        "trainjobs:infraStack": INFRA_STACK,
        **config,
    }
    with pytest.raises(UserError) as error:
        run_preview("test", gpu_job_project(tmp_path, config, references))
    assert str(error.value) == message


def test_a_pool_name_without_an_infra_stack_is_a_clear_error(tmp_path):
    config = {"trainjobs:job": "jobs/chainermn-gpu.yaml", "trainjobs:gpuPoolName": "a100"}
    with pytest.raises(UserError) as error:
        run_preview("test", gpu_job_project(tmp_path, config, None))
    assert str(error.value) == (
        "stack config trainjobs:gpuPoolName names a pool of trainjobs:infraStack; set "
        "trainjobs:infraStack too (e.g. org/trainjobs-infra/gpu-a100)"
    )


def test_preflight_reads_the_pool_of_the_infra_stack_as_of_the_config(tmp_path, infra_outputs):
    """`trainjobs preflight` checks the same pool whichever form names it."""
    from trainjobs.cli.preflight import _settings_for_stack

    references = {INFRA_STACK: {"schedulingProfiles": infra_outputs["schedulingProfiles"]}}
    config = {"trainjobs:job": "jobs/chainermn-gpu.yaml", "trainjobs:infraStack": INFRA_STACK}
    copied = {
        "trainjobs:job": "jobs/chainermn-gpu.yaml",
        "trainjobs:gpuPool": infra_outputs["schedulingProfiles"]["a100"],
    }
    from_reference, _ = _settings_for_stack(
        "test", gpu_job_project(tmp_path / "a", config, references)
    )
    by_hand, _ = _settings_for_stack("test", gpu_job_project(tmp_path / "b", copied, None))
    assert from_reference == by_hand
    assert from_reference.instance_types == ("p4d.24xlarge",)
