"""A process run refuses a command naming a path inside the image that it cannot provide."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.local.runs import Run
from trainjobs.local.image_paths import script_index

KUBEFLOW_IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"


def kubeflow_simple(command: list[str], **container: Any) -> dict[str, Any]:
    """Kubeflow training-operator's examples/pytorch/simple.yaml (its Master and Worker)."""
    replica = {
        "restartPolicy": "OnFailure",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": KUBEFLOW_IMAGE,
                        "imagePullPolicy": "Always",
                        "command": command,
                        **container,
                    }
                ]
            }
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pytorch-simple", "namespace": "kubeflow"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, **replica},
                "Worker": {"replicas": 1, **replica},
            }
        },
    }


MNIST = ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
AS_PYTORCH = ("--map-image", f"{KUBEFLOW_IMAGE}=trainjobs/pytorch:2.13.0-cpu")
frameworks = pytest.mark.frameworks
"""Runs Kubeflow's PyTorch example as trainjobs' PyTorch image: needs the pytorch extra."""


def write(path: Path, document: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump(document), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("argv", "index"),
    [
        (["python3", "/opt/x.py", "--epochs=1"], 1),
        (["python3.11", "-u", "/opt/x.py"], 2),
        (["/usr/bin/python", "-m", "torch.distributed.run", "/opt/x.py"], None),
        (["sh", "-c", "/opt/x.sh"], None),
        (["bash", "/opt/x.sh"], 1),
        (["torchrun", "/opt/x.py"], None),
        (["python3"], None),
    ],
)
def test_the_script_an_interpreter_runs_is_found(argv: list[str], index: int | None):
    assert script_index(argv) == index


@frameworks
def test_a_process_run_refuses_the_in_image_script_before_any_pod(tmp_path: Path):
    """Mapped to a declared image that lacks the script: refused before any pod, in one line,
    nothing retried and nothing created (how soon: bench/in_image_refusal.py)."""
    run = Run(write(tmp_path / "job.yaml", kubeflow_simple(MNIST)), tmp_path / "run", *AS_PYTORCH)

    assert run.exit_code == 2
    assert run.stderr == (
        "error: Job/pytorch-simple-master-0 pod template spec.containers[0].command[1]: "
        "'/opt/pytorch-mnist/mnist.py' is a file inside the image that a process run cannot "
        "provide (image trainjobs/pytorch:2.13.0-cpu declares only /train_pytorch.py, and no "
        "volume or file of this machine is there): run the job with --runtime container, "
        "which runs the image itself\n"
    )
    assert run.lines == []
    assert not (tmp_path / "run").exists()


@frameworks
def test_a_program_named_by_an_absent_in_image_path_is_refused(tmp_path: Path):
    job = kubeflow_simple(["/opt/venv/bin/train", "--epochs=1"])
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *AS_PYTORCH)

    assert run.exit_code == 2
    assert run.stderr.startswith(
        "error: Job/pytorch-simple-master-0 pod template spec.containers[0].command[0]: "
        "'/opt/venv/bin/train' is a file inside the image that a process run cannot provide"
    )


@frameworks
def test_a_script_on_a_volume_is_left_to_the_volume(tmp_path: Path):
    """The script is on an emptyDir the job fills: not refused up front (it fails at run
    time, as on a cluster)."""
    job = kubeflow_simple(
        ["python3", "/scripts/train.py"],
        volumeMounts=[{"name": "scripts", "mountPath": "/scripts"}],
    )
    for replica in job["spec"]["pytorchReplicaSpecs"].values():
        replica["template"]["spec"]["volumes"] = [{"name": "scripts", "emptyDir": {}}]
        replica["restartPolicy"] = "Never"
    job["spec"]["runPolicy"] = {"backoffLimit": 0}
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *AS_PYTORCH)

    assert run.exit_code == 1
    assert run.pod_log("pytorch-simple-master-0")[-1].endswith(
        "/volumes/scripts/train.py': [Errno 2] No such file or directory"
    )


# -- images the user declares beside the job ---------------------------------------------------

KUBEFLOW_SHAPED = """\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int)
print(f"rank {os.environ['RANK']} of {os.environ['WORLD_SIZE']}: {parser.parse_args().epochs} epoch(s)")
"""


def declare(directory: Path, text: str) -> None:
    (directory / "trainjobs-images.yaml").write_text(text, encoding="utf-8")


def test_an_image_declared_beside_the_job_runs_its_in_image_script(tmp_path: Path):
    (tmp_path / "mnist.py").write_text(KUBEFLOW_SHAPED, encoding="utf-8")
    declare(
        tmp_path,
        f"""\
images:
  - reference: {KUBEFLOW_IMAGE}
    summary: Kubeflow's PyTorch MNIST example, its script from this directory
    files:
      - {{path: /opt/pytorch-mnist/mnist.py, source: mnist.py}}
""",
    )
    run = Run(write(tmp_path / "job.yaml", kubeflow_simple(MNIST)), tmp_path / "run")

    assert run.exit_code == 0, run.output
    # The master's completion is the job's: the worker may be stopped before it prints.
    assert run.pod_log("pytorch-simple-master-0") == ["rank 0 of 2: 1 epoch(s)"]


def test_a_bad_declaration_beside_the_job_is_refused_naming_each_field(tmp_path: Path):
    declare(
        tmp_path,
        f"""\
images:
  - reference: {KUBEFLOW_IMAGE}
    summary: a script that is not there, a loose pin, a build
    files: [{{path: /opt/pytorch-mnist/mnist.py, source: missing.py}}]
  - reference: example.org/loose:1
    summary: loose
    python_packages: ["torch>=2"]
  - reference: trainjobs/pytorch:2.13.0-cpu
    summary: trainjobs' own
""",
    )
    run = Run(write(tmp_path / "job.yaml", kubeflow_simple(MNIST)), tmp_path / "run")

    assert run.exit_code == 2
    assert run.stderr == (
        f"error: {tmp_path / 'trainjobs-images.yaml'}: invalid image declarations (3 problem(s))\n"
        f"  images[0].files[0].source: 'missing.py' is not a file in {tmp_path}\n"
        "  images[1].python_packages: pin every package exactly as "
        "'name==version' (got ['torch>=2'])\n"
        "  images[2].reference: 'trainjobs/pytorch:2.13.0-cpu' is trainjobs' own image; name "
        "your image otherwise\n"
    )
    assert not (tmp_path / "run").exists()


def test_a_program_missing_from_a_declared_image_names_its_declaration_and_the_container_runtime(
    tmp_path: Path,
):
    declare(
        tmp_path,
        f"""\
images:
  - reference: {KUBEFLOW_IMAGE}
    summary: a program this machine does not have
""",
    )
    job = kubeflow_simple(["mnist-train", "--epochs=1"])
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run")

    assert run.exit_code == 2
    assert run.stderr.startswith(
        "error: Job/pytorch-simple-master-0 pod template spec.containers[0]: mnist-train is not "
        "on this machine (PATH="
    )
    assert run.stderr.endswith(
        f"declare it among the files of image {KUBEFLOW_IMAGE} (your own images: in "
        "trainjobs-images.yaml beside the job), or run the job with --runtime container\n"
    )
