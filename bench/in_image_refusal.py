"""Benchmark: how soon a process run refuses a command naming a path inside the image that it
cannot provide, against `trainjobs validate` of the same file in the same run.

The spec is Kubeflow's examples/pytorch/simple.yaml shape (Master and Worker running
``python3 /opt/pytorch-mnist/mnist.py``), its image mapped to trainjobs/pytorch:2.13.0-cpu,
which declares no such file. Each trial runs ``trainjobs validate FILE`` (the baseline: read,
check and render the job), then ``trainjobs run FILE --map-image ...`` (refused with exit 2
before any pod starts). Medians with min-max of the wall time; the ratio is the medians'.
Not a test: numbers depend on the machine.

    .venv/bin/python bench/in_image_refusal.py [--trials 15] --out FILE
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

TRAINJOBS = Path(sys.executable).parent / "trainjobs"
IMAGE = "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727"
GOAL_SECONDS = 2.0
"""The refusal's goal: exit 2 within this many seconds."""


def spec() -> dict[str, object]:
    replica = {
        "restartPolicy": "OnFailure",
        "template": {
            "spec": {
                "containers": [
                    {
                        "name": "pytorch",
                        "image": IMAGE,
                        "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
                    }
                ]
            }
        },
    }
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pytorch-simple"},
        "spec": {"pytorchReplicaSpecs": {"Master": replica, "Worker": replica}},
    }


def timed(command: list[str], expected: int) -> float:
    started = time.monotonic()
    result = subprocess.run(command, capture_output=True, check=False)
    elapsed = time.monotonic() - started
    if result.returncode != expected:
        raise SystemExit(f"{command}: exit {result.returncode}: {result.stderr.decode()}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "job.yaml"
        path.write_text(yaml.safe_dump(spec()), encoding="utf-8")
        validate = [str(TRAINJOBS), "validate", str(path)]
        run = [str(TRAINJOBS), "run", str(path), "--run-dir", str(Path(scratch) / "run")]
        run += ["--map-image", f"{IMAGE}=trainjobs/pytorch:2.13.0-cpu"]
        baseline, refusal = [], []
        for _ in range(args.trials):
            baseline.append(timed(validate, 0))
            refusal.append(timed(run, 2))
    ratio = statistics.median(refusal) / statistics.median(baseline)
    rows = [("`trainjobs validate` (baseline)", baseline), ("`trainjobs run`, refused", refusal)]
    lines = [
        "## In-image path refusal",
        "",
        f"{args.trials} trials each, one after another; wall time from start to exit.",
        "",
        "| command | median | min-max |",
        "| --- | --- | --- |",
        *(
            f"| {name} | {statistics.median(times):.2f} s | {min(times):.2f}-{max(times):.2f} s |"
            for name, times in rows
        ),
        "",
        f"Refusal / baseline (medians): {ratio:.2f}x; goal: under {GOAL_SECONDS:.0f} s.",
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
