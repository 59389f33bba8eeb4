"""Every manifest trainjobs writes passes strict schema validation for Kubernetes 1.30 and the
newest version kubernetes-validate knows."""

from __future__ import annotations

import string
from pathlib import Path

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import (
    JOB_FIELDS_OFF_AT_MINIMUM,
    KUBERNETES_VERSIONS,
    MINIMUM_KUBERNETES,
    REPO,
    schema_problems,
)
from tests.kinds.test_corpus import RENDERED
from trainjobs.cli import main
from trainjobs.core.graph import MPI_TRANSPORTS, GraphOptions
from trainjobs.core.jobset import child_jobs
from trainjobs.kinds.chainer import spec as chainer_spec
from trainjobs.kinds.mpi.graph import build_graph
from trainjobs.kinds.registry import load_job
from trainjobs.review.preview import REDACTED


def written_manifests(directory: Path) -> list[dict]:
    return [yaml.safe_load(p.read_text()) for p in sorted(directory.glob("*.yaml"))]


def test_schema_check_covers_oldest_and_newest_versions():
    assert KUBERNETES_VERSIONS == ("1.30.0", "1.37.0")


def test_the_docs_state_the_minimum_kubernetes_version():
    page = (REPO / "docs" / "cluster.md").read_text(encoding="utf-8")
    assert f"Kubernetes {MINIMUM_KUBERNETES} or later" in page


def test_no_job_depends_on_a_field_that_is_off_at_the_minimum_version():
    """Schema checks cannot see feature gates: a workers-only TFJob written with a Job
    successPolicy would validate against 1.30 and then wait for every worker there."""
    specs = [*sorted((REPO / "jobs").glob("*.yaml")), *RENDERED]
    used = {}
    for path in specs:
        for manifest in load_job(path).graph.manifests():
            jobs = child_jobs(manifest) if manifest["kind"] == "JobSet" else [manifest]
            for job in jobs:
                if job["kind"] != "Job":
                    continue
                for field in JOB_FIELDS_OFF_AT_MINIMUM.keys() & job["spec"].keys():
                    used[f"{path.name}: Job/{job['metadata']['name']}"] = field
    assert used == {}


def test_schema_check_rejects_an_unknown_pod_field():
    manifest = build_graph(chainer_spec.load(REPO / "jobs" / "chainermn-mnist.yaml")).manifests()[
        -1
    ]
    manifest["spec"]["template"]["spec"]["bogus"] = 1
    assert schema_problems(manifest) == [
        f"{version} Job/chainermn-mnist-master: Additional properties are not allowed "
        "('bogus' was unexpected)"
        for version in KUBERNETES_VERSIONS
    ]


def test_rendered_examples_pass_strict_validation(tmp_path):
    for example in sorted((REPO / "jobs").glob("*.yaml")):
        out = tmp_path / example.stem
        assert main(["render", str(example), "--out", str(out)]) == 0
        manifests = written_manifests(out)
        assert manifests, example
        assert [p for m in manifests for p in schema_problems(m)] == []


def test_previewed_stacks_pass_strict_validation(tmp_path):
    for stack_file in sorted(REPO.glob("Pulumi.*.yaml")):
        stack = stack_file.stem.removeprefix("Pulumi.")
        out = tmp_path / stack
        assert main(["preview", "--stack", stack, "--project", str(REPO), "--out", str(out)]) == 0
        manifests = [without_redacted(m) for m in written_manifests(out)]
        assert manifests, stack
        assert [p for m in manifests for p in schema_problems(m)] == []


def without_redacted(manifest: dict) -> dict:
    """A preview shows a Secret's data (the ssh transport's key pair, made at deploy time) as
    the marker "[secret]": the object as applied has the data, which a preview cannot know."""
    if manifest.get("kind") != "Secret":
        return manifest
    return {key: value for key, value in manifest.items() if value != REDACTED}


def test_generated_crds_pass_strict_validation():
    for crd in sorted((REPO / "crds").glob("*.yaml")):
        assert schema_problems(yaml.safe_load(crd.read_text())) == []


# Property: any valid spec, in either shape, renders to schema-valid manifests.

dns_label = st.text(string.ascii_lowercase + string.digits, min_size=1, max_size=8)
job_names = st.builds(lambda head, tail: head + tail, st.sampled_from("abcxyz"), dns_label)
images = st.sampled_from(["img:1", "registry.local/team/chainer@sha256:" + "a" * 64])


@st.composite
def containers(draw):
    container = {"image": draw(images)}
    gpus = draw(st.none() | st.integers(0, 8) | st.integers(0, 8).map(str))
    if gpus is not None:
        container["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    if draw(st.booleans()):
        container["env"] = [{"name": "EPOCHS", "value": str(draw(st.integers(1, 99)))}]
    return container


@st.composite
def templates(draw, restart_policies):
    main_container = draw(containers())
    pod = {"containers": [main_container]}
    if draw(st.booleans()):
        main_container["name"] = "trainer"
        pod["containers"].append({"name": "sidecar", "image": "proxy:1"})
    policy = draw(restart_policies)
    if policy:
        pod["restartPolicy"] = policy
    template = {"spec": pod}
    if draw(st.booleans()):
        template["metadata"] = {"labels": {"team": draw(dns_label)}}
    return template


@st.composite
def worker_specs(draw):
    worker = {"template": draw(templates(st.sampled_from([None, "Always"])))}
    if draw(st.booleans()):
        worker["replicas"] = draw(st.integers(1, 6))
    if draw(st.booleans()):
        worker["mpiConfig"] = {"slots": draw(st.integers(1, 8))}
    return worker


@st.composite
def chainer_jobs(draw):
    master = {"template": draw(templates(st.sampled_from([None, "Never", "OnFailure"])))}
    for field, values in (
        ("backoffLimit", st.integers(0, 10)),
        ("activeDeadlineSeconds", st.integers(1, 10**6)),
    ):
        if draw(st.booleans()):
            master[field] = draw(values)
    spec = {"master": master}
    shape = draw(st.sampled_from(["single", "worker", "workerSets"]))
    if shape == "worker":
        spec["worker"] = draw(worker_specs())
    elif shape == "workerSets":
        spec["workerSets"] = draw(
            st.dictionaries(dns_label, worker_specs(), min_size=1, max_size=3)
        )
    metadata = {"name": draw(job_names)}
    if draw(st.booleans()):
        metadata["namespace"] = draw(job_names)
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": metadata,
        "spec": spec,
    }


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chainer_jobs(), st.sampled_from(MPI_TRANSPORTS))
def test_any_valid_spec_renders_to_schema_valid_manifests(document, transport):
    plan = chainer_spec.parse(document, "generated.yaml")
    graph = build_graph(plan, GraphOptions(mpi_transport=transport))
    problems = [p for m in graph.manifests() for p in schema_problems(m)]
    assert problems == []
    hostfile = graph.manifests()[0]["data"]["hostfile"].splitlines()
    assert len(hostfile) == 1 + len(plan.worker_pods)
