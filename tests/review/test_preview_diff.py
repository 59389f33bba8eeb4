"""Preview diffs: what `pulumi up` would do to each resource, judged from two offline previews."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.kubefake import JOB_IMMUTABLE
from trainjobs.cli import main
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE
from trainjobs.deploy.component import WORKLOAD_REPLACE_ON
from trainjobs.deploy.watch_target import run_key
from trainjobs.kinds.registry import parse_job
from trainjobs.review.compare import Comparison, compare
from trainjobs.review.properties import apply_ignore_changes, format_path
from trainjobs.review.replacement import REPLACE_ON_CHANGE, ProviderSettings
from trainjobs.review.report import render
from trainjobs.review.snapshot import Resource, Snapshot, load_preview

IMAGE = "trainjobs/chainermn:7.8.1"
NEW_IMAGE = "trainjobs/chainermn:7.9.0"


def chainer_job(
    name: str = "demo", image: str = IMAGE, workers: int = 2, ranks: int | None = None
) -> str:
    """A ChainerJob whose mpiexec command names the rank count (workers + master by default)."""
    ranks = workers + 1 if ranks is None else ranks
    command = ["mpiexec", "-n", str(ranks), "python3", "/train_mnist.py"]
    return yaml.safe_dump(
        {
            "apiVersion": "kubeflow.org/v1alpha1",
            "kind": "ChainerJob",
            "metadata": {"name": name},
            "spec": {
                "master": {
                    "template": {"spec": {"containers": [{"image": image, "command": command}]}}
                },
                "worker": {
                    "replicas": workers,
                    "template": {"spec": {"containers": [{"image": image}]}},
                },
            },
        }
    )


def write_project(root: Path, jobs: dict[str, str], config: dict[str, Any] | None = None) -> Path:
    """A project with the real program, stack `test` running every file in jobs/."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "__main__.py", root / "__main__.py")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    shutil.rmtree(root / "jobs", ignore_errors=True)
    (root / "jobs").mkdir()
    for name, text in jobs.items():
        (root / "jobs" / name).write_text(text, encoding="utf-8")
    stack = {"trainjobs:jobs": "jobs/*.yaml", **(config or {})}
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": stack}), encoding="utf-8")
    return root


def preview(project: Path, out: Path, *extra: str) -> int:
    return main(
        ["preview", "--stack", "test", "--project", str(project), "--out", str(out), *extra]
    )


def compare_projects(
    tmp_path: Path,
    before: dict[str, str],
    after: dict[str, str],
    before_config: dict[str, Any] | None = None,
    after_config: dict[str, Any] | None = None,
) -> Comparison:
    project = tmp_path / "project"
    write_project(project, before, before_config)
    assert preview(project, tmp_path / "base") == 0
    write_project(project, after, after_config)
    assert preview(project, tmp_path / "head") == 0
    return compare(
        load_preview(tmp_path / "base"),
        load_preview(tmp_path / "head"),
        ProviderSettings.from_stack(project, "test"),
    )


def changed(comparison: Comparison) -> dict[str, str]:
    """Every resource that is not plainly unchanged, with its operation."""
    return {r.label: r.operation for r in comparison.notable}


def report_of(stdout: str) -> str:
    return stdout[stdout.index("### trainjobs preview diff") :]


# Golden: what a job change does.


def test_changing_the_image_replaces_the_master_job_and_updates_the_workers(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job()}, {"demo.yaml": chainer_job(image=NEW_IMAGE)}
    )
    assert changed(comparison) == {
        # The anchor's watch description names the run, which changed.
        "ConfigMap default/demo-assets": "update",
        "StatefulSet default/demo-worker": "update",
        "Job default/demo-master": "replace",
        # One watcher for the stack: the replaced Job is a new run it watches in place.
        "JobCompletion completion": "update",
    }


def run_of(text: str) -> str:
    return run_key(parse_job(yaml.safe_load(text), "demo.yaml"))


