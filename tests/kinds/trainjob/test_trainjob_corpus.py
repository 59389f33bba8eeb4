"""Real TrainJob specs nobody here wrote (tests/corpus/trainjob-*.yaml, each with its source):
every one Kubeflow Trainer v2.3.0 would run validates and renders against the shipped runtimes
(or the user's own runtime shown beside it on the same page), keeps the trainer's command and
args as written, gets exactly the env the runtime's MLPolicy gives, and passes the strict
schemas; the rest are refused with exit 2 and the first line Trainer (or the API server) gives.

The expected env is worked out here from the raw YAML and Trainer's torch policy (kubeflow/
trainer v2.3.0 ``pkg/runtime/framework/plugins/torch/torch.go``), independently of trainjobs'
own code.
"""

from __future__ import annotations

import math
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from trainjobs.cli import main
from trainjobs.kinds.registry import KINDS

CORPUS = REPO / "tests" / "corpus"
PREFIX = "trainjob-v1alpha1-"
SHIPPED = yaml.safe_load_all(
    (REPO / "components" / "kinds" / "trainjob" / "releases" / "v2.3.0.yaml").read_text()
)
SHIPPED_RUNTIMES = {doc["metadata"]["name"]: doc for doc in SHIPPED}

# A TrainJob whose page shows the user-written runtime it names: that runtime, given beside it
# in the same file (as `kubectl apply -f` of both would install it first).
BESIDE = {
    "kubeflow-trainer-docs-kai-queue-label": "kubeflow-trainer-docs-kai-clustertrainingruntime-broken",
    "kubeflow-trainer-docs-runtime-namespaced": "kubeflow-trainer-docs-trainingruntime-pytorch-team",
    "kubeflow-trainer-flux-lammps": "kubeflow-trainer-flux-clustertrainingruntime",
    "kueue-docs-pytorch-distributed": "kueue-docs-clustertrainingruntime-torch-distributed",
    "kueue-docs-pytorch-custom": "kueue-docs-trainingruntime-torch-custom",
}
RUNTIME_ONLY = set(BESIDE.values())

NOT_FOUND = (
    'spec.runtimeRef: clustertrainingruntimes.trainer.kubeflow.org "{name}" not found: '
    "specified clusterTrainingRuntime must be created before the TrainJob is created; the "
    "runtimes there are ClusterTrainingRuntime/deepspeed-distributed, "
    "ClusterTrainingRuntime/jax-distributed, ClusterTrainingRuntime/mlx-distributed, "
    "ClusterTrainingRuntime/torch-distributed, ClusterTrainingRuntime/xgboost-distributed "
    "(Kubeflow Trainer v2.3.0's, and those given beside the TrainJob in its file)"
)

# The specs Trainer (or the API server, for the Jobs its JobSet would create) refuses, and the
# first problem line trainjobs gives.
REFUSED = {
    # The KAI page's runtime puts containers straight under template.spec: no replicatedJobs.
    "trainjob-v1alpha1-kubeflow-trainer-docs-kai-queue-label.yaml": (
        "ClusterTrainingRuntime/pytorch-kai-runtime.spec.template.spec.replicatedJobs: required: "
        "the JobSet's replicated Jobs (a list of mappings)"
    ),
    "trainjob-v1alpha1-kubeflow-trainer-docs-runtime-patches-nodeselector.yaml": (
        NOT_FOUND.format(name="pytorch-distributed-gpu")
    ),
    "trainjob-v1alpha1-kubeflow-trainer-flux-lammps.yaml": (
        "spec.runtimeRef.name: ClusterTrainingRuntime/flux-distributed has mlPolicy.flux, which "
        "trainjobs does not render (Trainer's flux plugin); use a runtime with jax, mpi, torch, "
        "xgboost or none"
    ),
    # Trainer v2.3.0's JobSet plugin: an initializer's container must mount the "initializer"
    # volume.
    "trainjob-v1alpha1-kubeflow-trainer-yaml-05-multi-step.yaml": (
        "spec.runtimeRef: must have volumeMount with name - initializer in container "
        "dataset-initializer of the dataset-initializer job (Kubeflow Trainer v2.3.0's rule; "
        "name the initializer's volume `initializer`, or select the release the runtime was "
        "written for: --trainer-version or trainjobs:trainerVersion)"
    ),
    "trainjob-v1alpha1-kueue-docs-fragment-no-kind.yaml": (
        f"kind: must be one of {', '.join(KINDS)} (not set): add the job's kind, e.g. kind: ChainerJob"
    ),
    # nvidia.com/gpu in requests only: the API server refuses the Job's pod template.
    "trainjob-v1alpha1-kueue-docs-pytorch-distributed.yaml": (
        "spec.trainer.resourcesPerNode.limits: Required value: Limit must be set for non "
        "overcommitable resources: nvidia.com/gpu is requested (1) without a limit; add limits: "
        "{nvidia.com/gpu: 1} (the request of a resource that cannot be overcommitted must equal "
        "its limit)"
    ),
    "trainjob-v2alpha1-kubeflow-trainer-kep2170-torch-ddp.yaml": (
        "apiVersion: must be trainer.kubeflow.org/v1alpha1 (got 'trainer.kubeflow.org/v2alpha1')"
    ),
    "trainjob-v2alpha1-kubeflow-website-megatron-runtime-patches.yaml": (
        "apiVersion: must be trainer.kubeflow.org/v1alpha1 (got 'trainer.kubeflow.org/v2alpha1')"
    ),
}

