"""The subcommands of `trainjobs`. Core commands live here; other concept modules append
their own registrars to :data:`REGISTRARS`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from components import crds, jobtypes
from components.diff import add_report_arguments, check_against, register_diff, report_against
from components.dockerfiles import register_dockerfiles
from components.errors import SpecError
from components.graph import DEFAULT_KUBECTL_IMAGE, GraphOptions
from components.local.cli import register_run
from components.manifests import prepare_output_dir, write_manifests
from components.preflight import register_preflight
from components.watcher import register_commands as register_watch

Registrar = Callable[[argparse._SubParsersAction], None]


def _validate(args: argparse.Namespace) -> int:
    failures = []
    for path in args.files:
        try:
            job = jobtypes.load(path)
        except SpecError as error:
            failures.append(str(error))
            continue
        print(f"{path}: valid {job.kind} {job.name!r} ({len(job.graph.nodes)} objects)")
    if failures:
        print("\n".join(failures), file=sys.stderr)
        return 2
    return 0


def _render(args: argparse.Namespace) -> int:
    options = GraphOptions(kubectl_image=args.kubectl_image)
    job = jobtypes.load(args.file, args.namespace, options)  # validate before touching --out
    prepare_output_dir(args.out)
    for path in write_manifests(job.graph.manifests(), args.out):
        print(path)
    return 0


def _preview(args: argparse.Namespace) -> int:
    from components.preview import run_preview, write_preview  # loads the Pulumi SDK

    check_against(args)
    result = run_preview(args.stack, args.project)
    paths = write_preview(result, args.out)
    objects = result.kubernetes_objects()
    print(
        f"stack {args.stack}: {len(result.resources)} resources, {len(objects)} Kubernetes objects"
    )
    for registration in objects:
        manifest = registration.inputs
        print(f"  {manifest['kind']:<14} {manifest['metadata']['name']}")
    print(f"wrote {len(paths)} files to {args.out}")
    if args.against is not None:
        return report_against(args)
    return 0


def _crds(args: argparse.Namespace) -> int:
    for path in crds.write(args.out):
        print(path)
    return 0


def _directory(value: str) -> Path:
    return Path(value)


def register_core(subparsers: argparse._SubParsersAction) -> None:
    validate = subparsers.add_parser("validate", help="validate job spec files")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(handler=_validate)

    render = subparsers.add_parser(
        "render", help="write the pure resource graph of one job as YAML, one object per file"
    )
    render.add_argument("file", metavar="FILE")
    render.add_argument("--out", required=True, type=_directory, metavar="DIR")
    render.add_argument("--namespace", default="default", help="if the spec names none")
    render.add_argument("--kubectl-image", default=DEFAULT_KUBECTL_IMAGE, metavar="IMAGE")
    render.set_defaults(handler=_render)

    preview = subparsers.add_parser(
        "preview",
        help="evaluate the Pulumi program for a stack under the SDK's mock runtime (offline)",
    )
    preview.add_argument("--stack", required=True, metavar="NAME", help="reads Pulumi.NAME.yaml")
    preview.add_argument("--out", required=True, type=_directory, metavar="DIR")
    preview.add_argument("--project", default=Path("."), type=_directory, metavar="DIR")
    preview.add_argument(
        "--against", type=_directory, metavar="BASE_DIR", help="report changes since that preview"
    )
    add_report_arguments(preview)
    preview.set_defaults(handler=_preview)

    generate = subparsers.add_parser("crds", help="regenerate the CRDs from the spec models")
    generate.add_argument("--out", default=Path("crds"), type=_directory, metavar="DIR")
    generate.set_defaults(handler=_crds)


REGISTRARS: list[Registrar] = [
    register_core,
    register_diff,
    register_watch,
    register_run,
    register_preflight,
    register_dockerfiles,
]
