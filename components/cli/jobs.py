"""`trainjobs validate`, `render` and `crds`: job specs in, checks and manifests out."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from trainjobs.cli.arguments import namespace_argument
from trainjobs.core.errors import SpecError
from trainjobs.core.gang import GANG_SCHEDULERS
from trainjobs.core.graph import DEFAULT_KUBECTL_IMAGE, MPI_TRANSPORTS, GraphOptions
from trainjobs.core.terminal import escape

if TYPE_CHECKING:
    from trainjobs.kinds.registry import JobDefinition

# The spec models (pydantic), YAML and the registry are imported by the handlers that use
# them: `trainjobs run --help` and argument errors never load them.


def report_warnings(source: str | Path, job: JobDefinition) -> None:
    """What a valid spec says to no effect, on stderr, one line each; the spec's key names
    (and the file's) with their control characters shown escaped."""
    for warning in job.warnings:
        print(escape(f"warning: {source}: {warning}"), file=sys.stderr)


def trainer_options(args: argparse.Namespace) -> GraphOptions:
    """`--trainer-version` and `--runtimes` as graph options; a warning line for each
    document of a runtime file that is not a runtime."""
    from trainjobs.core.documents import load_runtime_files

    runtimes, warnings = load_runtime_files(args.runtimes)
    for warning in warnings:
        print(escape(f"warning: --runtimes: {warning}"), file=sys.stderr)
    return GraphOptions(trainer_version=args.trainer_version, runtimes=tuple(runtimes))


def add_trainer_options(parser: argparse.ArgumentParser) -> None:
    """`--trainer-version` and `--runtimes`, shared by `validate`, `render` and `run`."""
    parser.add_argument(
        "--trainer-version",
        metavar="TAG",
        help="the Kubeflow Trainer release (v2.0.0 on) whose default runtimes a TrainJob's "
        "runtimeRef finds (default: the latest)",
    )
    parser.add_argument(
        "--runtimes",
        action="append",
        default=[],
        metavar="FILE_OR_DIR",
        help="training runtimes installed apart from the job: a file of them, or a directory "
        "of such files (repeatable); found after those in the job's own file",
    )


def _validate(args: argparse.Namespace) -> int:
    from trainjobs.kinds.registry import load_job

    options = trainer_options(args)
    failures = []
    for path in args.files:
        try:
            job = load_job(path, "default", options)
        except SpecError as error:
            failures.append(str(error))
            continue
        report_warnings(path, job)
        print(escape(f"{path}: valid {job.kind} {job.name!r} ({len(job.graph.nodes)} objects)"))
    if failures:
        print(escape("\n".join(failures), keep_newlines=True), file=sys.stderr)
        return 2
    return 0


def _render(args: argparse.Namespace) -> int:
    from trainjobs.core.manifests import dump_yaml, prepare_output_dir, write_manifests
    from trainjobs.kinds.registry import load_job

    options = replace(
        trainer_options(args),
        kubectl_image=args.kubectl_image,
        gang_scheduler=args.gang_scheduler,
        gang_scheduler_name=args.gang_scheduler_name,
        mpi_transport=args.mpi_transport,
    )
    job = load_job(args.file, args.namespace, options)  # validate before touching --out
    report_warnings(args.file, job)
    if str(args.out) == "-":
        # One YAML stream, as `kubectl apply -f -` reads it.
        print("---\n".join(dump_yaml(manifest) for manifest in job.graph.manifests()), end="")
        return 0
    prepare_output_dir(args.out)
    for path in write_manifests(job.graph.manifests(), args.out):
        print(path)
    return 0


def _crds(args: argparse.Namespace) -> int:
    from trainjobs.kinds import crds  # the CRDs' models and schema generation: this command only

    for path in crds.write(args.out):
        print(path)
    return 0


def _directory(value: str) -> Path:
    return Path(value)


def register(subparsers: argparse._SubParsersAction) -> None:
    from trainjobs.kinds.registry import KINDS  # the kinds' names; none of their models

    validate = subparsers.add_parser(
        "validate",
        help="validate job spec files",
        description=f"Check each job spec ({', '.join(KINDS)}) as the "
        "API server and the operators would, build its resource graph, and print one line per "
        "valid file; each mistake is reported with its field path, value and fix.",
        epilog="exit codes: 0 all valid, 2 a file is invalid or unreadable",
    )
    validate.add_argument("files", nargs="+", metavar="FILE", help="job spec files (YAML)")
    add_trainer_options(validate)
    validate.set_defaults(handler=_validate)

    render = subparsers.add_parser(
        "render",
        help="write the pure resource graph of one job as YAML, one object per file",
        description="Write every Kubernetes object of one job's resource graph (the ones "
        "Pulumi deploys and `trainjobs run` executes) to DIR, one numbered YAML file each, "
        "and print their paths.",
        epilog="exit codes: 0 written, 1 the machine refused a write, 2 an invalid spec or --out",
    )
    render.add_argument("file", metavar="FILE", help="job spec (YAML)")
    render.add_argument(
        "--out",
        required=True,
        type=_directory,
        metavar="DIR",
        help="directory for the manifests (required; created, or emptied of earlier "
        "manifests); - writes them to standard output as one YAML stream",
    )
    render.add_argument(
        "--namespace",
        default="default",
        type=namespace_argument,
        help="if the spec names none (default: default)",
    )
    render.add_argument(
        "--kubectl-image",
        default=DEFAULT_KUBECTL_IMAGE,
        metavar="IMAGE",
        help=f"the image the MPI launcher copies kubectl from (default: {DEFAULT_KUBECTL_IMAGE})",
    )
    render.add_argument(
        "--gang-scheduler",
        choices=GANG_SCHEDULERS,
        help="give TFJobs and PyTorchJobs a PodGroup their pods join (as trainjobs:gangScheduler;"
        " default: none)",
    )
    render.add_argument(
        "--gang-scheduler-name",
        metavar="NAME",
        help="the pods' schedulerName for scheduler-plugins (default: scheduler-plugins-scheduler)",
    )
    add_mpi_transport(render)
    add_trainer_options(render)
    render.set_defaults(handler=_render)


def add_mpi_transport(parser: argparse.ArgumentParser, default: str | None = "kubectl") -> None:
    """`--mpi-transport`, shared by `render`, `preview` and `run`."""
    parser.add_argument(
        "--mpi-transport",
        choices=MPI_TRANSPORTS,
        default=default,
        help="how a ChainerJob's master starts MPI daemons in its workers (an MPIJob uses its "
        "operator's: ssh for v2beta1, kubectl exec before): kubectl exec through "
        "the API server (default), or ssh to an sshd in each worker with a key made per job "
        "(no Role, no API token)"
        + ("" if default else "; default: the stack's trainjobs:mpiTransport"),
    )


def register_crds(subparsers: argparse._SubParsersAction) -> None:
    from trainjobs.kinds.registry import KINDS

    *others, last = [name for name, kind in KINDS.items() if kind.crd]
    generate = subparsers.add_parser(
        "crds",
        help="regenerate the CRDs from the spec models",
        description=f"Write the CustomResourceDefinitions of {', '.join(others)} and {last}, "
        "generated from the spec models, one YAML file each, and print their paths.",
        epilog="exit codes: 0 written, 1 the machine refused a write, 2 an invalid --out",
    )
    generate.add_argument(
        "--out",
        default=Path("crds"),
        type=_directory,
        metavar="DIR",
        help="where the CRD files go (default: crds)",
    )
    generate.set_defaults(handler=_crds)
