"""Benchmark: what `trainjobs run` adds before training starts, against a bare `mpiexec`.

All start the same script (images/scripts/train_mnist.py, the distributed example's
command) over the same three ranks, and the clock stops when rank 0 prints its first
training iteration:

- ``trainjobs run jobs/chainermn-mnist.yaml`` (``--runtime process``, the default): the CLI,
  the pod network (network namespaces when root), the pod sandboxes, the kubectl delivery and
  cluster waiter init containers, then ``mpiexec`` with the generated hostfile and rsh agent,
  daemons started through the kubectl stand-in in the worker pods;
- the same with ``--runtime container`` (when podman or docker answers, its images built):
  an engine network, a pod and a container per container, the kubectl calls through the API
  stand-in and ``podman exec``;
- ``mpiexec -n 3 --oversubscribe python3 train_mnist.py --communicator naive`` on the host.

Trials alternate between them, and each runs to completion so that one never competes
with the next. The report gives medians, the overhead (seconds and ratio) and the median
time of each start-up phase of `trainjobs run`, read from its output, to show where the
overhead goes. Not a test: numbers depend on the machine.

    .venv/bin/python bench/local_overhead.py [--trials 7] --out FILE
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
JOB = REPO / "jobs" / "chainermn-mnist.yaml"
SCRIPT = REPO / "images" / "scripts" / "train_mnist.py"
FIRST_ITERATION = "first iteration: "
GOAL_SECONDS = 0.5
"""`trainjobs run` reaches the first iteration at most this long after a bare `mpiexec`."""
CONTAINER_GOAL_SECONDS = 2.0
"""`--runtime container` reaches it at most this long after `--runtime process`."""
# Milestones in `trainjobs run` output, in order: (label, text the line contains).
PHASES = [
    ("CLI started, graph built", "[trainjobs] running "),
    ("pods up, waiter saw all workers", "cluster_waiter: all "),
    ("ranks started, data scattered", "training on "),
    ("first training iteration", FIRST_ITERATION),
]


@dataclass
class Trial:
    to_first_iteration: float
    total: float
    phases: dict[str, float] = field(default_factory=dict)


def timed(command: list[str], env: dict[str, str]) -> Trial:
    """Run ``command``; the time at which each milestone line appeared, and in all."""
    start = time.perf_counter()
    process = subprocess.Popen(
        command, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert process.stdout is not None
    phases: dict[str, float] = {}
    for line in process.stdout:
        now = time.perf_counter() - start
        for label, marker in PHASES:
            if marker in line and label not in phases:
                phases[label] = now
    code = process.wait()
    total = time.perf_counter() - start
    if code != 0 or PHASES[-1][0] not in phases:
        raise SystemExit(f"{' '.join(command)} failed (exit code {code})")
    return Trial(phases[PHASES[-1][0]], total, phases)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument(
        "--no-container", action="store_true", help="measure the process runtime alone"
    )
    args = parser.parse_args()

    bin_dir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    # The bare run gets the environment a local pod gets: the image's ENV and the yield
    # setting the runtime adds, so the two differ only in what trainjobs does.
    bare_env = {**env, "PYTHONUNBUFFERED": "1", "OMPI_MCA_mpi_yield_when_idle": "1"}
    bare = ["mpiexec", "--allow-run-as-root", "--oversubscribe", "-n", "3", "python3"]
    bare += [str(SCRIPT), "--communicator", "naive"]
    runs: list[Trial] = []
    firsts: list[Trial] = []
    containers: list[Trial] = []
    bares: list[Trial] = []
    engine = None if args.no_container else _engine()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="trainjobs-bench-") as scratch:
        # The answer cache starts empty, as on a new machine; the first run fills it.
        env["TRAINJOBS_CACHE_DIR"] = str(Path(scratch) / "answers")
        if engine is not None:
            # Not timed: builds what the container runs need (nothing when current).
            timed(_trainjobs(bin_dir, Path(scratch) / "warm-up", "container"), env)
        for index in range(args.trials):
            run_dir = Path(scratch) / f"run-{index}"
            runs.append(timed(_trainjobs(bin_dir, run_dir, "process"), env))
            # A job's first run: nothing in the answer cache yet.
            empty = {**env, "TRAINJOBS_CACHE_DIR": str(Path(scratch) / f"answers-{index}")}
            first_dir = Path(scratch) / f"first-{index}"
            firsts.append(timed(_trainjobs(bin_dir, first_dir, "process"), empty))
            if engine is not None:
                container_dir = Path(scratch) / f"container-{index}"
                containers.append(timed(_trainjobs(bin_dir, container_dir, "container"), env))
            bares.append(timed(bare, bare_env))
            print(
                f"trial {index + 1}/{args.trials}: to the first iteration, trainjobs run "
                f"{runs[-1].to_first_iteration:.2f}s "
                f"(first run {firsts[-1].to_first_iteration:.2f}s), "
                + (f"container {containers[-1].to_first_iteration:.2f}s, " if containers else "")
                + f"bare mpiexec {bares[-1].to_first_iteration:.2f}s",
                flush=True,
            )
    run_median = statistics.median(t.to_first_iteration for t in runs)
    bare_median = statistics.median(t.to_first_iteration for t in bares)
    load = (load_before, os.getloadavg()[0])
    report = render(args.trials, runs, firsts, bares, run_median, bare_median, load)
    report += render_containers(
        containers, runs, run_median, bare_median, engine, args.no_container
    )
    args.out.write_text(report, encoding="utf-8")
    print(report)
    return 0


def _trainjobs(bin_dir: Path, run_dir: Path, runtime: str) -> list[str]:
    command = [str(bin_dir / "trainjobs"), "run", str(JOB), "--run-dir", str(run_dir)]
    return [*command, "--runtime", runtime]


def _engine() -> str | None:
    """The engine container runs would use, or None (then they are not measured)."""
    from trainjobs.engines.registry import available_engines

    found = available_engines()
    return found[0].name if found else None


def render_containers(
    containers: list[Trial],
    runs: list[Trial],
    run_median: float,
    bare_median: float,
    engine: str | None,
    skipped: bool = False,
) -> str:
    """The container runtime's section: against the process runtime and a bare mpiexec."""
    lines = ["", "### `--runtime container`", ""]
    if not containers:
        why = "`--no-container`" if skipped else "no container engine answers here"
        return "\n".join([*lines, f"Not measured in this run ({why}).", ""])
    median = statistics.median(t.to_first_iteration for t in containers)
    total = statistics.median(t.total for t in containers)
    run_total = statistics.median(t.total for t in runs)
    phase = {label: statistics.median(t.phases[label] for t in containers) for label, _ in PHASES}
    run_phase = {label: statistics.median(t.phases[label] for t in runs) for label, _ in PHASES}
    cli, pods, ranks, _ = (phase[label] for label, _ in PHASES)
    difference = median - run_median
    met = "met" if difference <= CONTAINER_GOAL_SECONDS else "NOT met"
    lines += [
        f"The same job with `--runtime container` on {engine}, in the same alternating trials "
        "(its images built beforehand; a warm-up run, not counted, checks they are current).",
        "",
        "| | median to first iteration | median total | over `--runtime process` |",
        "| --- | ---: | ---: | ---: |",
        f"| `--runtime container` | {median:.2f} s | {total:.2f} s | {difference:+.2f} s "
        f"({median / run_median:.2f}x) |",
        f"| `--runtime process` | {run_median:.2f} s | {run_total:.2f} s | |",
        f"| bare `mpiexec -n 3` | {bare_median:.2f} s | | |",
        "",
        f"**Container runtime over the process runtime: {difference:+.2f} s to the first "
        f"iteration (ratio {median / run_median:.2f}x), {total - run_total:+.2f} s in all "
        f"(ratio {total / run_total:.2f}x)**; goal: at most +{CONTAINER_GOAL_SECONDS:.0f} s "
        f"to the first iteration ({met}).",
        "",
        "| milestone (median since the command started) | `--runtime container` | "
        "`--runtime process` |",
        "| --- | ---: | ---: |",
        *(f"| {label} | {phase[label]:.2f} s | {run_phase[label]:.2f} s |" for label, _ in PHASES),
        "",
        f"Start-up phases (median time since the command started): graph built {cli:.2f} s; "
        f"images checked, network, pods and containers created, kubectl delivered and the "
        f"waiter's exec round trips done at {pods:.2f} s; ranks started (their daemons through "
        f"the API stand-in and `{engine} exec`) at {ranks:.2f} s.",
        "",
        "Trials (seconds to the first iteration): "
        + ", ".join(f"{t.to_first_iteration:.2f}" for t in containers)
        + ".",
        "",
    ]
    return "\n".join(lines)


