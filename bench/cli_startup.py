"""Benchmark: how soon `trainjobs status` and `trainjobs watch` reach the API server, against
`kubectl get --raw`, all against the same local server in the same run.

The server is the API fake (`tests/kubefake.py`, real HTTP on 127.0.0.1) holding one
ChainerJob, ``alpha``, deployed as the Pulumi program deploys it (its anchor, its Jobs,
its workers) and already succeeded. A kubeconfig written here points every command at it.
Each trial runs, one after another and each to its end:

- ``kubectl get --raw /apis/batch/v1/namespaces/default/jobs`` (the Debian package's
  ``/usr/bin/kubectl``, or ``--kubectl``);
- ``trainjobs status alpha``;
- ``trainjobs watch alpha`` (the job has ended: the watch reads it, finds it done, and exits).

For each, the time from starting the process to the server receiving its first request
(the server records when each request arrives), and to the process's exit. Medians with
min-max; the ratios are medians over kubectl's. Not a test: numbers depend on the machine.

    .venv/bin/python bench/cli_startup.py [--trials 25] --out FILE
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
TRAINJOBS = Path(sys.executable).parent / "trainjobs"
GOAL_RATIO = 3.0
"""`status` and `watch` reach their first request within this many times kubectl's time."""
JOB = "alpha"
RAW_PATH = "/apis/batch/v1/namespaces/default/jobs"


class _TimedRequests(list[Any]):
    """The fake's request log, each request's arrival time kept beside it."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.lock = threading.Lock()

    def append(self, request: Any) -> None:
        with self.lock:
            self.arrivals.append(time.perf_counter())
            super().append(request)


@dataclass(frozen=True)
class Sample:
    first_request: float
    total: float
    requests: int


def measure(command: list[str], env: dict[str, str], log: _TimedRequests) -> Sample:
    with log.lock:
        seen = len(log.arrivals)
    started = time.perf_counter()
    done = subprocess.run(command, env=env, cwd=REPO, capture_output=True, text=True, check=False)
    total = time.perf_counter() - started
    with log.lock:
        arrivals = log.arrivals[seen:]
    if not arrivals:
        raise SystemExit(f"{command[0]} sent no request: {done.stdout}{done.stderr}")
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}: {done.stderr}")
    return Sample(arrivals[0] - started, total, len(arrivals))


def ended_job(kube: Any, scratch: Path) -> None:
    """``alpha``, deployed by the program's steps, then run and succeeded."""
    sys.path.insert(0, str(REPO))
    from tests.cluster.test_training_jobs import chainermn, deployed

    deployed(kube, scratch / "project", chainermn(JOB))
    kube.patch_object("jobs", f"{JOB}-master", "default", {"spec": {"suspend": False}})
    kube.complete_job(f"{JOB}-master")


def kubectl_version(kubectl: str) -> str:
    done = subprocess.run(
        [kubectl, "version", "--client"], capture_output=True, text=True, check=False
    )
    return done.stdout.splitlines()[0] if done.stdout else "unknown"


def median(values: list[float]) -> float:
    return statistics.median(values)


def cell(values: list[float]) -> str:
    return f"{median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def render(results: dict[str, list[Sample]], trials: int, kubectl: str, first_path: str) -> str:
    base_first = median([s.first_request for s in results["kubectl"]])
    base_total = median([s.total for s in results["kubectl"]])
    lines = [
        "# CLI start-up: `trainjobs status` and `watch` against `kubectl get --raw`",
        "",
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC by `bench/cli_startup.py`: {trials} "
        f"trials, the commands interleaved, against the API fake on 127.0.0.1 (one succeeded "
        f"ChainerJob); {kubectl_version(kubectl)} (`{kubectl}`); 1-minute load average at "
        f"the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores.",
        "",
        "| command | to its first request (median, min-max) | ratio | to its exit | ratio "
        "| requests |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    ratios = {}
    for name, samples in results.items():
        first = [s.first_request for s in samples]
        total = [s.total for s in samples]
        ratios[name] = median(first) / base_first
        lines.append(
            f"| {name} | {cell(first)} | {ratios[name]:.1f}x | {cell(total)} | "
            f"{median(total) / base_total:.1f}x | {samples[0].requests} |"
        )
    met = all(ratios[name] <= GOAL_RATIO for name in ratios if name != "kubectl")
    status_ratio, watch_ratio = ratios["trainjobs status alpha"], ratios["trainjobs watch alpha"]
    lines += [
        "",
        f"Goal: `status` and `watch` reach their first API request within {GOAL_RATIO:g}x "
        f"`kubectl get --raw`: status {status_ratio:.1f}x, watch {watch_ratio:.1f}x: "
        f"{'met' if met else 'NOT met'}.",
        "",
        f"kubectl's first request was `GET {first_path}`. `status` reads JSON without the "
        "kubernetes client (its package imports every model module); `watch` finds the job "
        "the same way and loads the kubernetes client after its first requests, for the "
        "watch itself, which is why its exit is further behind kubectl's than its first request.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--kubectl", default="/usr/bin/kubectl")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(REPO))
    from tests.kubefake import FakeKube

    commands = {
        "kubectl": [args.kubectl, "get", "--raw", RAW_PATH],
        "trainjobs status alpha": [str(TRAINJOBS), "status", JOB],
        "trainjobs watch alpha": [str(TRAINJOBS), "watch", JOB, "--timeout", "60s"],
    }
    results: dict[str, list[Sample]] = {name: [] for name in commands}
    with tempfile.TemporaryDirectory() as scratch, FakeKube() as kube:
        ended_job(kube, Path(scratch))
        config = kube.write_kubeconfig(Path(scratch) / "kubeconfig")
        env = {**os.environ, "KUBECONFIG": str(config), "HOME": scratch}
        log = _TimedRequests()
        kube.requests = log
        for trial in range(args.trials):
            for name, command in commands.items():
                results[name].append(measure(command, env, log))
            print(
                f"trial {trial + 1}: "
                + ", ".join(f"{n} {r[-1].first_request:.3f}s" for n, r in results.items()),
                flush=True,
            )
        first_path = kube.requests[0].path
    args.out.write_text(render(results, args.trials, args.kubectl, first_path), encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
