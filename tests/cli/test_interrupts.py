"""Ctrl-C anywhere in a command is "interrupted" and exit 130, in one line: also where Python
hands the interrupt on wrapped in another exception (a class body's ``__set_name__`` while a
module is imported, the Ctrl-C test's failure under load: ``RuntimeError: Error calling
__set_name__ ...`` whose cause is the KeyboardInterrupt)."""

from __future__ import annotations

import pytest

import trainjobs.cli
from trainjobs.cli import main


def raising(error: BaseException):
    def run(arguments: list[str]) -> int:
        raise error

    return run


def wrapped_interrupt() -> RuntimeError:
    try:
        try:
            raise KeyboardInterrupt
        except KeyboardInterrupt as interrupt:
            raise RuntimeError("Error calling __set_name__ on 'cached_property'") from interrupt
    except RuntimeError as error:
        return error


def test_an_interrupt_is_exit_130_in_one_line(monkeypatch, capsys):
    monkeypatch.setattr(trainjobs.cli, "_run", raising(KeyboardInterrupt()))

    assert main(["validate", "x.yaml"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_an_interrupt_wrapped_in_another_exception_is_still_exit_130(monkeypatch, capsys):
    monkeypatch.setattr(trainjobs.cli, "_run", raising(wrapped_interrupt()))

    assert main(["validate", "x.yaml"]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_an_error_not_caused_by_an_interrupt_is_left_as_it_is(monkeypatch):
    monkeypatch.setattr(trainjobs.cli, "_run", raising(RuntimeError("a bug")))

    with pytest.raises(RuntimeError, match="a bug"):
        main(["validate", "x.yaml"])
