"""The `trainjobs` command line: each group of subcommands in its own module.

Only ``sys`` is imported here: everything else loads inside :func:`main`, so a Ctrl-C
while the command line is still loading is an interruption like any other (exit 130, one
line), not a traceback from the import machinery.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence


def build_parser() -> argparse.ArgumentParser:
    import argparse

    # Imported here so `trainjobs --help` stays fast: each module imports its own work lazily.
    from trainjobs.cli import history, images, jobs, preflight, review, run, watch

    parser = argparse.ArgumentParser(
        prog="trainjobs",
        description="Distributed training jobs on Kubernetes as Pulumi infrastructure as code.",
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in (
        jobs.register,
        review.register_preview,
        jobs.register_crds,
        review.register_diff,
        watch.register,
        run.register,
        history.register,
        preflight.register,
        images.register,
    ):
        register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(argv)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _run(argv: Sequence[str] | None) -> int:
    from trainjobs.cli.pipes import ReaderMayLeave
    from trainjobs.core.errors import UserError
    from trainjobs.core.terminal import escape

    args = build_parser().parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for run records
    stdout = sys.stdout
    sys.stdout = ReaderMayLeave(stdout)
    try:
        return int(args.handler(args) or 0)
    except UserError as error:
        # Messages may quote what a cluster, a pod or a file supplied: shown, never acted on.
        print(f"error: {escape(str(error), keep_newlines=True)}", file=sys.stderr)
        return error.exit_code
    except OSError as error:  # the machine refused (a full disk, a lost file): exit 1
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    finally:
        sys.stdout.flush()
        sys.stdout = stdout


if __name__ == "__main__":
    sys.exit(main())