def test_the_reasons_name_the_properties_and_the_replacement_rule(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job()}, {"demo.yaml": chainer_job(image=NEW_IMAGE)}
    )
    assert {r.label: r.reason for r in comparison.notable} == {
        "StatefulSet default/demo-worker": (
            f"`spec.template.spec.containers[0].image` {IMAGE} → {NEW_IMAGE}"
        ),
        "Job default/demo-master": (
            f"`spec.template` changed (`spec.template.spec.containers[0].image` {IMAGE} → "
            f"{NEW_IMAGE}): pulumi-kubernetes replaces a batch/v1 Job when it changes; "
            "the old object is deleted first (same name)"
        ),
        "ConfigMap default/demo-assets": '`metadata.annotations["trainjobs.io/watch"]` updated',
        "JobCompletion completion": (
            f"`jobs[0].target.run` {run_of(chainer_job())} → "
            f"{run_of(chainer_job(image=NEW_IMAGE))}, `jobs[0].uids.demo-master` (uid of the "
            "old demo-master) → (uid of the new demo-master)"
        ),
    }


def test_changing_worker_replicas_replaces_the_assets_and_updates_the_role(tmp_path):
    # The master Job is replaced because its mpiexec command names the rank count (-n 4);
    # the hostfile and the cluster waiter live in the assets ConfigMap.
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job(workers=2)}, {"demo.yaml": chainer_job(workers=3)}
    )
    assert changed(comparison) == {
        "ConfigMap default/demo-assets": "replace",
        "Role default/demo-launcher-role": "update",
        "StatefulSet default/demo-worker": "same",
        "Job default/demo-master": "replace",
        "JobCompletion completion": "update",
    }


def test_a_replica_change_alone_leaves_the_master_job_unchanged(tmp_path):
    # Same mpiexec command: the master reads the new hostfile from the assets ConfigMap.
    comparison = compare_projects(
        tmp_path,
        {"demo.yaml": chainer_job(workers=2, ranks=3)},
        {"demo.yaml": chainer_job(workers=3, ranks=3)},
    )
    assert changed(comparison) == {
        "ConfigMap default/demo-assets": "replace",
        "Role default/demo-launcher-role": "update",
        "StatefulSet default/demo-worker": "same",
        # The watcher owns the workers' size: a new size is a new run, which it scales to.
        "JobCompletion completion": "update",
    }


def test_a_replica_change_is_held_back_by_the_statefulsets_ignore_changes(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job(workers=2)}, {"demo.yaml": chainer_job(workers=3)}
    )
    workers = next(r for r in comparison.resources if r.label == "StatefulSet default/demo-worker")
    assert (workers.operation, workers.changes) == ("same", ())
    assert [(format_path(c.path), c.old, c.new) for c in workers.ignored] == [
        ("spec.replicas", 2, 3)
    ]


def test_the_roles_resource_names_gain_the_new_worker_pod(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job(workers=2)}, {"demo.yaml": chainer_job(workers=3)}
    )
    role = next(r for r in comparison.resources if r.label == "Role default/demo-launcher-role")
    assert [(format_path(c.path), c.kind, c.new) for c in role.changes] == [
        ("rules[0].resourceNames[2]", "add", "demo-worker-2"),
        ("rules[1].resourceNames[2]", "add", "demo-worker-2"),
    ]


def test_the_report_explains_the_ignored_replica_change_and_how_to_scale(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job(workers=2)}, {"demo.yaml": chainer_job(workers=3)}
    )
    report = render(comparison, base="main", head="pr", full_command="trainjobs diff")
    assert (
        "| `StatefulSet default/demo-worker` | same (change ignored) | only ignored properties "
        "changed: `spec.replicas` 2 → 3 |"
    ) in report
    assert (
        "- `StatefulSet default/demo-worker`: `spec.replicas` is not applied (`ignoreChanges`); "
        "the workers keep their live count. To resize a running job: "
        "`kubectl scale statefulset demo-worker --replicas=3 -n default`"
    ) in report


