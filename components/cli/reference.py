"""The command-line reference page of the docs site, generated from each command's ``--help``.

``python -m trainjobs.cli.reference`` prints it; ``docs/cli-reference.md`` is its output,
kept current by a test, so the page never says what the commands no longer do.
"""

from __future__ import annotations

import argparse
import os
from unittest import mock

from trainjobs.cli import build_parser

WIDTH = "100"
"""Help text wraps at the terminal's width: a fixed one keeps the page the same everywhere."""


def reference() -> str:
    """Markdown: the top-level help, then each command's, in `trainjobs --help`'s order."""
    with mock.patch.dict(os.environ, {"COLUMNS": WIDTH}):
        parser = build_parser()
        sections = [
            "# Command-line reference",
            "",
            "Generated from each command's `--help` (`python -m trainjobs.cli.reference`).",
            "",
            "```text",
            parser.format_help().rstrip(),
            "```",
        ]
        for name, command in _commands(parser).items():
            sections += ["", f"## trainjobs {name}", "", "```text", command.format_help().rstrip()]
            sections.append("```")
    return "\n".join(sections) + "\n"


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Each subcommand (and each subcommand of a group, as ``images build``) by its name."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, command in action.choices.items():
                found[name] = command
                found.update({f"{name} {sub}": p for sub, p in _commands(command).items()})
    return found


if __name__ == "__main__":
    print(reference(), end="")
