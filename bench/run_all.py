"""`make bench`: every benchmark, one after another, into bench/RESULTS.md.

Each benchmark runs in its own process and writes a Markdown section; this driver adds the
date, the machine, each benchmark's wall time and peak memory (the maximum resident set of
that process and its children, from wait4), and the profiling notes.

Usage: ``.venv/bin/python bench/run_all.py [--quick] [--only NAME ...]`` (``--quick``: fewer
trials, for a smoke run; ``--only``: run the named benchmarks and keep the other sections of
the existing file as they are, each saying when it was measured).
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "RESULTS.md"


@dataclass(frozen=True)
class Benchmark:
    name: str
    script: str
    full: tuple[str, ...]
    quick: tuple[str, ...]
    title: str
    """How its section's title starts (to find the section in an earlier file)."""


BENCHMARKS = (
    Benchmark("first run", "first_run.py", (), (), "## First run"),
    Benchmark(
        "graph cost", "graph_cost.py", ("--repeats", "5"), ("--repeats", "1"), "## Graph cost"
    ),
    Benchmark(
        "program cost", "program_cost.py", ("--trials", "7"), ("--trials", "1"), "## Program cost"
    ),
    Benchmark(
        "watch latency",
        "watch_latency.py",
        ("--trials", "200"),
        ("--trials", "100"),
        "## Completion watcher latency",
    ),
    Benchmark(
        "stack watch", "stack_watch.py", ("--trials", "5"), ("--trials", "1"), "## A 10-job stack"
    ),
    Benchmark(
        "CLI start-up", "cli_startup.py", ("--trials", "25"), ("--trials", "3"), "## CLI start-up"
    ),
    Benchmark(
        "in-image path refusal",
        "in_image_refusal.py",
        ("--trials", "15"),
        ("--trials", "3"),
        "## In-image path refusal",
    ),
    Benchmark(
        "MPI launch, 70 workers",
        "mpi_launch.py",
        ("--workers", "70"),
        ("--workers", "70"),
        "## MPI launch across",
    ),
    Benchmark(
        "local-run overhead",
        "local_overhead.py",
        ("--trials", "7"),
        ("--trials", "1"),
        "## Local run overhead",
    ),
    Benchmark(
        "ChainerMN throughput",
        "throughput.py",
        ("--trials", "3"),
        ("--trials", "1"),
        "## ChainerMN throughput",
    ),
    Benchmark(
        "MPI launch cost",
        "launch_cost.py",
        ("--trials", "3"),
        ("--trials", "1", "--sizes", "8", "32"),
        "## Launch cost",
    ),
)

