"""Real MPIJob specs nobody here wrote (tests/corpus/mpijob-*.yaml, each with its source).

Every spec its operator would run renders, passes the strict schemas, keeps the launcher's
command and args, gets a hostfile listing every worker with its slots in its MPI
implementation's format, and the env that operator sets; the rest are refused with exit 2
and one line naming the field, the value and the fix. The expectations are worked out here
from the raw YAML and the operators' rules, independently of trainjobs' code.

A file that also holds other objects (NVIDIA's ComputeDomain before the MPIJob) is tested
on its MPIJob document: the one the operator sees.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO, schema_problems
from tests.kinds.test_manifest_schemas import written_manifests
from trainjobs.cli import main

CORPUS = REPO / "tests" / "corpus"
FILES = sorted(CORPUS.glob("mpijob-*.yaml"))

# The specs their operator would not run, and the first line trainjobs gives.
REFUSED = {
    # A Katib trial template: Katib names the trial; the API server refuses a job without one.
    "mpijob-v1-kubeflow-katib-trialspec-horovod.yaml": "metadata.name: required: the job's name",
    # v1alpha1's shape under kubeflow.org/v1: training-operator finds no replica specs.
    "mpijob-v1-kubeflow-mpi-operator-mxnet-legacy-replicas.yaml": (
        "spec.mpiReplicaSpecs: required: a Launcher and its Workers, each with a pod template "
        "(spec.replicas and spec.template are v1alpha1's shape, which kubeflow.org/v1 does not "
        "read: move the template under Launcher and Worker)"
    ),
    # A documentation snippet cut with `...`: YAML ends the document there.
    "mpijob-v2beta1-kubeflow-trainer-legacy-docs-schedulingpolicy-ellipsis.yaml": (
        "spec.mpiReplicaSpecs: required: a Launcher and its Workers, each with a pod template"
    ),
    # An envsubst template: the API server refuses '${NVB_GPUS_PER_NODE}' as an int32.
    "mpijob-v2beta1-nvidia-k8s-dra-driver-gpu-bats-envsubst-template.yaml": (
        "spec.slotsPerWorker: must be a whole number (got '${NVB_GPUS_PER_NODE}')"
    ),
}
RENDERED = [path for path in FILES if path.name not in REFUSED]

# Pods that claim devices through DRA's resourceClaimTemplateName (Kubernetes 1.31+): valid on
# the newest Kubernetes checked, refused by a 1.30 API server, as these specs' clusters run newer.
NEEDS_DRA = {
    "mpijob-v2beta1-aws-awsome-distributed-training-nccl-tests-gb200-computedomain.yaml": (
        "nccl-tests-worker"
    ),
    "mpijob-v2beta1-nvidia-k8s-dra-driver-gpu-nvbandwidth-computedomain.yaml": (
        "nvbandwidth-test-1-worker"
    ),
}


def mpijob(path: Path) -> dict[str, Any]:
    """The file's MPIJob document."""
    documents = [d for d in yaml.safe_load_all(path.read_text(encoding="utf-8")) if d]
    (found,) = [d for d in documents if d.get("kind") == "MPIJob"]
    return found


def job_file(path: Path, tmp_path: Path) -> Path:
    """The spec as `trainjobs validate` takes it: the file, or its MPIJob document alone."""
    text = path.read_text(encoding="utf-8")
    if len([d for d in yaml.safe_load_all(text) if d]) == 1:
        return path
    alone = tmp_path / path.name
    alone.write_text(yaml.safe_dump(mpijob(path)), encoding="utf-8")
    return alone


def test_the_corpus_holds_real_mpijobs_of_every_version_and_most_run():
    versions = {mpijob(path)["apiVersion"] for path in RENDERED}

    assert versions == {"kubeflow.org/v1alpha2", "kubeflow.org/v1", "kubeflow.org/v2beta1"}
    assert len(FILES) >= 14
    assert len(RENDERED) >= 10
    assert all(p.read_text().startswith("# source: https://github.com/") for p in FILES)


@pytest.mark.parametrize("path", [CORPUS / name for name in REFUSED], ids=list(REFUSED))
def test_a_spec_its_operator_would_not_run_is_refused_with_one_clear_line(path, tmp_path, capsys):
    assert main(["validate", str(job_file(path, tmp_path))]) == 2
    err = capsys.readouterr().err
    assert err.splitlines()[1].strip().startswith(REFUSED[path.name]), err
    assert "Traceback" not in err


