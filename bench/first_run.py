"""Benchmark: a fresh clone's `make run`, the README's first command, from nothing to a model.

Clones this repository's committed HEAD into a temporary directory and runs `make run` there
under a clock: the core virtualenv is made and installed (pip's cache and this machine's
package index stay as they are: a warm cache), then the distributed ChainerMN example trains.
Reports the wall time against the goal, the CPU time of the whole process tree, the time of
each `[setup]` step and of the run, and whether the new `.venv` holds any of the packages that
`make run` must not install.

    .venv/bin/python bench/first_run.py --out FILE
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_SECONDS = 150
"""Fresh clone to trained model, with a warm pip cache."""
NOT_IN_CORE = ("torch", "tensorflow", "pulumi_aws", "boto3", "moto", "pytest")
"""Top-level packages of the extras: none may be in the venv `make run` makes."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="trainjobs-first-run-") as scratch:
        clone = Path(scratch) / "trainjobs"
        subprocess.run(["git", "clone", "--quiet", str(REPO), str(clone)], check=True)
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=clone, capture_output=True, text=True
        ).stdout.strip()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        steps: list[tuple[str, float]] = []
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["TRAINJOBS_CACHE_DIR"] = str(Path(scratch) / "answers")  # a newcomer has none
        with subprocess.Popen(
            ["make", "run"], cwd=clone, env=env, stdout=subprocess.PIPE, text=True
        ) as make:
            assert make.stdout is not None
            for line in make.stdout:
                print(line, end="", flush=True)
                if line.startswith("[setup] ") or line.startswith("[trainjobs] running "):
                    # Without the run directory: a path of this machine.
                    text = line.strip().split(", run directory ")[0]
                    steps.append((text, time.perf_counter() - start))
        seconds = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if make.returncode != 0:
            raise SystemExit(f"make run failed (exit {make.returncode})")
        site = next((clone / ".venv" / "lib").glob("python*/site-packages"))
        found = sorted(name for name in NOT_IN_CORE if (site / name).exists())
        size = subprocess.run(
            ["du", "-sm", str(clone / ".venv")], capture_output=True, text=True
        ).stdout.split()[0]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    load = os.getloadavg()[0]
    lines = [
        "# First run: a fresh clone's `make run`",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/first_run.py`: `git clone` "
        f"of commit {head}, then `make run` (core virtualenv, then the ChainerMN example), "
        f"one run. 1-minute load average at the end: {load:.1f} on {os.cpu_count()} cores.",
        "",
        "| | seconds |",
        "| --- | ---: |",
        f"| wall time, clone to trained model | {seconds:.0f} s |",
        f"| CPU time of every process it started | {cpu:.0f} s |",
        "",
        f"Goal: at most {GOAL_SECONDS} s ({seconds / GOAL_SECONDS:.2f}x the goal): "
        f"{'met' if seconds <= GOAL_SECONDS else 'NOT met'}. The new `.venv` is {size} MB and "
        + (
            "holds none of " + ", ".join(f"`{name}`" for name in NOT_IN_CORE) + "."
            if not found
            else "holds " + ", ".join(f"`{name}`" for name in found) + " (it must not)."
        ),
        "",
        "When each step started (seconds since `make run` started):",
        "",
        "| step | started at |",
        "| --- | ---: |",
        *(f"| {text} | {at:.0f} s |" for text, at in steps),
        f"| training done, `make run` exited | {seconds:.0f} s |",
        "",
    ]
    args.out.write_text("\n".join(lines), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