PROFILING_NOTES = """\
## Profiling notes (what the profiles showed, and what was changed)

- Program cost: cProfile of the 100-job stack showed the extra time over the bare program in
  the Pulumi SDK resolving `depends_on` lists (`contains_unknowns`, task scheduling), not in
  trainjobs' own code. Each job listed every earlier node as a dependency (20 edges per
  job); it now lists only the tier before (7 edges), which orders creation and deletion the
  same way. Measured on this machine before the change: 1.37x the bare program (watch off).
- Render cost: `trainjobs render` spent ~85% of its time in PyYAML's pure-Python emitter
  (9.8 ms per job). Manifests are now written with libyaml's emitter when available: 1.6 ms
  per job, byte-identical output (the CRD currency test checks the files are unchanged).
- Command-line start-up: importing the Pulumi SDK for every subcommand cost ~0.3 s of
  `trainjobs run`'s overhead; the diff command no longer imports the watcher module and the
  GPU pool's Pulumi component moved out of the scheduling module (`trainjobs --help`: 0.75 s
  -> 0.45 s).
- Completion watcher: one registered resource per stack, whose inputs describe every job.
  Serialising the dynamic provider is cheap (pickled by reference, ~0.04 ms); the watcher
  costs what the SDK charges for registering any resource.
- Program cost, again (2026-11-25): cProfile of the 100-job stack showed half of trainjobs'
  own time in reading the 100 spec files with PyYAML's pure-Python scanner and parser. Specs
  are now parsed by libyaml's (composed and checked in Python as before; a file libyaml
  refuses is parsed again in pure Python for the message): 2.5 ms -> 0.3 ms per spec. The
  schema check of a pod template now runs once per content (100 jobs sharing two templates:
  200 checks -> 2).
- Command-line start-up (2026-11-25): `trainjobs` imported every command's module, and the
  job registry every kind's spec models (pydantic classes are built at import), before
  parsing its arguments. A command now imports its own module alone, the registry a kind's
  models when a spec of that kind is read, and the schema validator loads on the first
  template check; `tests/test_command_imports.py` checks what each path loads.
- `trainjobs run` before the first pod (2026-11-25, cProfile of the command up to the run's
  start): a third of its time went to checking that each image's pinned Python packages are
  installed, by reading the metadata of every installed distribution (about 200) once per
  container: 0.38 s for the ChainerMN job. It now looks up the pinned names alone, once each
  (0.03 s). A process run no longer imports the container runtime, the engine clients or the
  image builder, and `run --help` not even the engine interface (the test pins both).
- Container runtime start-up (2026-11-25, every `podman` call timed through a logging wrapper,
  one run of the ChainerMN job on the shared machine, 1-minute load 1 to 5): the CLI and graph
  (2.2 s under that load, as for processes); `podman version` 0.11 s; 7 `image inspect` calls,
  0.97 s (the kubectl stand-in asked about 4 times, for presence and for its recipe label,
  twice over; the job's image twice; the Debian base once), about 0.1 s each; the 3 listings
  of what killed runs left, 0.19 s; the network, 0.09 s; then per pod `pod create` (0.16-0.31
  s), `pod start` (0.26-0.37 s) and the infra PID (0.07-0.10 s), pod after pod: 1.95 s for 3
  pods; the master's kubectl delivery (one `podman run`, 0.57 s) and cluster waiter (1.47 s,
  two `podman exec` of 0.23-0.32 s); at the end 3 `pod rm` of 0.40-0.64 s each, one after
  another. Now: one `image inspect` per image per run (presence and labels together), all at
  once and overlapping the listings; the first pods' engine pods (workers and master) created
  together; the stopped pods removed together; podman's three listings asked at once. The
  master's init containers and the waiter are the job's own (as on a cluster) and unchanged.
- Program cost, a third time (2026-11-25): the preview itself (`run_preview`, timed in every
  row) ordered resources by scanning and sorting every waiting one per step, quadratic in the
  stack, and ran the event loop twice per stack output. It now keeps a heap of the ready
  resources (same order) and reads all outputs in one run of the loop. Function calls under
  cProfile (deterministic, unlike times on this shared machine), before -> after: baseline
  7.65M -> 6.92M, watch off 8.73M -> 8.19M, with the watcher 9.55M -> 9.00M: the bare
  program, with 700 resources ready at once, gained the most, so the ratios did not improve.
  Spec files without YAML aliases are no longer measured for alias expansion (composing
  already bounds them). What remains over the bare program is the SDK's own per-resource
  work for the 100 components, their options and `depends_on` edges, and the watcher's
  outputs (11 fields per job, each an `apply`).
- Bytecode (2026-11-28): the machines here set `PYTHONDONTWRITEBYTECODE=1`, and pip installs
  with `--no-compile`, so every command compiled what it imported, every time (importing
  pulumi-kubernetes' Job, Pod and StatefulSet modules: 1.82 s from source, 1.01 s from
  bytecode). The Makefile unexports it: `pytest -n 2 tests/review` 50 s -> 34 s. Local runs
  gain too, `trainjobs run` and bare `mpiexec` alike (their ranks import Chainer).
- Program cost, a fourth time (2026-11-28): under cProfile, the watcher's program made 0.8M
  more calls than the program without it: an `apply` per exported outcome field (1,100), and
  300 explicit `depends_on` edges the SDK resolved one by one although the uids (an input)
  already made every workload a dependency. Each job's outcome is now one `apply`, the
  watcher lists only the anchors, and the job outputs are exported as the plain values they
  are: 0.3M more calls. A first attempt took each job's uids from one `Output.all` of its
  workloads' metadata; that made the SDK lift every label and annotation into an Output of
  its own (`Output.from_input` is deep) and cost more, so each uid keeps its own `apply`.
  A fourth row, the same objects with the components, parents and edges but no trainjobs
  code, shows what the SDK charges for that structure.
- Program cost, a fifth time (2026-11-28): timing the cyclic garbage collector with
  `gc.callbacks` showed it took about a third of every row's CPU (bare program: 0.99 s of
  2.76 s; about 500 young-generation passes and 4 full ones per 100-job preview): the SDK
  allocates many short-lived containers per resource and CPython collects every 700
  allocations. The program now raises that threshold to 50,000 while it runs
  (`tune_collector`); the row "baseline, trainjobs' collector setting" gives the bare
  program the same setting, so the like-for-like cost of trainjobs' structure and work stays
  visible beside the goal's ratio. `gc.freeze()` after the imports and a disabled collector
  were also measured: no better than the threshold, and a frozen collector keeps garbage.
- `trainjobs run` start-up, again (2026-11-28, `perf trace -e execve` of one run, which
  unlike strace does not slow the ranks): the CLI up to the first pod 0.23 s, pods and
  network 0.035 s, then two gaps of about 50 ms after the master's two init containers ended
  (the runtime noticed an exit at its next 50 ms tick) and a cluster waiter that asked
  `get` then `exec` of each worker in turn. Now the loop sleeps on the container processes'
  pidfds and wakes on an exit, the exec waiter probes 16 workers at once as the ssh waiter
  does (exec first; a worker's phase is read only when it does not answer), and a pod
  template's schema answer is kept in the user's cache directory, so a job run again loads
  neither jsonschema nor the schema (about 0.06 s). The image pin check parses its
  `name==version` pins with `packaging.version` alone (`packaging.requirements` cost 0.02 s
  to import; a property test holds it to packaging's answers). Master pod start to "all
  workers ready": 0.22 s -> 0.05 s; command start to the run's start: 0.30 s -> 0.20 s.
- `trainjobs status` and `watch` start-up (2026-11-28, `python -X importtime` and cProfile of
  `status` against the API fake): importing the kubernetes client took nine tenths of the
  command (its package imports every model module, and its kubeconfig loader the client);
  then urllib3, pydantic (through the namespace check) and the job commands' pod template
  machinery. `status`, and `watch` until it has found its job, now read JSON with the
  standard library's HTTP client under the same time and size bounds, from a kubeconfig
  read as the kubernetes client reads it (held to it by a test; exec plugins, auth providers
  and proxies still go through that client); what only a watch needs loads after the job is
  found. CPU time of `status alpha`, bytecode compiled (best of 5, same machine, same
  server): 1.41 s -> 0.22 s; `kubectl get --raw` 0.06 s. What is left before the first
  request is mostly the interpreter, `dataclasses`, `http.client` and PyYAML.
"""


