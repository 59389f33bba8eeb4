"""`trainjobs watch`: see a training job through from the command line."""

from __future__ import annotations

import argparse
import json
import sys

from components.cluster.client import load_api_client
from components.cluster.scaling import WorkerRef
from components.cluster.supervisor import run_watch
from components.cluster.watch import JobWatchTimeout
from components.core.durations import parse_duration
from components.core.errors import UserError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `trainjobs watch` to the command line."""
    parser = subparsers.add_parser(
        "watch",
        help="wait for a training Job to finish, then scale its workers to 0",
        description=(
            "Watch a master Job until it completes, fails or is deleted, scale the given "
            "workers to 0, and explain a failure (exit codes, the last log lines). With "
            "--selector, a failure of any job/ worker also ends the job (and stops the "
            "master). Exits 0 when the job succeeded, 1 when it failed, was deleted or is "
            "still running at the timeout. Credentials are found as kubectl finds them."
        ),
    )
    parser.add_argument("name", metavar="NAME", help="the master Job (`kubectl get job NAME`)")
    parser.add_argument("-n", "--namespace", default="default", metavar="NS")
    parser.add_argument(
        "--timeout",
        default="24h",
        help="stop watching after this long (24h, 90m, 30s or seconds); the job keeps running",
    )
    parser.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="KIND/NAME",
        help="a workload to scale to 0 when the job ends: statefulset/NAME or job/NAME "
        "(repeatable)",
    )
    parser.add_argument(
        "--selector",
        metavar="LABELS",
        help="labels of the master Job and its job/ workers, e.g. "
        "training.kubeflow.org/job-name=JOB: they are watched together, and a failed "
        "job/ worker fails the whole job at once (Kubeflow semantics)",
    )
    parser.add_argument("--kubeconfig", metavar="FILE", help="instead of $KUBECONFIG")
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    parser.set_defaults(handler=watch_command)


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def watch_command(args: argparse.Namespace) -> int:
    """`trainjobs watch`: 0 if the job succeeded and its workers stopped, else 1."""
    timeout = parse_duration(
        args.timeout, key="--timeout", fix=f"trainjobs watch {args.name} --timeout 24h"
    )
    workers = [WorkerRef.parse(text) for text in args.worker]
    if args.selector is not None and not args.selector.strip():
        raise UserError("--selector: expected labels such as training.kubeflow.org/job-name=JOB")
    selector = args.selector.strip() if args.selector else None
    job_workers = [str(w) for w in workers if w.kind == "Job"]
    if job_workers and selector is None:
        _stderr(
            f"note: without --selector, a failure of {', '.join(job_workers)} is only seen "
            f"when {args.name} ends; add e.g. --selector training.kubeflow.org/job-name=JOB"
        )
    api = load_api_client(args.kubeconfig, args.context)
    resume = (
        f"run `trainjobs watch {args.name} --namespace {args.namespace}` again to keep watching"
    )
    try:
        outcome = run_watch(
            api,
            args.namespace,
            args.name,
            workers,
            selector=selector,
            timeout_seconds=timeout,
            report=_stderr,
            resume_hint=resume,
        )
    except JobWatchTimeout as timed_out:
        if args.json:
            print(json.dumps(timed_out.to_json(), indent=2))
        else:
            print(f"error: {timed_out}", file=sys.stderr)
        return 1
    finally:
        api.close()
    ok = outcome.succeeded and outcome.workers_scaled_down
    if args.json:
        print(json.dumps(outcome.to_json(), indent=2))
    elif ok:
        print(outcome.describe())
    else:
        print(f"error: {outcome.describe()}", file=sys.stderr)
    return 0 if ok else 1
