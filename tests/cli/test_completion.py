"""`trainjobs completion`: the generated script completes commands, options and their values in
a real bash, from the command line's own parser."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from trainjobs.cli import build_parser, main
from trainjobs.cli.completion import script as script_of


def script(shell: str) -> str:
    return script_of(build_parser(), shell)


def complete(*words: str) -> list[str]:
    """What bash offers for the last of ``words`` (the word being completed)."""
    line = " ".join(f"'{word}'" for word in words)
    program = (
        f"{script('bash')}\nCOMP_WORDS=(trainjobs {line}); COMP_CWORD={len(words)}; "
        'cd /nonexistent-dir-for-completion 2>/dev/null; _trainjobs; printf "%s\\n" "${COMPREPLY[@]}"'
    )
    bash = shutil.which("bash")
    assert bash is not None
    done = subprocess.run([bash, "--norc", "-c", program], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return [line for line in done.stdout.splitlines() if line]


def test_the_first_word_completes_to_the_commands():
    assert complete("ru") == ["run", "runs"]
    assert complete("--v") == ["--version"]


def test_a_group_completes_to_its_subcommands():
    assert complete("images", "b") == ["build", "bootstrap"]


def test_an_option_completes_for_its_command():
    assert complete("images", "build", "--re") == ["--rebuild"]
    assert complete("runs", "--") == ["--help", "--dir", "--json"]


def test_an_options_value_completes_to_its_choices():
    assert complete("run", "jobs/x.yaml", "--runtime", "") == ["process", "container"]
    assert complete("render", "--gang-scheduler", "v") == ["volcano"]


def test_zsh_runs_the_same_function_through_bashcompinit():
    assert script("zsh") == (
        "autoload -U +X bashcompinit && bashcompinit\n"
        + script("bash")
        .replace("trainjobs bash completion", "trainjobs zsh completion")
        .replace("`trainjobs completion bash`", "`trainjobs completion zsh`")
    )


def test_the_command_prints_the_script(capsys):
    assert main(["completion", "bash"]) == 0
    assert capsys.readouterr().out == script("bash")


def test_an_unknown_shell_is_refused(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["completion", "fish"])
    assert exited.value.code == 2
    assert capsys.readouterr().err == (
        "usage: trainjobs completion [-h] SHELL\ntrainjobs completion: error: argument SHELL: "
        "invalid choice: 'fish' (choose from 'bash', 'zsh')\n"
    )