def machine() -> str:
    def version(package: str) -> str:
        try:
            return metadata.version(package)
        except metadata.PackageNotFoundError:
            return "not installed"

    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    try:
        mpi = subprocess.run(
            ["mpiexec", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[0]
    except (OSError, IndexError):
        mpi = "mpiexec not found"
    return (
        f"{os.cpu_count()} cores, {memory:.0f} GiB, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, pulumi {version('pulumi')}, pulumi-kubernetes "
        f"{version('pulumi-kubernetes')}, kubernetes client {version('kubernetes')}, {mpi}, "
        f"{'root' if os.geteuid() == 0 else 'not root'}"
    )


def run(
    benchmark: Benchmark, quick: bool, out: Path, extra: tuple[str, ...] = ()
) -> tuple[float, float]:
    """Wall seconds and peak resident memory (MiB) of the benchmark's process tree."""
    arguments = (*(benchmark.quick if quick else benchmark.full), *extra)
    command = [
        sys.executable,
        str(REPO / "bench" / benchmark.script),
        *arguments,
        "--out",
        str(out),
    ]
    print(f"running {benchmark.name}: {' '.join(command[1:])}", flush=True)
    start = time.perf_counter()
    process = subprocess.Popen(command, cwd=REPO)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{benchmark.name} failed (exit {os.waitstatus_to_exitcode(status)})")
    return seconds, usage.ru_maxrss / 1024  # Linux reports KiB


def demote(markdown: str) -> str:
    """Sections are level 2 here: a benchmark's own level-1 title becomes level 2."""
    return "\n".join(
        "#" + line if line.startswith("# ") else line for line in markdown.splitlines()
    )


def earlier_sections(path: Path) -> dict[str, str]:
    """The sections of an earlier results file, by benchmark name."""
    if not path.is_file():
        return {}
    text = path.read_text(encoding="utf-8").split("\n## Profiling notes", 1)[0]
    parts = re.split(r"\n(?=## )", text)
    return {
        benchmark.name: part.strip()
        for benchmark in BENCHMARKS
        for part in parts
        if part.startswith(benchmark.title)
    }


def goals(sections: dict[str, str]) -> list[str]:
    """A table row per stated goal: each section says its goal in a line that starts with
    ``Goal`` (or holds ``goal:``), with the figure and whether it was met."""
    rows = []
    for name, section in sections.items():
        for line in section.splitlines():
            text = line.strip().replace("**", "")
            if text.startswith("Goal") or "goal:" in text:
                rows.append(f"| {name} | {text.replace('|', '/')} |")
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument(
        "--no-container",
        action="store_true",
        help="local-run overhead: measure the process runtime alone",
    )
    parser.add_argument(
        "--only", nargs="+", choices=[b.name for b in BENCHMARKS], metavar="NAME", default=[]
    )
    args = parser.parse_args(argv)
    chosen = [b for b in BENCHMARKS if not args.only or b.name in args.only]
    kept = earlier_sections(args.out) if args.only else {}
    earlier = args.out.read_text(encoding="utf-8") if kept else ""
    written = re.search(r"on (\d{4}-\d\d-\d\d \d\d:\d\d) UTC", earlier)
    sections: dict[str, str] = {}
    costs = []
    with tempfile.TemporaryDirectory() as tmp:
        for index, benchmark in enumerate(chosen):
            out = Path(tmp) / f"{index}.md"
            extra = (
                ("--no-container",)
                if args.no_container and benchmark.script == ("local_overhead.py")
                else ()
            )
            seconds, peak = run(benchmark, args.quick, out, extra)
            sections[benchmark.name] = demote(out.read_text(encoding="utf-8")).strip()
            costs.append(f"| {benchmark.name} | {seconds:.0f} s | {peak:.0f} MiB |")
    ordered = {
        b.name: sections.get(b.name) or kept[b.name]
        for b in BENCHMARKS
        if b.name in sections or b.name in kept
    }
    command = (
        "make bench"
        if not (args.only or args.quick or args.no_container)
        else (
            "`.venv/bin/python bench/run_all.py"
            + (" --quick" if args.quick else "")
            + (" --no-container" if args.no_container else "")
            + (" --only " + " ".join(f"'{name}'" for name in args.only) if args.only else "")
            + "`"
        )
    )
    header = [
        "# trainjobs benchmarks",
        "",
        f"Written by {command if command != 'make bench' else '`make bench`'} "
        f"({'quick smoke run' if args.quick else 'full trials'}) on "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC. Machine: {machine()}; 1-minute load "
        f"average at the end {os.getloadavg()[0]:.1f}.",
        "",
        "Every figure is measured against a baseline measured in the same run of its "
        "benchmark. Medians with min-max; no figure is copied from elsewhere.",
    ]
    if args.only:
        header += [
            "",
            f"This run measured {', '.join(args.only)}; every other section is kept from the "
            f"earlier file (written {written.group(1) if written else 'before'} UTC; a section "
            "that names its own date was measured then).",
        ]
    header += [
        "",
        "| benchmark (this run) | wall time | peak memory (process tree) |",
        "| --- | ---: | ---: |",
        *costs,
        "",
        "Goals, as each section states them:",
        "",
        "| benchmark | goal and result |",
        "| --- | --- |",
        *goals(ordered),
        "",
    ]
    text = "\n".join(header) + "\n" + "\n\n".join(ordered.values()) + "\n\n" + PROFILING_NOTES
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