def test_config_map_data_updates_in_place_when_the_stack_makes_config_maps_mutable(tmp_path):
    mutable = {"kubernetes:enableConfigMapMutable": "true"}
    comparison = compare_projects(
        tmp_path,
        {"demo.yaml": chainer_job(workers=2)},
        {"demo.yaml": chainer_job(workers=3)},
        mutable,
        mutable,
    )
    assert changed(comparison)["ConfigMap default/demo-assets"] == "update"


def test_renaming_a_job_deletes_its_objects_and_creates_new_ones(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job("demo")}, {"demo.yaml": chainer_job("renamed")}
    )
    assert changed(comparison) == {
        "ChainerJob renamed": "create",
        "ConfigMap default/renamed-assets": "create",
        "ServiceAccount default/renamed-launcher": "create",
        "Role default/renamed-launcher-role": "create",
        "RoleBinding default/renamed-launcher-rolebinding": "create",
        "Service default/renamed": "create",
        "StatefulSet default/renamed-worker": "create",
        "Job default/renamed-master": "create",
        "JobCompletion completion": "update",
        "ChainerJob demo": "delete",
        "ConfigMap default/demo-assets": "delete",
        "ServiceAccount default/demo-launcher": "delete",
        "Role default/demo-launcher-role": "delete",
        "RoleBinding default/demo-launcher-rolebinding": "delete",
        "Service default/demo": "delete",
        "StatefulSet default/demo-worker": "delete",
        "Job default/demo-master": "delete",
    }


def test_moving_a_job_to_another_namespace_replaces_each_object(tmp_path):
    comparison = compare_projects(
        tmp_path,
        {"demo.yaml": chainer_job()},
        {"demo.yaml": chainer_job()},
        {"trainjobs:namespace": "default"},
        {"trainjobs:namespace": "ml"},
    )
    assert {r.label: (r.operation, r.delete_before_replace) for r in comparison.notable} == {
        "ConfigMap ml/demo-assets": ("replace", False),
        "ServiceAccount ml/demo-launcher": ("replace", False),
        "Role ml/demo-launcher-role": ("replace", False),
        "RoleBinding ml/demo-launcher-rolebinding": ("replace", False),
        "Service ml/demo": ("replace", False),
        "StatefulSet ml/demo-worker": ("replace", False),
        # The component asks for it: a Job with a fixed name must go before its successor.
        "Job ml/demo-master": ("replace", True),
        "JobCompletion completion": ("update", False),
    }


def test_objects_are_matched_by_identity_not_by_file_number(tmp_path):
    # alpha's objects sort first, so every file of beta gets a new number.
    comparison = compare_projects(
        tmp_path,
        {"b.yaml": chainer_job("beta")},
        {"a.yaml": chainer_job("alpha"), "b.yaml": chainer_job("beta")},
    )
    assert changed(comparison) == {
        "ChainerJob alpha": "create",
        "ConfigMap default/alpha-assets": "create",
        "ServiceAccount default/alpha-launcher": "create",
        "Role default/alpha-launcher-role": "create",
        "RoleBinding default/alpha-launcher-rolebinding": "create",
        "Service default/alpha": "create",
        "StatefulSet default/alpha-worker": "create",
        "Job default/alpha-master": "create",
        "JobCompletion completion": "update",
    }


def test_an_unchanged_stack_reports_no_changes_and_passes_expect_no_changes(tmp_path, capsys):
    project = write_project(tmp_path / "project", {"demo.yaml": chainer_job()})
    assert preview(project, tmp_path / "base") == 0
    code = preview(
        project, tmp_path / "head", "--against", str(tmp_path / "base"), "--expect-no-changes"
    )
    report = report_of(capsys.readouterr().out)
    assert code == 0
    assert "`. No changes. 9 resources: 9 unchanged." in report
    assert "| resource | operation | why |" not in report


