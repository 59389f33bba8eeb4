"""The `trainjobs` command line. Each concept module registers its own subcommands."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from components.errors import UserError


def build_parser() -> argparse.ArgumentParser:
    # Imported here so `trainjobs --help` stays fast and each module owns its commands.
    from components import commands

    parser = argparse.ArgumentParser(
        prog="trainjobs",
        description="Distributed training jobs on Kubernetes as Pulumi infrastructure as code.",
    )
    subcommands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for register in commands.REGISTRARS:
        register(subcommands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.handler(args) or 0)
    except UserError as error:
        print(f"error: {error}", file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
