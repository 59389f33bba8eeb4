"""`trainjobs watch` and `trainjobs status`: see training jobs through from the command line."""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from trainjobs.cli.arguments import namespace_argument
from trainjobs.cluster.errors import DEFAULT_RETRY, RetryPolicy
from trainjobs.core.durations import parse_duration
from trainjobs.core.errors import UserError
from trainjobs.core.phases import JobPhase
from trainjobs.core.terminal import escape

# What only watching uses (the watch loop, scaling, outcomes) loads once the job is found:
# `status`, and `watch` up to its first request, run without it.
if TYPE_CHECKING:
    from trainjobs.cluster.discovery import JobState
    from trainjobs.cluster.logs import LogFollower
    from trainjobs.cluster.outcome import Outcome
    from trainjobs.cluster.scaling import WorkerRef
    from trainjobs.cluster.target import WatchTarget


def _cluster_arguments(parser: argparse.ArgumentParser) -> None:
    # Checked as the API server checks it: it is a segment of every request's path.
    parser.add_argument(
        "-n",
        "--namespace",
        default="default",
        metavar="NS",
        type=namespace_argument,
        help="the namespace of the jobs (default: default)",
    )
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="the kubeconfig (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)",
    )
    parser.add_argument("--context", help="kubeconfig context (default: the current one)")
    parser.add_argument(
        "--connect-timeout",
        default="30s",
        metavar="DURATION",
        help="how long to keep trying an API server that does not answer before reporting "
        "it unreachable, and the most one request may take (default 30s)",
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add `trainjobs watch` and `trainjobs status` to the command line."""
    parser = subparsers.add_parser(
        "watch",
        help="see a training job through: start its run, wait for its end, stop its workers",
        description=(
            "Watch a training job by its name (metadata.name of its spec), as the Pulumi "
            "program's completion watcher does: its workloads are found by their "
            "training.kubeflow.org/job-name label. The job's run starts if it has not "
            "(a Job created suspended), and when it ends what is left running stops per its "
            "cleanPodPolicy and a failure is explained (exit codes, the last log lines). "
            "With --worker or --selector, NAME is a master Job instead and the given "
            "workloads are stopped when it ends. Progress goes to stderr. Exits 0 when the "
            "job succeeded, 1 when it failed, was deleted, is suspended, is still running at "
            "the timeout or the cluster cannot be reached, 2 for a mistake in the command. "
            "Credentials are found as kubectl finds them."
        ),
    )
    parser.add_argument("name", metavar="NAME", help="the training job (or, with --worker, a Job)")
    parser.add_argument(
        "--timeout",
        default="24h",
        metavar="DURATION",
        help="stop watching after this long (24h, 90m, 30s or seconds); the job keeps "
        "running (default 24h)",
    )
    parser.add_argument(
        "--worker",
        action="append",
        default=[],
        metavar="KIND/NAME",
        help="explicit form: a workload to stop when the Job NAME ends, statefulset/NAME or "
        "job/NAME (repeatable; default: none)",
    )
    parser.add_argument(
        "--selector",
        metavar="LABELS",
        help="explicit form: labels of the Job NAME and its job/ workers, e.g. "
        "training.kubeflow.org/job-name=JOB: they are watched together, and a failed "
        "job/ worker fails the whole job at once (Kubeflow semantics; default: none)",
    )
    parser.add_argument(
        "--logs",
        action="store_true",
        help="stream the log of the pod that decides the job (its chief or master) "
        "as it runs, as kubectl logs -f, each line as [POD] LINE, following a restarted or "
        "replaced pod; on stdout, or stderr with --json (default: off)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the outcome as JSON (default: text)"
    )
    _cluster_arguments(parser)
    parser.set_defaults(handler=watch_command)

    status = subparsers.add_parser(
        "status",
        help="list the training jobs of a namespace with their phase, duration and age",
        description=(
            "One line per training job trainjobs deployed in the namespace (or only JOB): "
            "its kind, its phase (Pending, Running, Suspended, Succeeded, Failed, Missing) "
            "by the same rules the watcher applies, its DURATION (the run's start to its "
            "end, or to now while it runs) and AGE (since its master Job's creation), as "
            "kubectl shows them, and a detail. With --watch, the rows that change are "
            "printed again until Ctrl-C or --timeout. Exits 0, 1 when the cluster cannot be "
            "reached, 2 for a name that matches no job."
        ),
    )
    status.add_argument(
        "name", nargs="?", metavar="JOB", help="only this training job (default: every one)"
    )
    status.add_argument(
        "-w",
        "--watch",
        action="store_true",
        help="after the table, read the jobs again every 2s and print the rows whose phase "
        "or detail changed, until Ctrl-C or --timeout (as kubectl get -w)",
    )
    status.add_argument(
        "--timeout",
        metavar="DURATION",
        help="with --watch: stop after this long (24h, 90m, 30s or seconds; default: until Ctrl-C)",
    )
    status.add_argument(
        "--json",
        action="store_true",
        help="print the jobs as JSON (with --watch: one object a line)",
    )
    _cluster_arguments(status)
    status.set_defaults(handler=status_command)


def _stderr(message: str) -> None:
    """A progress line: it carries names and messages the cluster supplied."""
    print(escape(message), file=sys.stderr, flush=True)


def _report(text: str, *, error: bool) -> None:
    """The final report: several lines, each built here around cluster-supplied text."""
    shown = escape(text, keep_newlines=True)
    print(f"error: {shown}" if error else shown, file=sys.stderr if error else sys.stdout)


def _retry(args: argparse.Namespace, command: str) -> RetryPolicy:
    seconds = parse_duration(
        args.connect_timeout,
        key="--connect-timeout",
        fix=f"trainjobs {command} ... --connect-timeout 30s",
    )
    return dataclasses.replace(
        DEFAULT_RETRY,
        first_contact_seconds=seconds,
        connect_timeout=min(DEFAULT_RETRY.connect_timeout, seconds),
        # A whole request gets no longer than the command waits for a first answer.
        request_timeout=min(DEFAULT_RETRY.request_timeout, seconds),
    )


def watch_command(args: argparse.Namespace) -> int:
    """`trainjobs watch`: 0 if the job succeeded and its workers stopped, else 1."""
    from trainjobs.cluster.client import load_api_client

    timeout = parse_duration(
        args.timeout, key="--timeout", fix=f"trainjobs watch {args.name} --timeout 24h"
    )
    retry = _retry(args, "watch")
    workers: list[WorkerRef] = []
    if args.worker:  # the explicit form: the watch machinery is needed from the start
        from trainjobs.cluster.scaling import WorkerRef

        workers = [WorkerRef.parse(text) for text in args.worker]
    if args.selector is not None and not args.selector.strip():
        raise UserError("--selector: expected labels such as training.kubeflow.org/job-name=JOB")
    selector = args.selector.strip() if args.selector else None
    explicit = bool(workers) or selector is not None
    if explicit:
        target, api = None, load_api_client(args.kubeconfig, args.context)
    else:
        target, api = _find(args, retry)
    from trainjobs.cluster.watch import JobWatchTimeout  # the watch loop: loaded by now

    resume = (
        f"run `trainjobs watch {args.name} --namespace {args.namespace}` again to keep watching"
    )
    logs = _Logs(args, api, timeout, retry)
    try:
        if explicit:
            logs.follow(args.name)
            outcome = _watch_explicit(args, api, workers, selector, timeout, retry, resume)
        else:
            outcome = _watch_by_name(args, api, target, timeout, retry, resume, logs)
    except JobWatchTimeout as timed_out:
        if args.json:
            print(json.dumps(timed_out.to_json(), indent=2))
        else:
            _report(str(timed_out), error=True)
        return 1
    finally:
        logs.finish()
        api.close()
    ok = outcome.succeeded and outcome.workers_scaled_down
    if args.json:
        print(json.dumps(outcome.to_json(), indent=2))
    else:
        _report(outcome.describe(), error=not ok)
    return 0 if ok else 1


def _find(args: argparse.Namespace, retry: RetryPolicy) -> tuple[WatchTarget | None, Any]:
    """The training job called NAME; else None when a Job called NAME exists (the explicit
    form without workers, as `trainjobs watch MASTER` always worked); else an error naming
    the jobs. With the kubernetes client to watch it with: finding the job needed none, so
    it loads now, after the first requests have gone out (a JSON client that sends through
    one, for an exec plugin's credentials..., hands it over)."""
    from trainjobs.cluster.client import connect, load_api_client
    from trainjobs.cluster.discovery import find_target, job_exists, list_targets, unknown_job

    client = connect(args.kubeconfig, args.context)
    try:
        target = find_target(client, args.namespace, args.name, retry=retry)
        if target is None and not job_exists(client, args.namespace, args.name, retry=retry):
            targets = list_targets(client, args.namespace, retry=retry)
            raise unknown_job(args.name, args.namespace, targets)
    finally:
        if client.wrapped is None:
            client.close()
    return target, client.wrapped or load_api_client(args.kubeconfig, args.context)


class _Logs:
    """`watch --logs`: the deciding pod's log, followed while the job is watched."""

    def __init__(
        self, args: argparse.Namespace, api: Any, timeout: float, retry: RetryPolicy
    ) -> None:
        self.args, self.api, self.timeout, self.retry = args, api, timeout, retry
        self.follower: LogFollower | None = None

    def follow(self, job_name: str) -> None:
        """Follow the log of Job ``job_name``'s pods, when --logs asks for it."""
        from trainjobs.cluster.logs import LogFollower

        if not self.args.logs:
            return
        # With --json, stdout carries the outcome alone.
        stream = sys.stderr if self.args.json else sys.stdout
        self.follower = LogFollower(
            self.api,
            self.args.namespace,
            job_name,
            lambda line: print(line, file=stream, flush=True),
            timeout_seconds=self.timeout,
            retry=self.retry,
        ).start()

    def finish(self) -> None:
        if self.follower is not None:
            self.follower.finish()


def _watch_explicit(
    args: argparse.Namespace,
    api: Any,
    workers: list[WorkerRef],
    selector: str | None,
    timeout: float,
    retry: RetryPolicy,
    resume: str,
) -> Outcome:
    from trainjobs.cluster.supervisor import run_watch

    job_workers = [str(w) for w in workers if w.kind == "Job"]
    if job_workers and selector is None:
        _stderr(
            f"note: without --selector, a failure of {', '.join(job_workers)} is only seen "
            f"when {args.name} ends; add e.g. --selector training.kubeflow.org/job-name=JOB"
        )
    return run_watch(
        api,
        args.namespace,
        args.name,
        workers,
        selector=selector,
        timeout_seconds=timeout,
        report=_stderr,
        resume_hint=resume,
        retry=retry,
    )


def _watch_by_name(
    args: argparse.Namespace,
    api: Any,
    target: WatchTarget | None,
    timeout: float,
    retry: RetryPolicy,
    resume: str,
    logs: _Logs,
) -> Outcome:
    """The training job ``target``, or with none the Job called NAME."""
    from trainjobs.cluster.supervisor import WatchOptions, run_watch, see_through

    if target is not None:
        _stderr(
            f"watching {target.kind} {target.key}: "
            f"{len(target.jobs)} Job(s), {len(target.workers)} worker workload(s), "
            f"cleanPodPolicy {target.clean_pod_policy}"
        )
        logs.follow(target.rules.master)
        options = WatchOptions(
            timeout_seconds=timeout, report=_stderr, resume_hint=resume, retry=retry
        )
        return see_through(api, target, options=options)
    logs.follow(args.name)
    return run_watch(
        api,
        args.namespace,
        args.name,
        timeout_seconds=timeout,
        report=_stderr,
        resume_hint=resume,
        retry=retry,
    )


STATUS_POLL_SECONDS = 2.0
"""How often `status --watch` reads the jobs again."""


def _now() -> datetime:
    """The clock `status` measures AGE and DURATION with (tests set their own)."""
    return datetime.now(UTC)


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def status_command(args: argparse.Namespace) -> int:
    """`trainjobs status [JOB] [--watch]`: one line per training job with its phase."""
    from trainjobs.cluster.client import connect

    retry = _retry(args, "status")
    limit = None
    if args.timeout is not None and not args.watch:
        raise UserError(
            f"--timeout {args.timeout}: only a watch has a timeout; add --watch, e.g. "
            "`trainjobs status --watch --timeout 1h`"
        )
    if args.timeout is not None:
        limit = parse_duration(
            args.timeout, key="--timeout", fix="trainjobs status --watch --timeout 1h"
        )
    api = connect(args.kubeconfig, args.context)
    try:
        states = _job_states(api, args, retry)
        now = _now()
        widths = _print_states(states, args, now, None)
        if not args.watch:
            return 0
        end = None if limit is None else now + timedelta(seconds=limit)
        try:
            _watch_states(api, args, retry, states, widths, end)
        except KeyboardInterrupt:  # Ctrl-C is how a watch ends, as with kubectl get -w
            return 0
    finally:
        api.close()
    return 0


def _job_states(api: Any, args: argparse.Namespace, retry: RetryPolicy) -> list[JobState]:
    from trainjobs.cluster.discovery import job_state, list_targets, unknown_job

    targets = list_targets(api, args.namespace, retry=retry)
    if args.name is not None:
        chosen = [target for target in targets if target.name == args.name]
        if not chosen:
            raise unknown_job(args.name, args.namespace, targets)
        targets = chosen
    return [job_state(api, target, retry=retry) for target in targets]


def _watch_states(
    api: Any,
    args: argparse.Namespace,
    retry: RetryPolicy,
    states: list[JobState],
    widths: list[int],
    end: datetime | None,
) -> None:
    """Read the jobs again every few seconds and print the rows that changed (phase or
    detail; AGE and DURATION alone change every second) until ``end``."""
    shown = {state.name: state for state in states}
    while end is None or _now() < end:
        _sleep(STATUS_POLL_SECONDS)
        try:
            fresh = {state.name: state for state in _job_states(api, args, retry)}
        except UserError:
            fresh = {}  # JOB was removed: reported below as Missing
        changed = [state for name, state in fresh.items() if _changed(shown.get(name), state)]
        for name, old in shown.items():
            if name not in fresh and old.phase != JobPhase.MISSING:
                fresh[name] = dataclasses.replace(
                    old,
                    phase=JobPhase.MISSING,
                    detail="no longer deployed",
                    started=None,
                    ended=None,
                )
                changed.append(fresh[name])
        if changed:
            _print_states(sorted(changed, key=lambda s: s.name), args, _now(), widths)
        shown = {**shown, **fresh}


def _changed(old: JobState | None, new: JobState) -> bool:
    return old is None or (old.phase, old.detail) != (new.phase, new.detail)


def _print_states(
    states: list[JobState], args: argparse.Namespace, now: datetime, widths: list[int] | None
) -> list[int]:
    """The table (``widths`` None: with its header) or, with --json, the jobs as JSON: an
    array, or under --watch one object a line. Returns the columns' widths."""
    if args.json:
        if args.watch:
            for state in states:
                print(json.dumps(state.to_json(now)), flush=True)
        else:
            print(json.dumps([state.to_json(now) for state in states], indent=2))
        return widths or []
    if not states and widths is None:
        print(f"no training jobs in namespace {escape(args.namespace)}", flush=True)
        return [0] * 5
    rows: list[tuple[str, ...]] = []
    for state in states:
        age, duration = state.age_seconds(now), state.duration_seconds(now)
        name, kind, phase = (escape(cell) for cell in (state.name, state.kind, state.phase))
        rows.append((name, kind, phase, _human(duration), _human(age), escape(state.detail)))
    if widths is None:
        rows.insert(0, ("JOB", "KIND", "PHASE", "DURATION", "AGE", "DETAIL"))
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
    for row in rows:
        cells = [cell.ljust(width) for cell, width in zip(row[:5], widths, strict=True)]
        print("  ".join([*cells, row[5]]), flush=True)
    return widths


def _human(seconds: float | None) -> str:
    from trainjobs.cluster.status import human_duration

    return "<none>" if seconds is None else human_duration(seconds)
