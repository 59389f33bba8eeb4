"""Benchmark: the cost of launching MPI over N pods, kubectl exec against ssh, and a bare mpiexec.

For each size (8, 32 and 128 pods, one rank each) and each transport, ``trainjobs run`` starts
a ChainerJob whose master runs ``mpiexec -n N`` of ``bench/mpi_hello.c`` (MPI_Init, one line
per rank, MPI_Finalize) over N-1 sleep-loop (kubectl) or sshd (ssh) workers. The clock starts
when the command starts and stops when the master's output holds all N rank lines; the
milestones in between come from the run's output. The same program under a bare ``mpiexec
-n N`` on this host is the baseline.

API calls are counted by the kubectl stand-in (``summary.json``'s ``apiCalls``): every call
the generated assets would make to a cluster's API server once the pods exist (the waiter's
``get`` and ``exec`` round trips, then one ``exec`` per worker daemon, each held open for the
whole job on a cluster). The ssh transport makes none.

The kubectl transport starts every daemon from the master (``plm_rsh_no_tree_spawn``, which
the master's environment sets): worker pods carry no kubectl and no token, so Open MPI
cannot start daemons from them. The ssh transport keeps Open MPI's tree spawn (past 64
daemons, daemons start daemons).

    .venv/bin/python bench/launch_cost.py [--trials 3] [--sizes 8 32 128] --out FILE
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import pwd
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
SOURCE = REPO / "bench" / "mpi_hello.c"
IMAGE = "trainjobs/chainermn:7.8.1"
TRANSPORTS = ("kubectl", "ssh")
# Milestones in `trainjobs run` output: (label, text the line contains).
MILESTONES = [("graph built", "[trainjobs] running "), ("workers reachable", "workers ready after")]


@dataclass
class Trial:
    to_all_ranks: float
    total: float
    milestones: dict[str, float] = field(default_factory=dict)
    api_calls: dict[str, int] = field(default_factory=dict)


def job_spec(pods: int, program: Path) -> dict:
    """The same spec for both transports: `--mpi-transport` decides how daemons start."""
    command = ["mpiexec", "--allow-run-as-root", "-n", str(pods)]
    return {
        "apiVersion": "kubeflow.org/v1alpha1",
        "kind": "ChainerJob",
        "metadata": {"name": "launch"},
        "spec": {
            "master": {
                "backoffLimit": 0,
                "template": {
                    "spec": {"containers": [{"image": IMAGE, "command": [*command, str(program)]}]}
                },
            },
            "worker": {
                "replicas": pods - 1,
                "template": {"spec": {"containers": [{"image": IMAGE}]}},
            },
        },
    }


def timed(command: list[str], pods: int, prefix: str) -> Trial:
    """Run ``command``; when each milestone and the last of ``pods`` rank lines appeared."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    milestones: dict[str, float] = {}
    ranks = 0
    all_ranks = None
    for line in process.stdout:
        now = time.perf_counter() - start
        for label, marker in MILESTONES:
            if marker in line and label not in milestones:
                milestones[label] = now
        if line.startswith(f"{prefix}rank "):
            ranks += 1
            if ranks == pods:
                all_ranks = now
    code = process.wait()
    total = time.perf_counter() - start
    if code != 0 or all_ranks is None:
        raise SystemExit(f"{' '.join(command)} failed (exit {code}, {ranks}/{pods} ranks)")
    return Trial(all_ranks, total, milestones)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()

    trainjobs = str(Path(sys.executable).parent / "trainjobs")
    results: dict[tuple[int, str], list[Trial]] = {}
    with tempfile.TemporaryDirectory(prefix="trainjobs-launch-") as scratch_dir:
        scratch = Path(scratch_dir)
        program = scratch / "mpi_hello"
        subprocess.run(["mpicc", "-O1", "-o", str(program), str(SOURCE)], check=True)
        for trial in range(args.trials):
            for pods in args.sizes:
                for transport in TRANSPORTS:
                    spec = scratch / f"launch-{pods}-{transport}.yaml"
                    spec.write_text(yaml.safe_dump(job_spec(pods, program)))
                    run_dir = scratch / f"run-{pods}-{transport}-{trial}"
                    command = [trainjobs, "run", str(spec), "--run-dir", str(run_dir)]
                    result = timed(
                        [*command, "--mpi-transport", transport], pods, "[launch-master] "
                    )
                    summary = json.loads((run_dir / "summary.json").read_text())
                    result.api_calls = summary["apiCalls"]
                    results.setdefault((pods, transport), []).append(result)
                bare = ["mpiexec", "--allow-run-as-root", "--oversubscribe", "-n", str(pods)]
                results.setdefault((pods, "bare"), []).append(
                    timed([*bare, str(program)], pods, "")
                )
                print(
                    f"trial {trial + 1}/{args.trials}, {pods} pods: "
                    + ", ".join(
                        f"{kind} {results[(pods, kind)][-1].to_all_ranks:.2f}s"
                        for kind in (*TRANSPORTS, "bare")
                    ),
                    flush=True,
                )
    report = render(args.trials, args.sizes, results)
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} s" if values else "n/a"


def _range(values: list[float]) -> str:
    return f"{min(values):.2f}-{max(values):.2f}"


