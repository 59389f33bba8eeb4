"""Graph cost: rendering 1, 10, 100 and 1000 ChainerJobs with `trainjobs render`'s code path.

For each size N, the measured path is what `trainjobs render` does per job: validate the spec
(`registry.parse`), build the graph, write one YAML file per object. The baseline, in the
same run, writes the same manifests (prepared beforehand) as YAML files: the serialization
and I/O any renderer pays, so the ratio is what validation and graph building add.

Usage: ``.venv/bin/python bench/graph_cost.py [--repeats 5] [--out FILE]`` (Markdown).
"""

from __future__ import annotations

import argparse
import copy
import statistics
import tempfile
import time
from pathlib import Path

import yaml

from trainjobs.core.manifests import prepare_output_dir, write_manifests
from trainjobs.kinds.registry import parse_job

REPO = Path(__file__).resolve().parent.parent
SIZES = (1, 10, 100, 1000)


def job_documents(count: int) -> list[dict]:
    template = yaml.safe_load((REPO / "jobs" / "chainermn-mnist.yaml").read_text())
    documents = []
    for index in range(count):
        document = copy.deepcopy(template)
        document["metadata"]["name"] = f"job-{index:04d}"
        documents.append(document)
    return documents


def render_all(documents: list[dict], out: Path) -> None:
    for document in documents:
        job = parse_job(document, "bench.yaml")
        job_dir = out / job.name
        prepare_output_dir(job_dir)
        write_manifests(job.graph.manifests(), job_dir)


def write_only(manifests: list[list[dict]], out: Path) -> None:
    for index, objects in enumerate(manifests):
        job_dir = out / f"job-{index:04d}"
        prepare_output_dir(job_dir)
        write_manifests(objects, job_dir)


# Files go to memory (tmpfs) where available: disk writeback would swamp the CPU work compared.
SCRATCH = "/dev/shm" if Path("/dev/shm").is_dir() else None


def timed(action) -> tuple[float, float]:
    """(wall seconds, CPU seconds of this process): CPU time does not count other load."""
    start, cpu = time.perf_counter(), time.process_time()
    action()
    return time.perf_counter() - start, time.process_time() - cpu


def measure(repeats: int) -> list[dict[str, float]]:
    """Sizes are interleaved within every repeat (and render with baseline), so a change in
    the machine's speed during the run hits every size alike instead of bending the curve."""
    inputs = {}
    for size in SIZES:
        documents = job_documents(size)
        inputs[size] = (
            documents,
            [parse_job(d, "bench").graph.manifests() for d in documents],
        )
    rendered: dict[int, list[tuple[float, float]]] = {size: [] for size in SIZES}
    baseline: dict[int, list[float]] = {size: [] for size in SIZES}
    for _ in range(repeats):
        for size, (documents, manifests) in inputs.items():
            with tempfile.TemporaryDirectory(dir=SCRATCH) as out:
                rendered[size].append(timed(lambda o=out, d=documents: render_all(d, Path(o))))
            with tempfile.TemporaryDirectory(dir=SCRATCH) as out:
                wall, _ = timed(lambda o=out, m=manifests: write_only(m, Path(o)))
                baseline[size].append(wall)
    rows = []
    for size in SIZES:
        walls = [wall for wall, _ in rendered[size]]
        rows.append(
            {
                "size": size,
                "render": statistics.median(walls),
                "render_min": min(walls),
                "render_max": max(walls),
                "render_cpu": statistics.median(cpu for _, cpu in rendered[size]),
                "baseline": statistics.median(baseline[size]),
            }
        )
    return rows


def render_markdown(rows: list[dict[str, float]], repeats: int) -> str:
    lines = [
        "## Graph cost: `trainjobs render` of N ChainerJobs",
        "",
        f"Median of {repeats} repeats, sizes interleaved; the baseline writes the same "
        "manifests as YAML without validating or building them. Files are written to tmpfs.",
        "",
        "| jobs | render (median) | min-max | per job | CPU per job | baseline (write only) "
        "| ratio |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in rows:
        lines.append(
            f"| {row['size']} | {row['render'] * 1000:.1f} ms | "
            f"{row['render_min'] * 1000:.1f}-{row['render_max'] * 1000:.1f} ms | "
            f"{row['render'] / row['size'] * 1000:.2f} ms | "
            f"{row['render_cpu'] / row['size'] * 1000:.2f} ms | {row['baseline'] * 1000:.1f} ms | "
            f"{row['render'] / row['baseline']:.2f}x |"
        )
    cpu_per_job = {row["size"]: row["render_cpu"] / row["size"] for row in rows}
    drift = cpu_per_job[1000] / cpu_per_job[100]
    lines += [
        "",
        f"Scaling: the CPU time per job at 1000 jobs is {drift:.2f}x that at 100 "
        f"({'linear' if 0.8 <= drift <= 1.25 else 'NOT linear'}: within 0.8-1.25x counts as "
        "linear). CPU time is the process's own, so it is not skewed by other load on a "
        "shared machine the way wall time can be. The single-job figure carries fixed costs.",
    ]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    args.out.write_text(render_markdown(measure(args.repeats), args.repeats), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