def test_expect_no_changes_exits_1_when_anything_changes(tmp_path, capsys):
    project = write_project(tmp_path / "project", {"demo.yaml": chainer_job()})
    assert preview(project, tmp_path / "base") == 0
    write_project(project, {"demo.yaml": chainer_job(image=NEW_IMAGE)})
    code = preview(
        project, tmp_path / "head", "--against", str(tmp_path / "base"), "--expect-no-changes"
    )
    assert code == 1
    assert "9 resources: 3 to update, 1 to replace, 5 unchanged." in capsys.readouterr().out


def test_only_ignored_changes_pass_expect_no_changes_as_in_pulumi():
    base = Snapshot("s", {"w": statefulset_resource({"replicas": 2})})
    head = Snapshot("s", {"w": statefulset_resource({"replicas": 5})})
    comparison = compare(base, head)
    assert (comparison.has_changes, comparison.counts["same"]) == (False, 1)


# Reports for pull requests.


def test_a_many_job_stack_with_one_changed_job_gives_a_short_report(tmp_path, capsys):
    # 20 jobs here; bench/program_cost.py previews 100.
    jobs = {f"job-{i:03d}.yaml": chainer_job(f"job-{i:03d}") for i in range(20)}
    project = write_project(tmp_path / "project", jobs)
    assert preview(project, tmp_path / "base") == 0
    jobs["job-012.yaml"] = chainer_job("job-012", image=NEW_IMAGE)
    write_project(project, jobs)
    assert preview(project, tmp_path / "head", "--against", str(tmp_path / "base")) == 0
    report = report_of(capsys.readouterr().out)
    assert len(report.encode()) < 64 * 1024
    assert "161 resources: 3 to update, 1 to replace, 157 unchanged." in report
    rows = [line.split(" | ")[0] for line in report.splitlines() if line.startswith("| `")]
    assert rows == [
        "| `ConfigMap default/job-012-assets`",
        "| `StatefulSet default/job-012-worker`",
        "| `Job default/job-012-master`",
        "| `JobCompletion completion`",
    ]
    assert report.count("<details>") == 4
    assert "omitted" not in report
    # The unchanged jobs are counted, never listed.
    assert [f"job-{i:03d}-" for i in range(20) if f"job-{i:03d}-" in report] == ["job-012-"]


def test_an_oversized_report_is_capped_and_says_how_many_diffs_it_left_out(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job("demo")}, {"demo.yaml": chainer_job("renamed")}
    )
    command = "trainjobs diff --stack test --base main --max-bytes 0"
    report = render(comparison, base="main", head="pr", full_command=command, max_bytes=8000)
    shown = report.count("<details>")
    omitted = re.search(
        r"\*\*(\d+) of 16 diffs omitted\*\* to keep this report under 8000 bytes\. "
        r"See every diff: `trainjobs diff --stack test --base main --max-bytes 0`",
        report,
    )
    assert len(report.encode()) <= 8000
    assert omitted is not None
    assert shown + int(omitted.group(1)) == 16  # 14 objects, the watcher, the stack outputs


def test_diffs_are_folded_unified_yaml_diffs(tmp_path):
    comparison = compare_projects(
        tmp_path, {"demo.yaml": chainer_job()}, {"demo.yaml": chainer_job(image=NEW_IMAGE)}
    )
    report = render(comparison, base="main", head="pr", full_command="trainjobs diff")
    assert (
        "<details><summary><code>update</code> StatefulSet default/demo-worker</summary>\n\n"
        "```diff\n"
        "--- base/StatefulSet/default/demo-worker\n"
        "+++ head/StatefulSet/default/demo-worker\n"
    ) in report
    assert f"-        image: {IMAGE}\n+        image: {NEW_IMAGE}\n" in report


# Against a git ref.


def git(repo: Path, *args: str) -> None:
    subprocess.run(
        [
            "git",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@example.com",
            "-c",
            "commit.gpgsign=false",
            *args,
        ],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def git_project(root: Path, jobs: dict[str, str], config: dict[str, Any] | None = None) -> Path:
    write_project(root, jobs, config)
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "base")
    return root


def diff(repo: Path, *extra: str) -> int:
    return main(["diff", "--stack", "test", "--base", "HEAD", "--project", str(repo), *extra])


