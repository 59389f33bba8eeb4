"""`--help` answers: every command has a description and its exit codes, every argument a help
text that names its default, and the command-line page's table is the commands' own summary."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from tests.conftest import REPO
from trainjobs.cli import build_parser


def commands(
    parser: argparse.ArgumentParser, prefix: str = ""
) -> Iterator[tuple[str, str, argparse.ArgumentParser]]:
    """(name, one-line help, parser) of every subcommand, nested ones as `images build`."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            summaries = {choice.dest: choice.help or "" for choice in action._choices_actions}
            for name, subparser in action.choices.items():
                yield f"{prefix}{name}", summaries[name], subparser
                yield from commands(subparser, f"{prefix}{name} ")


COMMANDS = {name: (summary, parser) for name, summary, parser in commands(build_parser())}


def has_default(action: argparse.Action) -> bool:
    if action.default in (None, False, [], argparse.SUPPRESS) or action.required:
        return False
    return not isinstance(action, argparse._SubParsersAction)


def test_the_commands_are_the_documented_ones():
    assert sorted(COMMANDS) == [
        "clean",
        "completion",
        "crds",
        "diff",
        "dockerfiles",
        "images",
        "images bootstrap",
        "images build",
        "images configure",
        "logs",
        "preflight",
        "preview",
        "render",
        "run",
        "runs",
        "status",
        "validate",
        "watch",
    ]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_command_has_a_summary_and_a_description(name):
    summary, parser = COMMANDS[name]
    assert summary and summary[0].islower() and not summary.endswith(".")
    assert parser.description and parser.description.endswith(".")


@pytest.mark.parametrize("name", sorted(set(COMMANDS) - {"images"}))
def test_every_command_gives_its_exit_codes(name):
    parser = COMMANDS[name][1]
    said = f"{parser.description} {parser.epilog}"
    assert re.search(r"(exit codes:|Exits) 0\b", said) and re.search(r"\b2\b", said)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_argument_has_a_help_text_that_names_its_default(name):
    parser = COMMANDS[name][1]
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
            continue
        label = "/".join(action.option_strings) or action.dest
        assert action.help, f"{name} {label}: no help"
        if has_default(action):
            assert "default" in action.help, f"{name} {label}: default {action.default!r} unsaid"


def readme_table() -> dict[str, str]:
    """The rows of the command-line page's table: `trainjobs NAME` and what it does."""
    section = (REPO / "docs" / "cli.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `trainjobs ([a-z ]+)` \| (.+) \|$", section, re.M)
    return dict(rows)


def test_the_command_line_pages_table_is_the_commands_summaries():
    assert readme_table() == {name: summary for name, (summary, _) in COMMANDS.items()}
