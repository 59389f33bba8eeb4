"""The job components' arguments, checked for their types before anything reads them.

A program in any language (through the component provider) can pass any value; one of the
wrong type is reported as a spec's problems are, naming the argument, the type given and
the type expected, instead of failing as a traceback deep in the parser. Only the type is
named, never the value: a value given in the wrong place may be anything, a secret included.
"""

from __future__ import annotations

from collections.abc import Mapping
from os import PathLike
from typing import Any

from trainjobs.core.errors import Problem


def type_problem(
    argument: str, value: object, expected: type | tuple[type, ...], what: str
) -> Problem | None:
    """A problem when ``value`` is not an instance of ``expected`` (described as ``what``)."""
    if isinstance(value, expected):
        return None
    return Problem(argument, f"must be {what} (got {type(value).__name__})")


def optional_problem(
    argument: str, value: object, expected: type | tuple[type, ...], what: str
) -> Problem | None:
    """As :func:`type_problem`, None (the argument's default) being allowed too."""
    if value is None:
        return None
    return type_problem(argument, value, expected, f"{what}, or None")


def runtime_problems(runtimes: object) -> list[Problem]:
    """A TrainJob's ``runtimes``: a list (or tuple) of documents. A string is a sequence too,
    of characters: refused, not read one character at a time."""
    if not isinstance(runtimes, list | tuple):
        what = "a list of training runtime documents (mappings)"
        return [Problem("runtimes", f"must be {what} (got {type(runtimes).__name__})")]
    return [
        Problem(f"runtimes[{index}]", f"must be a mapping (got {type(item).__name__})")
        for index, item in enumerate(runtimes)
        if not isinstance(item, Mapping)
    ]


def path_problem(path: Any) -> Problem | None:
    """A spec file's path: a str or an ``os.PathLike`` (a :class:`pathlib.Path`)."""
    return type_problem("path", path, (str, PathLike), "a str or a Path")