def render(trials: int, sizes: list[int], results: dict[tuple[int, str], list[Trial]]) -> str:
    mpi = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout
    load = os.getloadavg()[0]
    lines = [
        "# Launch cost: MPI over N pods, kubectl exec vs ssh",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/launch_cost.py`, {trials} "
        f"trial(s) per cell, sizes and transports interleaved, medians (min-max). Machine: "
        f"{os.cpu_count()} cores, Linux {platform.release()}, "
        f"{mpi.splitlines()[0] if mpi else 'mpiexec'}, 1-minute load average {load:.1f} at "
        "the end. Pods are network namespaces on this machine; every pod's processes share "
        "its cores.",
        "",
        "The program is `bench/mpi_hello.c` (MPI_Init, one line per rank, MPI_Finalize), one "
        "rank per pod. *To all ranks* is the time from the command's start to the last rank's "
        "line; *workers reachable* is when the master's cluster waiter saw every worker (an "
        "exec, or an ssh, round trip each). API calls are those the kubectl stand-in served "
        "once the pods existed: what the job's own assets would ask of a cluster's API server "
        "(its controllers' work to create the pods is the same for both and not counted).",
        "",
        "| pods | launch | workers reachable | to all ranks | min-max | total | API calls "
        "after the pods exist |",
        "| ---: | --- | ---: | ---: | ---: | ---: | --- |",
    ]
    for pods in sizes:
        for kind in (*TRANSPORTS, "bare"):
            trials_ = results[(pods, kind)]
            to_all = [t.to_all_ranks for t in trials_]
            reachable = [t.milestones["workers reachable"] for t in trials_ if t.milestones]
            if kind == "bare":
                label, calls = f"bare `mpiexec -n {pods}` on one host", "none (no cluster)"
            else:
                label = f"`trainjobs run --mpi-transport {kind}`"
                counts = trials_[-1].api_calls
                calls = ", ".join(f"{n} {call}" for call, n in counts.items()) if counts else "0"
            lines.append(
                f"| {pods} | {label} | {_median(reachable)} | {_median(to_all)} | "
                f"{_range(to_all)} | {_median([t.total for t in trials_])} | {calls} |"
            )
    lines += ["", *_growth(sizes, results), "", session_shell_cost(), "", READING]
    return "\n".join(lines) + "\n"


READING = (
    "Reading: on this machine a `kubectl exec` is a local process (the stand-in enters the pod's "
    "namespaces), while an ssh connection is a key exchange, an authentication and a session "
    "through the login shell, all on the same two cores as every pod; so locally ssh launches "
    "cost more, growing with the pods as the daemons do. On a cluster each exec is instead a "
    "request through the API server to the node's kubelet, and the daemons' exec streams stay "
    "open through the API server for the whole job, which no local measurement shows: what the "
    "ssh transport removes is the last column. Past 64 daemons the ssh transport starts the "
    "rest from other daemons (tree spawn); the kubectl transport starts all from the master."
)


def session_shell_cost() -> str:
    """What each ssh session's login shell costs here before it runs anything: sshd starts
    every session through the user's shell, and bash then reads ~/.bashrc."""
    shell = Path(pwd.getpwuid(os.getuid()).pw_shell).name
    rc = Path.home() / ".bashrc"
    if shell != "bash" or not rc.is_file():
        return f"Each ssh session starts through the login shell ({shell}), which reads no rc file."
    rounds = 10
    start = time.perf_counter()
    for _ in range(rounds):
        subprocess.run(["bash", "-c", f". {rc}"], stdin=subprocess.DEVNULL, capture_output=True)
    each = (time.perf_counter() - start) / rounds
    return (
        f"Each ssh session starts through the login shell, bash, which reads {rc} when sshd "
        f"starts it: {each * 1000:.0f} ms here per session (the waiter's probe and each "
        "daemon are one session each); a container's own shell and rc files take its place "
        "on a cluster."
    )


def _growth(sizes: list[int], results: dict[tuple[int, str], list[Trial]]) -> list[str]:
    """How each launch's cost grows with the pod count: seconds per added pod."""
    if len(sizes) < 2:
        return []
    small, large = min(sizes), max(sizes)
    lines = [f"How cost grows from {small} to {large} pods (median seconds per added pod):", ""]
    for kind in (*TRANSPORTS, "bare"):
        low = statistics.median(t.to_all_ranks for t in results[(small, kind)])
        high = statistics.median(t.to_all_ranks for t in results[(large, kind)])
        lines.append(
            f"- {kind}: {low:.2f} s -> {high:.2f} s, {(high - low) / (large - small) * 1000:.0f} "
            "ms per pod"
        )
    kubectl_calls = results[(large, "kubectl")][-1].api_calls
    ssh_calls = results[(large, "ssh")][-1].api_calls
    lines += [
        "",
        f"With {large} pods the kubectl transport made {sum(kubectl_calls.values())} API "
        f"calls after the pods existed ({kubectl_calls.get('create pods/exec', 0)} of them "
        "exec streams, of which one per worker stays open for the whole job on a cluster); "
        f"the ssh transport made {sum(ssh_calls.values())}.",
    ]
    return lines


if __name__ == "__main__":
    sys.exit(main())
