"""`trainjobs preview` and `trainjobs diff`: offline review of what a stack change does."""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from trainjobs.cli.jobs import add_mpi_transport
from trainjobs.core.errors import UserError
from trainjobs.review.compare import DEFAULT_MAX_BYTES, Comparison, compare
from trainjobs.review.refs import diff_against_ref
from trainjobs.review.replacement import ProviderSettings
from trainjobs.review.snapshot import graph_file, load_preview


def _check_expectation(comparison: Comparison, expect_no_changes: bool) -> int:
    return 1 if expect_no_changes and comparison.has_changes else 0


def check_against(args: argparse.Namespace) -> None:
    """Before `trainjobs preview --against` runs: refuse a baseline that is not a preview or
    that `--out` would overwrite, and `--expect-no-changes` without a baseline."""
    if args.against is None:
        if args.expect_no_changes:
            raise UserError("--expect-no-changes needs --against BASE_DIR")
        return
    if args.against.resolve() == args.out.resolve():
        raise UserError(f"--against {args.against}: must differ from --out (it is overwritten)")
    graph_file(args.against)


def report_against(args: argparse.Namespace) -> int:
    """`trainjobs preview --against`: compare the preview just written with a previous one."""
    from trainjobs.review.report import render

    comparison = compare(
        load_preview(args.against),
        load_preview(args.out),
        ProviderSettings.from_stack(args.project, args.stack),
    )
    command = (
        f"trainjobs preview --stack {args.stack} --out {args.out} --against {args.against} "
        "--max-bytes 0"
    )
    print()
    print(
        render(
            comparison,
            base=str(args.against),
            head=str(args.out),
            full_command=command,
            max_bytes=args.max_bytes,
        )
    )
    return _check_expectation(comparison, args.expect_no_changes)


def _diff(args: argparse.Namespace) -> int:
    from trainjobs.review.report import render

    if args.previews is not None:
        comparison, config = diff_against_ref(args.project, args.stack, args.base, args.previews)
    else:
        with tempfile.TemporaryDirectory(prefix="trainjobs-previews-") as previews:
            comparison, config = diff_against_ref(
                args.project, args.stack, args.base, Path(previews)
            )
    command = f"trainjobs diff --stack {args.stack} --base {args.base} --max-bytes 0"
    report = render(
        comparison,
        base=args.base,
        head="working tree",
        full_command=command,
        max_bytes=args.max_bytes,
        config=config,
        previews=args.previews,
    )
    if args.out is None:
        print(report)
    else:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        counts = ", ".join(f"{n} {op}" for op, n in comparison.counts.items() if n)
        print(f"stack {args.stack} ({args.base} -> working tree): {counts or 'no resources'}")
        print(f"wrote {args.out}")
    return _check_expectation(comparison, args.expect_no_changes)


def _size(value: str) -> int:
    number = int(value)
    if number < 0:
        raise argparse.ArgumentTypeError("must be 0 (no limit) or a positive number of bytes")
    return number


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    """Options shared by `diff` and `preview --against`."""
    parser.add_argument(
        "--expect-no-changes",
        action="store_true",
        help="exit 1 if any resource would be created, updated, replaced or deleted",
    )
    parser.add_argument(
        "--max-bytes",
        type=_size,
        default=DEFAULT_MAX_BYTES,
        metavar="N",
        help=f"cap the Markdown report (default: {DEFAULT_MAX_BYTES}, under GitHub's comment "
        "limit; 0: no cap)",
    )


def register_diff(subparsers: argparse._SubParsersAction) -> None:
    diff = subparsers.add_parser(
        "diff",
        help="preview a stack at a git ref and in the working tree; report what would change",
        description="Export GIT_REF with git archive, preview the stack there and in the "
        "working tree (each with its own code, offline), and report what `pulumi up` would "
        "create, update, replace or delete, as Markdown for a pull-request comment. Relative "
        "paths are the caller's.",
        epilog="exit codes: 0 reported, 1 changes with --expect-no-changes (or the machine "
        "refused a write), 2 a mistake (an unknown ref or stack, an invalid spec on either side)",
    )
    diff.add_argument(
        "--stack", required=True, metavar="NAME", help="reads Pulumi.NAME.yaml (required)"
    )
    diff.add_argument(
        "--base", required=True, metavar="GIT_REF", help="e.g. origin/main (required)"
    )
    diff.add_argument(
        "--project",
        default=Path("."),
        type=Path,
        metavar="DIR",
        help="the Pulumi project, in a git repository (default: .)",
    )
    diff.add_argument(
        "--out", type=Path, metavar="REPORT.md", help="write the report here (default: stdout)"
    )
    diff.add_argument(
        "--previews",
        type=Path,
        metavar="DIR",
        help="keep both previews in DIR/base, DIR/head (default: a temporary directory)",
    )
    add_report_arguments(diff)
    diff.set_defaults(handler=_diff)


def _preview(args: argparse.Namespace) -> int:
    from trainjobs.review.preview import run_preview, write_preview

    check_against(args)
    overrides = {}
    if args.mpi_transport is not None:
        overrides["trainjobs:mpiTransport"] = args.mpi_transport
    result = run_preview(args.stack, args.project, overrides)
    paths = write_preview(result, args.out)
    objects = result.kubernetes_objects()
    print(
        f"stack {args.stack}: {len(result.resources)} resources, {len(objects)} Kubernetes objects"
    )
    for registration in objects:
        print(f"  {registration.inputs['kind']:<14} {registration.object_name}")
    print(f"wrote {len(paths)} files to {args.out}")
    if args.against is not None:
        return report_against(args)
    return 0


def register_preview(subparsers: argparse._SubParsersAction) -> None:
    preview = subparsers.add_parser(
        "preview",
        help="evaluate the Pulumi program for a stack under the SDK's mock runtime (offline)",
        description="Run the Pulumi program (__main__.py) for a stack under the Pulumi SDK's "
        "mock runtime, with no cluster or credentials, and write every Kubernetes object as "
        "YAML plus graph.json (each resource's type, name, parent, dependencies and options).",
        epilog="exit codes: 0 written, 1 changes with --expect-no-changes (or the machine "
        "refused a write), 2 a mistake (an unknown stack, an invalid spec, a bad --out)",
    )
    preview.add_argument(
        "--stack", required=True, metavar="NAME", help="reads Pulumi.NAME.yaml (required)"
    )
    preview.add_argument(
        "--out",
        required=True,
        type=_directory,
        metavar="DIR",
        help="directory for the preview (required; created, or emptied of an earlier preview)",
    )
    preview.add_argument(
        "--project",
        default=Path("."),
        type=_directory,
        metavar="DIR",
        help="the Pulumi project (default: .)",
    )
    preview.add_argument(
        "--against",
        type=_directory,
        metavar="BASE_DIR",
        help="report changes since that preview (default: no report)",
    )
    add_mpi_transport(preview, default=None)
    add_report_arguments(preview)
    preview.set_defaults(handler=_preview)


def _directory(value: str) -> Path:
    return Path(value)
