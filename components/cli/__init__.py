"""The `trainjobs` command line: each group of subcommands in its own module."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from trainjobs.core.errors import UserError


def build_parser() -> argparse.ArgumentParser:
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
    parser = build_parser()
    args = parser.parse_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # for run records
    try:
        code = int(args.handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at the interpreter's exit
        return code
    except BrokenPipeError:
        return _reader_gone()
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except OSError as error:  # the machine refused (a full disk, a lost file): exit 1
        where = f"{error.filename}: " if error.filename else ""
        print(f"error: {where}{error.strerror or error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _reader_gone() -> int:
    """The reader of stdout left early (`| head -1`): end quietly with 0, as git and kubectl
    do; stdout goes to /dev/null so the interpreter's final flush cannot fail again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 0


if __name__ == "__main__":
    sys.exit(main())
