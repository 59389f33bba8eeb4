"""The `trainjobs run` subcommand: a job on this machine, with the same graph as a cluster."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from trainjobs.cli.jobs import add_mpi_transport, namespace_argument
from trainjobs.core.errors import UserError
from trainjobs.core.graph import DEFAULT_WAIT_TIMEOUT_SECONDS
from trainjobs.engines.engine import ENGINES

NETWORK_CHOICES = ("auto", "netns", "loopback")
RUNTIME_CHOICES = ("process", "container")


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run",
        help="run a job on this machine: one local pod per replica, real Open MPI",
        description="Run a job's resource graph on this machine and exit with its outcome "
        "(0 Succeeded, 1 Failed, 2 invalid input, 128+N stopped by signal N: 130 for SIGINT, "
        "143 for SIGTERM, 129 for SIGHUP).",
    )
    run.add_argument("file", metavar="FILE", help="job spec (YAML)")
    run.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="new directory for pod files, logs/ and summary.json "
        "(default: out/runs/<job>-<timestamp>)",
    )
    run.add_argument(
        "--network",
        choices=NETWORK_CHOICES,
        default="auto",
        help="netns: a network namespace per pod (root); loopback: host processes; "
        "auto (default): netns when possible",
    )
    run.add_argument(
        "--wait-timeout",
        type=int,
        metavar="SECONDS",
        help="how long the master's cluster waiter waits for the workers "
        f"(default: {DEFAULT_WAIT_TIMEOUT_SECONDS})",
    )
    run.add_argument(
        "--map-image",
        action="append",
        default=[],
        metavar="REF=DECLARED",
        help="run image REF as the declared image DECLARED (see components/images/catalogue.py)",
    )
    run.add_argument(
        "--runtime",
        choices=RUNTIME_CHOICES,
        default="process",
        help="process (default): containers as host processes from the declared images' "
        "local environments; container: each pod a real pod of the job's own images on "
        "podman or docker",
    )
    run.add_argument(
        "--engine",
        choices=ENGINES,
        help="with --runtime container: the engine (default: podman, else docker)",
    )
    run.add_argument(
        "--namespace", default="default", type=namespace_argument, help="if the spec names none"
    )
    add_mpi_transport(run)
    run.set_defaults(handler=_run)
    clean = subparsers.add_parser(
        "clean",
        help="remove what killed local runs left (processes, namespaces, links, files, "
        "container pods and networks)",
        description="Remove every process, network namespace, link, /etc/netns entry, "
        "temporary file, and container runs' pods and networks, that a `trainjobs run` left "
        "when it was killed, say what, and write its summary.json. Runs still going are left "
        "alone. (Every `trainjobs run` does this first.) Exit 0 when nothing is left, 1 when "
        "something could not be removed.",
    )
    clean.set_defaults(handler=_clean)


def _clean(args: argparse.Namespace) -> int:
    from trainjobs.engines.registry import available_engines
    from trainjobs.local.container.cleanup import remove_stale
    from trainjobs.local.runtime import clean_up_after_killed_runs

    reported: list[str] = []

    def report(line: str) -> None:
        reported.append(line)
        print(line)

    complete = clean_up_after_killed_runs(report)
    # Container runs' objects that no record lists (a reboot empties the records' tmpfs, not
    # the engine's storage) are found by their owner label.
    for engine in available_engines():
        removed = remove_stale(engine)
        if removed:
            report(f"{engine.name}: removed what killed container runs left: {', '.join(removed)}")
    if not reported:
        print("nothing to clean: no killed run left anything behind")
    return 0 if complete else 1


def _run(args: argparse.Namespace) -> int:
    # Imported here: `trainjobs --help` must not pay for the runtime.
    from trainjobs.cli.jobs import report_warnings
    from trainjobs.core.graph import GraphOptions
    from trainjobs.kinds.registry import load_job
    from trainjobs.local.runtime import RunOptions
    from trainjobs.local.start import run_job

    aliases = {}
    for item in args.map_image:
        reference, separator, declared = item.partition("=")
        if not separator or not reference or not declared:
            raise UserError(f"--map-image {item!r}: expected REF=DECLARED")
        aliases[reference] = declared
    options = GraphOptions(mpi_transport=args.mpi_transport)
    if args.wait_timeout is not None:
        if args.wait_timeout <= 0:
            raise UserError("--wait-timeout must be a positive number of seconds")
        options = replace(options, wait_timeout_seconds=args.wait_timeout)
    job = load_job(args.file, args.namespace, options)
    report_warnings(args.file, job)
    if args.engine and args.runtime != "container":
        raise UserError("--engine: only with --runtime container")
    result = run_job(
        job,
        RunOptions(
            run_dir=args.run_dir,
            network=args.network,
            image_aliases=aliases,
            runtime=args.runtime,
            engine=args.engine,
        ),
    )
    return result.exit_code
