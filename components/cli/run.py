"""The `trainjobs run` subcommand: a job on this machine, with the same graph as a cluster."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from trainjobs.cli.arguments import namespace_argument
from trainjobs.cli.jobs import add_mpi_transport, add_trainer_options
from trainjobs.core.errors import UserError
from trainjobs.core.graph import DEFAULT_WAIT_TIMEOUT_SECONDS
from trainjobs.engines import ENGINES

NETWORK_CHOICES = ("auto", "netns", "loopback")
RUNTIME_CHOICES = ("process", "container")


def register(subparsers: argparse._SubParsersAction) -> None:
    run = subparsers.add_parser(
        "run",
        help="run a job on this machine: one local pod per replica, real Open MPI",
        description="Run a job's resource graph on this machine (the one `render` writes and "
        "Pulumi deploys), one local pod per replica, stream the pods' output with a [pod] "
        "prefix, and exit with the job's outcome. Every run leaves its pods' logs and "
        "summary.json in its run directory: see `trainjobs runs` and `trainjobs logs`.",
        epilog="exit codes: 0 Succeeded, 1 Failed (or the machine refused), 2 invalid input, "
        "128+N stopped by signal N (130 SIGINT, 143 SIGTERM, 129 SIGHUP)",
    )
    run.add_argument("file", metavar="FILE", help="job spec (YAML)")
    run.add_argument(
        "--run-dir",
        type=Path,
        metavar="DIR",
        help="new or empty directory for pod files, logs/ and summary.json; one that holds "
        "a previous run is refused, as docker refuses a container name in use "
        "(default: out/runs/<job>-<timestamp>)",
    )
    run.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        dest="overrides",
        help="change the spec before it is validated: replicas.TYPE=N (e.g. replicas.Worker=4), "
        "image=REF (every replica type's containers; a TrainJob's trainer image), "
        "image.TYPE=REF (repeatable; default: none); a key the job has no field for is refused",
    )
    run.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="show only trainjobs' own lines, not the pods' output (the log files keep it)",
    )
    run.add_argument(
        "--all-output",
        action="store_true",
        help="also show the pods' lines known to be noise (hidden by default: "
        "TensorFlow's C++ logging, PyTorch's c10d hostname warning, Open MPI's setpgid "
        "warning; the log files keep them)",
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
        help="run image REF as the declared image DECLARED (see components/images/catalogue.py;"
        " repeatable; default: none)",
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
        "--namespace",
        default="default",
        type=namespace_argument,
        help="if the spec names none (default: default)",
    )
    run.add_argument(
        "--image-pins",
        type=Path,
        metavar="FILE",
        help="run the images this JSON file pins (reference -> repo@sha256:..., as `trainjobs "
        "images build --push` records in out/engine/image-pins.json; default: none)",
    )
    run.add_argument(
        "--require-digests",
        action="store_true",
        help="refuse any image left unpinned by digest (as trainjobs:requireDigests)",
    )
    add_mpi_transport(run)
    add_trainer_options(run)
    run.set_defaults(handler=_run)
    clean = subparsers.add_parser(
        "clean",
        help="remove what killed local runs left (processes, namespaces, links, files, "
        "container pods and networks)",
        description="Remove every process, network namespace, link, /etc/netns entry, "
        "temporary file, and container runs' pods and networks, that a `trainjobs run` left "
        "when it was killed, say what, and write its summary.json. Runs still going are left "
        "alone. Every `trainjobs run` does this first.",
        epilog="exit codes: 0 nothing is left, 1 something could not be removed, 2 an invalid "
        "option",
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
    from trainjobs.cli.jobs import report_warnings, trainer_options
    from trainjobs.cli.overrides import apply_overrides
    from trainjobs.core.documents import load_file
    from trainjobs.images.registry_auth import pull_secrets
    from trainjobs.kinds.registry import parse_job

    aliases = {}
    for item in args.map_image:
        reference, separator, declared = item.partition("=")
        if not separator or not reference or not declared:
            raise UserError(f"--map-image {item!r}: expected REF=DECLARED")
        aliases[reference] = declared
    options = replace(trainer_options(args), mpi_transport=args.mpi_transport)
    if args.wait_timeout is not None:
        if args.wait_timeout <= 0:
            raise UserError("--wait-timeout must be a positive number of seconds")
        options = replace(options, wait_timeout_seconds=args.wait_timeout)
    document = apply_overrides(load_file(args.file), args.overrides)
    job = parse_job(document, str(args.file), args.namespace, options)
    report_warnings(args.file, job)
    if args.image_pins is not None or args.require_digests:
        # Imported here: the pins' checks load the scheduling rules (0.7 s), which runs without
        # pins never need.
        from trainjobs.images.pinning import pin_images, pins_from_file

        pins = pins_from_file(args.image_pins) if args.image_pins is not None else {}
        graph = pin_images(
            job.graph,
            pins,
            require_digests=args.require_digests,
            pins_from="the --image-pins file (trainjobs images build --push REGISTRY records one)",
        )
        job = replace(job, graph=graph)
    if args.engine and args.runtime != "container":
        raise UserError("--engine: only with --runtime container")
    if args.runtime == "process":
        # Before the runtime is loaded (a second of imports): a command naming what a process
        # run cannot provide is refused at once.
        from trainjobs.images.user_images import declare_user_images
        from trainjobs.local.cluster import plan_cluster
        from trainjobs.local.image_packages import check_images

        declare_user_images(Path(args.file))
        check_images(
            plan_cluster(job.graph, job.success_jobs, job.success_any, job.companions), aliases
        )
    from trainjobs.local.output import TerminalFilter
    from trainjobs.local.runtime import RunOptions
    from trainjobs.local.start import run_job

    result = run_job(
        job,
        RunOptions(
            run_dir=args.run_dir,
            network=args.network,
            image_aliases=aliases,
            runtime=args.runtime,
            engine=args.engine,
            stream=TerminalFilter(sys.stdout, quiet=args.quiet, noise=not args.all_output),
            command=("trainjobs", *args.argv),
            pull_secrets=pull_secrets(args.file) if args.runtime == "container" else {},
        ),
    )
    return result.exit_code