# -- what the operator would make, worked out from the raw YAML ----------------------------------


def replicas(doc: dict[str, Any], kind: str) -> dict[str, Any] | None:
    return (doc["spec"].get("mpiReplicaSpecs") or {}).get(kind)


def implementation(doc: dict[str, Any]) -> str:
    spec = doc["spec"]
    if doc["apiVersion"].endswith("/v2beta1"):
        return spec.get("mpiImplementation") or "OpenMPI"
    if doc["apiVersion"].endswith("/v1alpha2"):
        return {"IntelMPI": "Intel", "MPICH": "MPICH"}.get(spec.get("mpiDistribution"), "OpenMPI")
    return "OpenMPI"


def queued(doc: dict[str, Any]) -> bool:
    return "kueue.x-k8s.io/queue-name" in (doc["metadata"].get("labels") or {})


def launcher_asks_for_gpus(doc: dict[str, Any]) -> bool:
    launcher = replicas(doc, "Launcher") or {}
    containers = launcher["template"]["spec"]["containers"]
    return any(
        "gpu" in key for c in containers for key in ((c.get("resources") or {}).get("limits") or {})
    )


def expected_hostfile(doc: dict[str, Any]) -> str:
    """mpi-operator's newConfigMap (v2beta1: DNS names), training-operator's and
    mpi-operator 0.2's (pod names); ``host slots=N`` for Open MPI, ``host:N`` for Hydra."""
    name = doc["metadata"]["name"]
    namespace = doc["metadata"].get("namespace") or "default"
    version = doc["apiVersion"].rsplit("/", 1)[1]
    slots = doc["spec"].get("slotsPerWorker", 1)
    workers = (replicas(doc, "Worker") or {}).get("replicas") or 0
    # Queued by Kueue, the job is one JobSet: its pods are <jobset>-<replicatedJob>-<i>-0.
    pod = "-0" if queued(doc) else ""
    hosts = [f"{name}-worker-{i}{pod}" for i in range(workers)]
    first = (
        doc["spec"].get("runLauncherAsWorker") is True
        if version == "v2beta1"
        else version == "v1" and launcher_asks_for_gpus(doc)
    )
    if first:
        hosts.insert(0, f"{name}-launcher{'-0-0' if queued(doc) else ''}")
    if version == "v2beta1":
        hosts = [f"{host}.{name}.{namespace}.svc" for host in hosts]
    hydra = implementation(doc) != "OpenMPI"
    return "".join(f"{h}:{slots}\n" if hydra else f"{h} slots={slots}\n" for h in hosts)


def expected_env(doc: dict[str, Any]) -> dict[str, str | None]:
    """The env the operator sets on the launcher's first container."""
    version = doc["apiVersion"].rsplit("/", 1)[1]
    slots = str(doc["spec"].get("slotsPerWorker", 1))
    no_gpu: dict[str, str | None] = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}
    if version == "v2beta1":
        env: dict[str, str | None] = {"K_MPI_JOB_ROLE": "launcher"}
        env.update(
            {
                "OpenMPI": {
                    "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
                    "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
                    "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
                    "OMPI_MCA_orte_set_default_slots": slots,
                },
                "Intel": {
                    "I_MPI_HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                    "I_MPI_HYDRA_BOOTSTRAP_EXEC_EXTRA_ARGS": "-o ConnectionAttempts=10",
                    "I_MPI_PERHOST": slots,
                },
                "MPICH": {
                    "HYDRA_HOST_FILE": "/etc/mpi/hostfile",
                    "HYDRA_LAUNCH_EXTRA_ARGS": "-o ConnectionAttempts=10",
                },
            }[implementation(doc)]
        )
        if doc["spec"].get("runLauncherAsWorker") is not True:
            env.update(dict.fromkeys(no_gpu))  # no value at all
        return env
    if version == "v1":
        env = {
            "OMPI_MCA_plm_rsh_agent": "/etc/mpi/kubexec.sh",
            "OMPI_MCA_orte_default_hostfile": "/etc/mpi/hostfile",
        }
        if not launcher_asks_for_gpus(doc):
            env.update(no_gpu)
        return {
            **env,
            "I_MPI_HYDRA_BOOTSTRAP": "rsh",
            "I_MPI_HYDRA_BOOTSTRAP_EXEC": "/etc/mpi/kubexec.sh",
        }
    agent, hostfile = {
        "OpenMPI": ("OMPI_MCA_plm_rsh_agent", "OMPI_MCA_orte_default_hostfile"),
        "Intel": ("I_MPI_HYDRA_BOOTSTRAP_EXEC", "I_MPI_HYDRA_HOST_FILE"),
        "MPICH": ("HYDRA_LAUNCHER_EXEC", "HYDRA_HOST_FILE"),
    }[implementation(doc)]
    return {agent: "/etc/mpi/kubexec.sh", hostfile: "/etc/mpi/hostfile", **no_gpu}


