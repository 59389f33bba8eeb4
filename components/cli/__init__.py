"""The `trainjobs` command line: each group of subcommands in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from trainjobs.core.errors import UserError

Register = Callable[[argparse._SubParsersAction], None]

COMMANDS = {
    "validate": "jobs",
    "render": "jobs",
    "preview": "preview",
    "crds": "crds",
    "diff": "diff",
    "watch": "watch",
    "status": "watch",
    "run": "run",
    "clean": "run",
    "preflight": "preflight",
    "dockerfiles": "images",
    "images": "images",
}
"""Each subcommand -> the group that registers it. A command imports its group's module
alone (`trainjobs run` never loads Pulumi, the image catalogue's renderer or the cluster
client); help and mistakes in the command's name load every group, to list them all."""
GROUPS = ("jobs", "preview", "crds", "diff", "watch", "run", "preflight", "images")
"""The order in which `trainjobs --help` lists the groups' commands."""


def _register(group: str) -> Register:
    """The function that registers ``group``'s subcommands, its module imported now."""
    if group in ("jobs", "crds"):
        from trainjobs.cli import jobs

        return jobs.register if group == "jobs" else jobs.register_crds
    if group in ("preview", "diff"):
        from trainjobs.cli import review

        return review.register_preview if group == "preview" else review.register_diff
    if group == "watch":
        from trainjobs.cli import watch

        return watch.register
    if group == "run":
        from trainjobs.cli import run

        return run.register
    if group == "preflight":
        from trainjobs.cli import preflight

        return preflight.register
    from trainjobs.cli import images

    return images.register


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for ``command`` alone (one of :data:`COMMANDS`), or for every command."""
    parser = argparse.ArgumentParser(
        prog="trainjobs",
        description="Distributed training jobs on Kubernetes as Pulumi infrastructure as code.",
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (COMMANDS[command],) if command in COMMANDS else GROUPS:
        _register(group)(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments[0] if arguments else None)
    args = parser.parse_args(arguments)
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


if __name__ == "__main__":
    sys.exit(main())
