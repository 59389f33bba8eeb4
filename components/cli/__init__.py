"""The `trainjobs` command line: each group of subcommands in its own module."""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
from collections.abc import Sequence
from typing import TextIO

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
    stdout = sys.stdout
    sys.stdout = _ReaderMayLeave(stdout)
    try:
        return _run(args)
    finally:
        sys.stdout.flush()
        sys.stdout = stdout


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.handler(args) or 0)
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


class _ReaderMayLeave(io.TextIOBase):
    """stdout whose reader may leave early (`| head -1`): the command goes on quietly and
    keeps its exit code, as git and kubectl end with the first line's reader gone; what it
    still prints goes to /dev/null, so no later write or the interpreter's flush fails."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def _gone(self) -> None:
        devnull = os.open(os.devnull, os.O_WRONLY)
        with contextlib.suppress(OSError, ValueError):  # a stream without a descriptor
            os.dup2(devnull, self.stream.fileno())
        os.close(devnull)
        self.stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except BrokenPipeError:
            self._gone()
            return len(text)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except BrokenPipeError:
            self._gone()

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()


if __name__ == "__main__":
    sys.exit(main())
