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
    from collections.abc import Callable, Sequence

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
    "runs": "history",
    "logs": "history",
    "preflight": "preflight",
    "dockerfiles": "images",
    "images": "images",
    "completion": "completion",
}
"""Each subcommand -> the group that registers it. A command imports its group's module
alone (`trainjobs run` never loads Pulumi, the image catalogue's renderer or the cluster
client); help and mistakes in the command's name load every group, to list them all."""
GROUPS = (
    "jobs",
    "preview",
    "crds",
    "diff",
    "watch",
    "run",
    "history",
    "preflight",
    "images",
    "completion",
)
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
    if group == "history":
        from trainjobs.cli import history

        return history.register
    if group == "preflight":
        from trainjobs.cli import preflight

        return preflight.register
    if group == "completion":
        from trainjobs.cli import completion

        return lambda subparsers: completion.register(subparsers, build_parser)
    from trainjobs.cli import images

    return images.register


def _version() -> str:
    from trainjobs.core.version import package_version

    return package_version()


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for ``command`` alone (one of :data:`COMMANDS`), or for every command."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="trainjobs",
        description="Distributed training jobs on Kubernetes as Pulumi infrastructure as code.",
    )
    parser.add_argument(
        "--version", action="version", version=f"trainjobs {_version()}", help="print the version"
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for group in (COMMANDS[command],) if command in COMMANDS else GROUPS:
        _register(group)(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except Exception as error:
        # Python may hand a Ctrl-C on wrapped in another exception (one that lands in a class
        # body's __set_name__ while a module is imported): still the user's Ctrl-C.
        if not _caused_by_interrupt(error):
            raise
    except KeyboardInterrupt:
        pass
    print("interrupted", file=sys.stderr)
    return 130


def _caused_by_interrupt(error: BaseException) -> bool:
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False


def _run(arguments: list[str]) -> int:
    from trainjobs.cli.pipes import ReaderMayLeave
    from trainjobs.core.errors import UserError
    from trainjobs.core.terminal import escape

    args = build_parser(arguments[0] if arguments else None).parse_args(arguments)
    args.argv = arguments  # for run records
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
