"""ChainerMN throughput of the distributed example at 1, 2 and 3 ranks on CPU.

Runs `images/scripts/train_mnist.py --communicator naive` under a bare `mpiexec -n K` (the
training itself, not the orchestration around it) and times rank 0's epoch lines: epoch 1
is warm-up, the rest are measured. Every run trains on the same global data set (strong
scaling), so throughput is training samples per second and scaling efficiency is
throughput(K) / (K x throughput(1)). This machine has 2 cores: 3 ranks oversubscribe it.

Usage: ``.venv/bin/python bench/throughput.py [--epochs 20] [--trials 3] --out FILE``.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "images" / "scripts" / "train_mnist.py"
RANKS = (1, 2, 3)
_SAMPLES = re.compile(r"(\d+) training and \d+ validation samples")
_EPOCH = re.compile(r"^epoch (\d+)/")


def run(ranks: int, epochs: int) -> float:
    """Training samples per second over epochs 2..N."""
    env = {
        **os.environ,
        "OMPI_ALLOW_RUN_AS_ROOT": "1",
        "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
        # Idle ranks yield the CPU instead of spinning: essential with more ranks than cores.
        "OMPI_MCA_mpi_yield_when_idle": "1",
        "PYTHONUNBUFFERED": "1",
    }
    command = [
        "mpiexec", "--oversubscribe", "-n", str(ranks),
        sys.executable, str(SCRIPT), "--communicator", "naive", "--epochs", str(epochs),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env)
    assert process.stdout is not None
    samples, stamps = 0, {}
    for line in process.stdout:
        if match := _SAMPLES.search(line):
            samples = int(match.group(1))
        if match := _EPOCH.match(line):
            stamps[int(match.group(1))] = time.perf_counter()
    if process.wait() != 0:
        raise RuntimeError(f"{' '.join(command)} exited with {process.returncode}")
    return samples * (epochs - 1) / (stamps[epochs] - stamps[1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=20)
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if shutil.which("mpiexec") is None:
        raise SystemExit("mpiexec not found: run `make setup` as root to install Open MPI")
    results: dict[int, list[float]] = {ranks: [] for ranks in RANKS}
    for _ in range(args.trials):
        for ranks in RANKS:
            results[ranks].append(run(ranks, args.epochs))
    single = statistics.median(results[1])
    lines = [
        "## ChainerMN throughput (distributed example, CPU, naive communicator)",
        "",
        f"Median of {args.trials} runs, {args.epochs} epochs each (the first is warm-up); "
        f"`mpiexec -n K`, {os.cpu_count()} cores.",
        "",
        "| ranks | samples/s (median) | min-max | speed-up | scaling efficiency |",
        "| ---: | ---: | ---: | ---: | ---: |",
    ]
    for ranks, values in results.items():
        median = statistics.median(values)
        lines.append(
            f"| {ranks} | {median:.0f} | {min(values):.0f}-{max(values):.0f} | "
            f"{median / single:.2f}x | {median / (ranks * single):.0%} |"
        )
    cores = os.cpu_count() or 1
    efficiency = {r: statistics.median(v) / (r * single) for r, v in results.items()}
    lines += [
        "",
        f"Reading: up to {cores} ranks each rank has a core of its own, and efficiency at "
        f"{min(cores, max(RANKS))} ranks is {efficiency[min(cores, max(RANKS))]:.0%}; beyond "
        f"{cores} ranks they time-share the cores, so efficiency at {max(RANKS)} ranks "
        f"({efficiency[max(RANKS)]:.0%}) measures oversubscription, not the communicator.",
    ]
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
