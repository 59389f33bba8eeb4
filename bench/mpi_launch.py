"""Does a ChainerJob with 70 worker pods launch its MPI program, and how long does that take?

Open MPI 4 starts the daemons of more than ``routed_radix`` (64) hosts through a tree unless
``plm_rsh_no_tree_spawn`` is set; worker pods cannot exec into other pods. This runs
`trainjobs run` (network namespaces, root) on a generated ChainerJob with a master and 70
workers whose command is a trivial MPI program: every one of the 71 ranks takes part in an
allreduce and prints the result. Reported: the run's outcome, the ranks that answered with
the full sum, and the wall time of the whole run (pod start-up, the cluster waiter's exec
round trip to every worker, the MPI launch, clean-up).

Usage: ``.venv/bin/python bench/mpi_launch.py [--workers 70] --out FILE``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import yaml

from trainjobs.local.files import read_log

REPO = Path(__file__).resolve().parent.parent

PROGRAM = (
    "import os; from mpi4py import MPI; world = MPI.COMM_WORLD; "
    "os.write(1, f'rank {world.rank} of {world.size} sum {world.allreduce(1)}\\n'.encode())"
)


def job(workers: int) -> dict:
    image = "trainjobs/chainermn:7.8.1"
    command = ["mpiexec", "--allow-run-as-root", "-n", str(workers + 1), "python3", "-c"]
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": f"mpi-{workers}"},
        "spec": {
            "backend": "mpi",
            "master": {
                "backoffLimit": 0,
                "template": {
                    "spec": {"containers": [{"image": image, "command": [*command, PROGRAM]}]}
                },
            },
            "worker": {
                "replicas": workers,
                "template": {"spec": {"containers": [{"image": image}]}},
            },
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=70)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "job.yaml"
        spec.write_text(yaml.safe_dump(job(args.workers)))
        run_dir = Path(tmp) / "run"
        command = [
            str(REPO / ".venv" / "bin" / "trainjobs"),
            "run",
            str(spec),
            "--run-dir",
            str(run_dir),
            "--network",
            "netns",
        ]
        started = time.perf_counter()
        done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
        summary = json.loads((run_dir / "summary.json").read_text())
        # Each log line starts with its time (trainjobs.local.files.log_record).
        log = "\n".join(read_log(run_dir / "logs" / f"mpi-{args.workers}-master.log"))
    ranks = args.workers + 1
    answered = set(re.findall(rf"^rank (\d+) of {ranks} sum {ranks}$", log, re.MULTILINE))
    print(f"exit {done.returncode}, {summary['outcome']}, {len(answered)} ranks, {seconds:.1f}s")
    lines = [
        f"# MPI launch across {args.workers} worker pods",
        "",
        f"`trainjobs run` of a ChainerJob with a master and {args.workers} workers (network "
        "namespaces), whose master runs `mpiexec -n "
        f"{ranks}` over an allreduce in mpi4py. Produced by `bench/mpi_launch.py` on "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, {platform.python_implementation()} "
        f"{platform.python_version()}, {os.cpu_count()} CPU(s).",
        "",
        "| pods | outcome | ranks with the full sum | wall time |",
        "|---|---|---|---|",
        f"| {ranks} | {summary['outcome']} (exit {done.returncode}) | {len(answered)} of "
        f"{ranks} | {seconds:.1f} s |",
        "",
        "Past 64 hosts Open MPI 4 would launch daemons from daemons; the master's "
        "`OMPI_MCA_plm_rsh_no_tree_spawn=1` keeps every launch on the master, the only pod "
        "with the rsh agent's credentials. The test suite checks the same with the routing "
        "radix lowered to 2 and 4 workers (`tests/kinds/chainer/test_mpi_plumbing.py`).",
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0 if done.returncode == 0 and len(answered) == ranks else 1


if __name__ == "__main__":
    sys.exit(main())