def render(
    trials: int,
    runs: list[Trial],
    firsts: list[Trial],
    bares: list[Trial],
    run_median: float,
    bare_median: float,
    load: tuple[float, float],
) -> str:
    overhead = run_median - bare_median
    first_median = statistics.median(t.to_first_iteration for t in firsts)
    first_overhead = first_median - bare_median
    mpi = subprocess.run(["mpiexec", "--version"], capture_output=True, text=True).stdout
    root = os.geteuid() == 0
    lines = [
        "# Local run overhead: `trainjobs run` vs a bare `mpiexec`",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/local_overhead.py`, "
        f"{trials} alternating trials, medians. Machine: {os.cpu_count()} cores, Linux "
        f"{platform.release()}, Python {platform.python_version()}, "
        f"{mpi.splitlines()[0] if mpi else 'mpiexec'}, running as "
        f"{'root (pods in network namespaces)' if root else 'a user (loopback pods)'}; "
        f"1-minute load average {load[0]:.1f} at the start and {load[1]:.1f} at the end (on a "
        "machine shared with other work, every variant is measured in the same alternating "
        "trials, so each sees the same load).",
        "",
        "Both start `images/scripts/train_mnist.py --communicator naive` over 3 ranks; the "
        "clock stops at rank 0's `first iteration` line.",
        "",
        "| | median to first iteration | median total |",
        "| --- | ---: | ---: |",
        f"| `trainjobs run jobs/chainermn-mnist.yaml` | {run_median:.2f} s | "
        f"{statistics.median(t.total for t in runs):.2f} s |",
        f"| the same, a job's first run (empty answer cache) | {first_median:.2f} s | "
        f"{statistics.median(t.total for t in firsts):.2f} s |",
        f"| bare `mpiexec -n 3` | {bare_median:.2f} s | "
        f"{statistics.median(t.total for t in bares):.2f} s |",
        "",
        f"**Overhead: {overhead:+.2f} s (ratio {run_median / bare_median:.2f}x)**; "
        f"goal: at most +{GOAL_SECONDS} s ({'met' if overhead <= GOAL_SECONDS else 'NOT met'}). "
        f"A job's first run: {first_overhead:+.2f} s (ratio {first_median / bare_median:.2f}x; "
        f"{'met' if first_overhead <= GOAL_SECONDS else 'NOT met'}): it also checks the pod "
        "templates against the Kubernetes schema (jsonschema and the schema's files loaded), "
        "whose answers later runs of the job read from the answer cache "
        "(`trainjobs.core.answer_cache`).",
        "",
        "Where `trainjobs run` spends its start-up (median time since the command started):",
        "",
        "| milestone | `trainjobs run` | bare `mpiexec` |",
        "| --- | ---: | ---: |",
    ]
    for label, _ in PHASES:
        bare_values = [t.phases[label] for t in bares if label in t.phases]
        bare_cell = f"{statistics.median(bare_values):.2f} s" if bare_values else "n/a"
        lines.append(
            f"| {label} | {statistics.median(t.phases[label] for t in runs):.2f} s | {bare_cell} |"
        )
    phase = {label: statistics.median(t.phases[label] for t in runs) for label, _ in PHASES}
    cli, pods, ranks, _ = (phase[label] for label, _ in PHASES)
    bare_ranks = statistics.median(t.phases[PHASES[2][0]] for t in bares)
    lines += [
        "",
        "Reading: the overhead is the command line starting and building the graph "
        f"({cli:.2f} s: Python imports of `trainjobs`), plus creating the pod network, the "
        f"sandboxes, the kubectl delivery and the cluster waiter's exec round trips "
        f"({pods - cli:.2f} s); launching the ranks through the rsh agent and the kubectl "
        f"stand-in into the worker pods then takes {ranks - pods:.2f} s against "
        f"{bare_ranks:.2f} s for a bare `mpiexec` starting them on the host (both are "
        "dominated by three Python processes importing Chainer on two cores).",
    ]
    lines += [
        "",
        "Trials (seconds to the first iteration):",
        "",
        "| trial | `trainjobs run` | first run | bare `mpiexec` |",
        "| ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {i + 1} | {run.to_first_iteration:.2f} | {first.to_first_iteration:.2f} "
        f"| {bare.to_first_iteration:.2f} |"
        for i, (run, first, bare) in enumerate(zip(runs, firsts, bares, strict=True))
    ]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    if shutil.which("mpiexec") is None:
        raise SystemExit("needs Open MPI's mpiexec (make system-deps)")
    sys.exit(main())