JOBS = sorted(
    path
    for path in CORPUS.glob("trainjob-*.yaml")
    if path.name.removeprefix(PREFIX).removesuffix(".yaml") not in RUNTIME_ONLY
)
VALID = [path for path in JOBS if path.name not in REFUSED]


def test_the_corpus_has_its_trainjobs_and_runtimes():
    assert (len(JOBS), len(VALID), len(RUNTIME_ONLY)) == (18, 10, 5)
    assert set(REFUSED) <= {path.name for path in JOBS}


def as_given(path: Path, tmp_path: Path) -> Path:
    """The spec file as a user runs it: with the runtime its page shows, when it has one."""
    beside = BESIDE.get(path.name.removeprefix(PREFIX).removesuffix(".yaml"))
    if beside is None:
        return path
    combined = tmp_path / path.name
    runtime = (CORPUS / f"{PREFIX}{beside}.yaml").read_text(encoding="utf-8")
    combined.write_text(runtime + "\n---\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    return combined


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")) if doc]


@pytest.mark.parametrize("path", sorted(REFUSED), ids=str)
def test_a_spec_trainer_refuses_is_refused_with_its_reason(
    path: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    given = as_given(CORPUS / path, tmp_path)

    assert main(["validate", str(given)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0].endswith("invalid job spec (1 problem(s))")
    assert err[1] == f"  {REFUSED[path]}"


def gpus(resources: dict[str, Any]) -> int:
    for section in ("requests", "limits"):
        for name, amount in (resources.get(section) or {}).items():
            if "gpu" in name.lower() and int(amount):
                return int(amount)
    return 0


def cores(amount: Any) -> int:
    text = str(amount)
    return math.ceil(Decimal(text[:-1]) / 1000 if text.endswith("m") else Decimal(text))


def expected_node(trainjob: dict[str, Any], runtime: dict[str, Any]) -> dict[str, Any]:
    """The trainer's node container as Trainer's torch policy leaves it."""
    name = trainjob["metadata"]["name"]
    trainer = trainjob["spec"].get("trainer")
    (job,) = runtime["spec"]["template"]["spec"]["replicatedJobs"]
    containers = job["template"]["spec"]["template"]["spec"]["containers"]
    node = next((c for c in containers if c["name"] == "node"), None)
    if node is None or trainer is None:
        return {
            "command": (node or containers[0]).get("command"),
            "args": (node or containers[0]).get("args"),
            "env": (node or containers[0]).get("env") or [],
            "image": (node or containers[0])["image"],
            "nodes": trainer.get("numNodes", 1)
            if trainer
            else runtime["spec"]["mlPolicy"]["numNodes"],
        }
    env = {item["name"]: item for item in node.get("env") or []}
    env.update({item["name"]: item for item in trainer.get("env") or []})
    nodes = trainer.get("numNodes", runtime["spec"]["mlPolicy"].get("numNodes", 1))
    resources = trainer.get("resourcesPerNode") or node.get("resources") or {}
    procs = trainer.get("numProcPerNode")
    if procs is None:
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        cpu = requests.get("cpu") or limits.get("cpu")
        procs = "auto" if gpus(resources) else max(1, cores(cpu) if cpu else 0)
    rank = "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    env["PET_NNODES"] = {"name": "PET_NNODES", "value": str(nodes)}
    env["PET_NPROC_PER_NODE"] = {"name": "PET_NPROC_PER_NODE", "value": str(procs)}
    env["PET_NODE_RANK"] = {"name": "PET_NODE_RANK", "valueFrom": {"fieldRef": {"fieldPath": rank}}}
    env["PET_MASTER_ADDR"] = {"name": "PET_MASTER_ADDR", "value": f"{name}-node-0-0.{name}"}
    env["PET_MASTER_PORT"] = {"name": "PET_MASTER_PORT", "value": "29500"}
    return {
        "command": trainer.get("command", node.get("command")),
        "args": trainer.get("args", node.get("args")),
        "env": list(env.values()),
        "image": trainer.get("image", node["image"]),
        "nodes": nodes,
    }


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_a_real_trainjob_renders_with_its_command_untouched_and_the_torch_policys_env(
    path: Path, tmp_path: Path
):
    given = as_given(path, tmp_path)
    docs = documents(given)
    trainjob = next(doc for doc in docs if doc["kind"] == "TrainJob")
    ref = trainjob["spec"]["runtimeRef"]
    runtime = next(
        (doc for doc in docs if doc["kind"] == ref.get("kind", "ClusterTrainingRuntime")),
        SHIPPED_RUNTIMES.get(ref["name"]),
    )
    out = tmp_path / "out"

    assert main(["render", str(given), "--out", str(out)]) == 0
    manifests = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))]
    jobset = next(m for m in manifests if m["kind"] == "JobSet")
    (job,) = jobset["spec"]["replicatedJobs"]
    container = job["template"]["spec"]["template"]["spec"]["containers"][0]
    expected = expected_node(trainjob, runtime)

    assert (container.get("command"), container.get("args")) == (
        expected["command"],
        expected["args"],
    )
    assert container.get("env", []) == expected["env"]
    assert container["image"] == expected["image"]
    assert (job["template"]["spec"]["parallelism"], job["template"]["spec"]["completions"]) == (
        expected["nodes"],
        expected["nodes"],
    )
    assert jobset["metadata"]["name"] == trainjob["metadata"]["name"]
    assert [problem for m in manifests for problem in schema_problems(m)] == []