def test_diff_against_a_git_ref_reports_the_working_tree_change(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    write_project(repo, {"demo.yaml": chainer_job(image=NEW_IMAGE)})
    out = tmp_path / "report.md"
    assert diff(repo, "--out", str(out)) == 0
    assert capsys.readouterr().out == (
        f"stack test (HEAD -> working tree): 3 update, 1 replace, 5 same\nwrote {out}\n"
    )
    rows = [
        line.split(" | ")[:2] for line in out.read_text().splitlines() if line.startswith("| `")
    ]
    assert rows == [
        ["| `ConfigMap default/demo-assets`", "update"],
        ["| `StatefulSet default/demo-worker`", "update"],
        ["| `Job default/demo-master`", "replace"],
        ["| `JobCompletion completion`", "update"],
    ]


def test_diff_against_an_unchanged_ref_passes_expect_no_changes(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    assert diff(repo, "--expect-no-changes") == 0
    assert "`HEAD` → `working tree`. No changes." in capsys.readouterr().out


def test_diff_evaluates_each_side_with_its_own_components(tmp_path):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    shutil.copytree(
        REPO / "components", repo / "components", ignore=shutil.ignore_patterns("__pycache__")
    )
    (repo / "trainjobs").symlink_to("components")  # the package's import name, as in REPO
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "vendor components")
    graph = repo / "components" / "core" / "graph.py"
    source = graph.read_text()
    assert DEFAULT_KUBECTL_IMAGE in source
    graph.write_text(source.replace(DEFAULT_KUBECTL_IMAGE, "mirror.local/kubectl:v9"))
    assert diff(repo, "--previews", str(tmp_path / "previews")) == 0
    comparison = compare(
        load_preview(tmp_path / "previews" / "base"), load_preview(tmp_path / "previews" / "head")
    )
    assert changed(comparison) == {
        "ConfigMap default/demo-assets": "update",
        "Job default/demo-master": "replace",
        "JobCompletion completion": "update",
    }


def test_diff_never_prints_secure_config_values(tmp_path, capsys):
    repo = git_project(
        tmp_path / "repo", {"demo.yaml": chainer_job()}, {"trainjobs:token": {"secure": "v1:AAAA"}}
    )
    write_project(repo, {"demo.yaml": chainer_job()}, {"trainjobs:token": {"secure": "v1:BBBB"}})
    assert diff(repo) == 0
    out = capsys.readouterr().out
    assert "- `trainjobs:token`: secure value changed (not shown)" in out
    assert "AAAA" not in out and "BBBB" not in out


def test_a_stack_new_since_the_ref_is_all_creates(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    (repo / "Pulumi.test.yaml").rename(repo / "Pulumi.other.yaml")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "only another stack")
    (repo / "Pulumi.other.yaml").rename(repo / "Pulumi.test.yaml")
    assert diff(repo) == 0
    out = capsys.readouterr().out
    assert "9 resources: 9 to create." in out
    assert "- stack `test` does not exist at `HEAD`: everything is new" in out


def test_an_unknown_ref_is_a_clear_error(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    assert main(["diff", "--stack", "test", "--base", "no-such-ref", "--project", str(repo)]) == 2
    assert capsys.readouterr().err == f"error: --base no-such-ref: not a commit in {repo}\n"


def test_an_invalid_spec_on_either_side_names_the_side_and_the_field(tmp_path, capsys):
    repo = git_project(tmp_path / "repo", {"demo.yaml": chainer_job()})
    write_project(repo, {"demo.yaml": chainer_job("Bad_Name")})
    assert diff(repo) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: preview of stack test at the working tree failed:\n")
    assert "  metadata.name: 'Bad_Name' is not a valid job name" in err


def test_against_a_directory_that_is_not_a_preview_exits_2(tmp_path, capsys):
    project = write_project(tmp_path / "project", {"demo.yaml": chainer_job()})
    (tmp_path / "empty").mkdir()
    assert preview(project, tmp_path / "head", "--against", str(tmp_path / "empty")) == 2
    assert capsys.readouterr().err == (
        f"error: {tmp_path / 'empty'}: not a trainjobs preview (no graph.json); write one with "
        "`trainjobs preview --stack NAME --out DIR`\n"
    )
    assert not (tmp_path / "head").exists()


# pulumi-kubernetes' replacement rules, one property at a time.


def resource(manifest: dict[str, Any], ignore_changes: tuple[str, ...] = ()) -> Resource:
    meta = manifest["metadata"]
    return Resource(
        key=f"kubernetes:{manifest['kind']}::{meta['name']}",
        type=f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}",
        name=meta["name"],
        ignore_changes=ignore_changes,
        manifest=manifest,
    )


def statefulset_resource(spec: dict[str, Any]) -> Resource:
    manifest = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": spec,
    }
    return resource(manifest, ("spec.replicas",))