def rendered(path: Path, tmp_path: Path) -> dict[str, dict[str, Any]]:
    out = tmp_path / "out"
    assert main(["render", str(job_file(path, tmp_path)), "--out", str(out)]) == 0
    return {f"{m['kind']}/{m['metadata']['name']}": m for m in written_manifests(out)}


def launcher_and_worker(
    objects: dict[str, dict[str, Any]], doc: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any] | None]:
    """The launcher's Job (spec and template) and the workers (replicas and pod template):
    a JobSet's replicated Jobs when Kueue queues the job, else a Job and a StatefulSet."""
    name = doc["metadata"]["name"]
    if queued(doc):
        jobs = {r["name"]: r for r in objects[f"JobSet/{name}"]["spec"]["replicatedJobs"]}
        worker = jobs.get("worker")
        return jobs["launcher"]["template"], (
            {"replicas": worker["replicas"], "template": worker["template"]["spec"]["template"]}
            if worker is not None
            else None
        )
    statefulset = objects.get(f"StatefulSet/{name}-worker")
    return objects[f"Job/{name}-launcher"], (
        statefulset["spec"] if statefulset is not None else None
    )


@pytest.mark.parametrize("path", RENDERED, ids=[p.name for p in RENDERED])
def test_a_spec_its_operator_runs_renders_as_that_operator_runs_it(path, tmp_path):
    doc = mpijob(path)
    name = doc["metadata"]["name"]
    objects = rendered(path, tmp_path)

    assert [p for manifest in objects.values() for p in schema_problems(manifest)] == (
        [
            f"1.30.0 StatefulSet/{NEEDS_DRA[path.name]}: Additional properties are not allowed "
            "('resourceClaimTemplateName' was unexpected)"
        ]
        if path.name in NEEDS_DRA
        else []
    )
    # The launcher's command and args, untouched.
    given = replicas(doc, "Launcher")["template"]["spec"]["containers"]  # type: ignore[index]
    launcher, worker = launcher_and_worker(objects, doc)
    pod = launcher["spec"]["template"]["spec"]
    for original, container in zip(given, pod["containers"], strict=True):
        assert (container.get("command"), container.get("args")) == (
            original.get("command"),
            original.get("args"),
        )
    # The hostfile: every worker with its slots, where the operator mounts it.
    config = objects[f"ConfigMap/{name}-config"]
    assert config["data"]["hostfile"] == expected_hostfile(doc)
    assert {"name": "mpi-job-config", "mountPath": "/etc/mpi", "readOnly": True} in pod[
        "containers"
    ][0]["volumeMounts"]
    # The operator's env, each once, with the operator's values.
    env = pod["containers"][0]["env"]
    names = [item["name"] for item in env]
    assert len(names) == len(set(names))
    values = {item["name"]: item.get("value") for item in env}
    assert {key: values.get(key, "<unset>") for key in expected_env(doc)} == expected_env(doc)
    # Every worker runs, with its own command when it gives one.
    workers = replicas(doc, "Worker")
    if workers is not None:
        assert worker is not None
        assert worker["replicas"] == workers["replicas"]
        original = workers["template"]["spec"]["containers"][0]
        container = worker["template"]["spec"]["containers"][0]
        if original.get("command") or original.get("args"):
            assert (container.get("command"), container.get("args")) == (
                original.get("command"),
                original.get("args"),
            )
