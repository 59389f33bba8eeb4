"""Errors a user can fix. The CLI prints them without a traceback and exits non-zero."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


class UserError(Exception):
    """A mistake in input the user controls (a spec, a flag, a stack file)."""

    exit_code = 2


class EnvironmentFailure(UserError):
    """The machine refused what the input asked for (a full or read-only disk, a missing
    permission): reported like a user error, one line and no traceback, but with exit 1."""

    exit_code = 1


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a spec: where (a dotted field path), what, and how to fix it."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


class SpecError(UserError):
    """A job spec failed validation. Carries every problem found, each with its field path,
    and the warnings found on the way (they often explain the problem: a misplaced field)."""

    def __init__(
        self, source: str, problems: list[Problem], warnings: list[Problem] | None = None
    ) -> None:
        self.source = source
        self.problems = problems
        self.warnings = list(warnings or [])
        lines = [f"{source}: invalid job spec ({len(problems)} problem(s))"]
        lines += [f"  {problem}" for problem in problems]
        lines += [f"  warning: {warning}" for warning in self.warnings]
        super().__init__("\n".join(lines))


class ConfigError(UserError):
    """Stack config that failed validation; carries every problem, each with its field path."""

    def __init__(self, source: str, what: str, problems: list[Problem]) -> None:
        self.source = source
        self.problems = problems
        lines = [f"{source}: invalid {what} ({len(problems)} problem(s))"]
        lines += [f"  {problem}" for problem in problems]
        super().__init__("\n".join(lines))


def written(value: Any) -> str:
    """A value for a message as the YAML wrote it: ``null`` for YAML's null, else its repr."""
    return "null" if value is None else repr(value)


def got(document: Mapping[str, Any], key: str) -> str:
    """What the YAML said of ``document[key]``, for a message's parentheses: ``not set``
    where the key is absent, else ``got`` and the value as written."""
    return f"got {written(document[key])}" if key in document else "not set"


def one_of(document: Mapping[str, Any], key: str, choices: list[str], example: str) -> str:
    """``must be one of`` the choices, with what the YAML said; where it said nothing (or
    null), how to write one, e.g. ``example``."""
    message = f"must be one of {', '.join(choices)} ({got(document, key)})"
    if document.get(key) is None:
        message += f": {'set' if key in document else 'add'} the job's {key}, e.g. {example}"
    return message