BASE_OBJECTS: dict[str, dict[str, Any]] = {
    "StatefulSet": {
        "apiVersion": "apps/v1",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "podManagementPolicy": "Parallel",
            "serviceName": "x",
            "selector": {"matchLabels": {"a": "1"}},
            "template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}},
        },
    },
    "Job": {
        "apiVersion": "batch/v1",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {
            "backoffLimit": 2,
            "template": {"spec": {"containers": [{"name": "c", "image": "i:1"}]}},
        },
    },
    "Service": {
        "apiVersion": "v1",
        "metadata": {"name": "x", "namespace": "default"},
        "spec": {"clusterIP": "None", "selector": {"a": "1"}},
    },
    "RoleBinding": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "x", "namespace": "default"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "s"}],
    },
    "Role": {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "metadata": {"name": "x", "namespace": "default"},
        "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}],
    },
    "ConfigMap": {
        "apiVersion": "v1",
        "metadata": {"name": "x", "namespace": "default"},
        "data": {"a": "1"},
    },
    "Secret": {
        "apiVersion": "v1",
        "metadata": {"name": "x", "namespace": "default"},
        "type": "Opaque",
        "data": {"a": "MQ=="},
    },
    "ServiceAccount": {"apiVersion": "v1", "metadata": {"name": "x", "namespace": "default"}},
}


@pytest.mark.parametrize(
    ("kind", "path", "value", "operation"),
    [
        ("StatefulSet", "spec.serviceName", "y", "replace"),
        ("StatefulSet", "spec.podManagementPolicy", "OrderedReady", "replace"),
        ("StatefulSet", "spec.selector.matchLabels.a", "2", "replace"),
        ("StatefulSet", "spec.revisionHistoryLimit", 3, "replace"),
        ("StatefulSet", "spec.volumeClaimTemplates", [{"metadata": {"name": "d"}}], "replace"),
        ("StatefulSet", "spec.template.spec.containers.0.image", "i:2", "update"),
        ("StatefulSet", "spec.replicas", 4, "update"),
        ("StatefulSet", "spec.updateStrategy", {"type": "OnDelete"}, "update"),
        ("Job", "spec.template.spec.containers.0.image", "i:2", "replace"),
        ("Job", "spec.completions", 2, "replace"),
        ("Job", "spec.parallelism", 2, "replace"),
        ("Job", "spec.selector", {"matchLabels": {"a": "1"}}, "replace"),
        ("Job", "spec.backoffLimit", 5, "update"),
        ("Job", "spec.activeDeadlineSeconds", 60, "update"),
        ("Job", "metadata.labels", {"team": "ml"}, "update"),
        ("Service", "spec.clusterIP", "10.0.0.9", "replace"),
        ("Service", "spec.type", "NodePort", "update"),
        ("Service", "spec.selector.a", "2", "update"),
        ("RoleBinding", "roleRef.name", "other", "replace"),
        ("RoleBinding", "subjects.0.name", "other", "update"),
        ("Role", "rules.0.verbs", ["get", "list"], "update"),
        ("ConfigMap", "data.a", "2", "replace"),
        ("ConfigMap", "metadata.labels", {"team": "ml"}, "update"),
        ("Secret", "type", "kubernetes.io/tls", "replace"),
        ("Secret", "data.a", "Mg==", "replace"),
        ("ServiceAccount", "metadata.name", "y", "replace"),
        ("ServiceAccount", "metadata.namespace", "ml", "replace"),
        ("ServiceAccount", "automountServiceAccountToken", False, "update"),
    ],
)
def test_replacement_rules_follow_pulumi_kubernetes(kind, path, value, operation):
    old = {"kind": kind, **BASE_OBJECTS[kind]}
    new = yaml.safe_load(yaml.safe_dump(old))
    *parents, last = path.split(".")
    target = new
    for part in parents:
        target = target[int(part)] if part.isdigit() else target.setdefault(part, {})
    target[last] = value
    comparison = compare(Snapshot("s", {"x": resource(old)}), Snapshot("s", {"x": resource(new)}))
    assert comparison.resources[0].operation == operation


def test_mutable_config_maps_and_secrets_update_in_place_unless_marked_immutable():
    settings = ProviderSettings(config_map_mutable=True, secret_mutable=True)

    def operation(kind: str, immutable: bool) -> str:
        old = {"kind": kind, **BASE_OBJECTS[kind], "immutable": immutable}
        new = {**old, "data": {"a": "Mg=="}}
        base, head = Snapshot("s", {"x": resource(old)}), Snapshot("s", {"x": resource(new)})
        return compare(base, head, settings).resources[0].operation

    assert [
        operation(kind, immutable)
        for kind in ("ConfigMap", "Secret")
        for immutable in (False, True)
    ] == ["update", "replace", "update", "replace"]


def test_ignore_changes_puts_back_the_old_value_or_drops_a_new_one():
    old = {"spec": {"replicas": 2, "template": {"a": 1}}}
    assert apply_ignore_changes(
        old, {"spec": {"replicas": 5, "template": {"a": 2}}}, ["spec.replicas"]
    ) == {"spec": {"replicas": 2, "template": {"a": 2}}}
    assert apply_ignore_changes({"spec": {}}, {"spec": {"replicas": 5}}, ["spec.replicas"]) == {
        "spec": {}
    }
    assert apply_ignore_changes(
        {"c": [{"image": "a"}, {"image": "b"}]},
        {"c": [{"image": "x"}, {"image": "y"}]},
        ["c[*].image"],
    ) == {"c": [{"image": "a"}, {"image": "b"}]}


def test_secret_values_never_appear_in_a_diff():
    old = {"kind": "Secret", **BASE_OBJECTS["Secret"], "stringData": {"password": "hunter2"}}
    new = {**old, "stringData": {"password": "correct-horse"}}
    comparison = compare(Snapshot("s", {"x": resource(old)}), Snapshot("s", {"x": resource(new)}))
    report = render(comparison, base="main", head="pr", full_command="trainjobs diff")
    assert "hunter2" not in report and "correct-horse" not in report
    assert "-  password: '[secret]'\n+  password: '[secret, changed]'" in report
    assert "`stringData.password` updated" in comparison.resources[0].reason


def test_the_watchers_replace_rules_match_its_provider():
    from trainjobs.deploy.completion import REPLACE_ON
    from trainjobs.review.replacement import DYNAMIC_REPLACE_ON

    assert DYNAMIC_REPLACE_ON["pulumi-python:dynamic/trainjobs:JobCompletion"] == REPLACE_ON


# Job fields Kubernetes keeps immutable: replaced, never planned as an update.


def job_resource(manifest: dict[str, Any]) -> Resource:
    return Resource(
        key="x",
        type="kubernetes:batch/v1:Job",
        name="x",
        replace_on_changes=WORKLOAD_REPLACE_ON,
        delete_before_replace=True,
        manifest=manifest,
    )


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("podFailurePolicy", {"rules": [{"action": "FailJob"}]}),
        ("successPolicy", {"rules": [{"succeededIndexes": "0"}]}),
        ("completionMode", "Indexed"),
        ("backoffLimitPerIndex", 1),
        ("managedBy", "kueue.x-k8s.io/multikueue"),
    ],
)
def test_a_change_to_an_immutable_job_field_is_a_replacement(field: str, value: Any):
    old = {"kind": "Job", **BASE_OBJECTS["Job"]}
    new = yaml.safe_load(yaml.safe_dump(old))
    new["spec"][field] = value

    comparison = compare(
        Snapshot("s", {"x": job_resource(old)}), Snapshot("s", {"x": job_resource(new)})
    )

    diff = comparison.resources[0]
    assert (diff.operation, diff.delete_before_replace) == ("replace", True)
    assert diff.reason == (
        f"`spec` changed (`spec.{field}` added): a batch/v1 Job runs once, so the program "
        "replaces it on any change (replaceOnChanges; an update could not reach one its TTL "
        "removed, nor move a queued one); the old object is deleted first (same name)"
    )


def test_every_immutable_job_field_is_replaced_by_pulumi_kubernetes_or_the_program():
    """The fake refuses what Kubernetes' ValidateJobSpecUpdate refuses; each of those fields
    must be in pulumi-kubernetes' replace table or in the program's replaceOnChanges."""
    provider = {rule.removeprefix(".spec.") for rule in REPLACE_ON_CHANGE[("batch/v1", "Job")]}
    immutable = {".".join(path) for path in JOB_IMMUTABLE}
    assert "spec" in WORKLOAD_REPLACE_ON  # every spec field, those of `provider` too
    assert provider - immutable == {"parallelism"}


def test_a_restart_policy_change_that_drops_the_pod_failure_policy_replaces_the_job(tmp_path):
    """ExitCode -> Never leaves the pod template as it was and removes the podFailurePolicy:
    pulumi-kubernetes alone would update the Job, which the API server refuses."""
    document = yaml.safe_load((REPO / "jobs" / "tf-mnist.yaml").read_text())
    worker = document["spec"]["tfReplicaSpecs"]["Worker"]
    worker["restartPolicy"] = "ExitCode"
    before = yaml.safe_dump(document)
    worker["restartPolicy"] = "Never"
    comparison = compare_projects(
        tmp_path, {"tf.yaml": before}, {"tf.yaml": yaml.safe_dump(document)}
    )

    workers = [r for r in comparison.notable if r.label.startswith("Job default/tf-mnist-worker")]
    assert [(r.label, r.operation) for r in workers] == [
        ("Job default/tf-mnist-worker-0", "replace"),
        ("Job default/tf-mnist-worker-1", "replace"),
    ]
    assert workers[0].reason.startswith("`spec` changed (`spec.podFailurePolicy` deleted)")


def kubeconfig(token: str) -> str:
    return f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {token}\n"


def test_diff_masks_a_setting_the_program_made_secret_as_the_preview_does(tmp_path, capsys):
    # kubernetes:kubeconfig in plain text: the program reads it with get_secret, so the preview
    # shows it as [secret]; the diff must not print it either (stdout, report, previews).
    repo = git_project(
        tmp_path / "repo",
        {"demo.yaml": chainer_job()},
        {"kubernetes:kubeconfig": kubeconfig("OLD-TOKEN-1")},
    )
    write_project(
        repo, {"demo.yaml": chainer_job()}, {"kubernetes:kubeconfig": kubeconfig("NEW-TOKEN-2")}
    )
    assert diff(repo) == 0
    out = capsys.readouterr().out
    assert "- `kubernetes:kubeconfig`: secret value changed (not shown)" in out.splitlines()
    report, previews = tmp_path / "report.md", tmp_path / "previews"
    assert diff(repo, "--out", str(report), "--previews", str(previews)) == 0
    written = [report, *previews.rglob("*")]
    texts = [path.read_text(encoding="utf-8") for path in written if path.is_file()]
    assert not [text for text in [out, *texts] if "TOKEN" in text]
    graph = json.loads((previews / "head" / "graph.json").read_text(encoding="utf-8"))
    assert graph["secretConfig"] == ["kubernetes:kubeconfig"]
