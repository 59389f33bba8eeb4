"""Hostile values never become engine options: mount paths, env, images, build inputs.

The engine's own parsers are modelled here from their sources: pflag's ``--flag=value`` (one
argument, one value), Go's ``encoding/csv`` for ``--mount`` and ``--env-file`` (containers/podman
``pkg/specgenutil/volumes.go`` ``findMountType``), and podman's env file reader
(``pkg/env/env.go`` ``ParseFile``). Every argv built from generated values is parsed back with
them and must give exactly the values put in, or the value is refused (exit 2).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from trainjobs.core.errors import UserError
from trainjobs.engines.docker import Docker
from trainjobs.engines.engine import (
    BuildRequest,
    ContainerRequest,
    Mount,
    env_file_text,
    mount_flag,
)
from trainjobs.engines.podman import Podman


class GoCsvError(Exception):
    pass


def go_csv(text: str) -> list[list[str]]:
    """Go's ``csv.Reader.ReadAll`` with its defaults (comma ',', no lazy quotes): records."""
    records: list[list[str]] = []
    record: list[str] = []
    position = 0
    while True:
        if position < len(text) and text[position] == '"':
            value, position = "", position + 1
            while True:
                end = text.find('"', position)
                if end < 0:
                    raise GoCsvError('extraneous or missing " in quoted-field')
                value += text[position:end]
                if text[end + 1 : end + 2] == '"':
                    value, position = value + '"', end + 2
                    continue
                position = end + 1
                if position < len(text) and text[position] not in ",\n":
                    raise GoCsvError('extraneous or missing " in quoted-field')
                break
            value = value.replace("\r\n", "\n")
        else:
            ends = [i for i in (text.find(",", position), text.find("\n", position)) if i >= 0]
            end = min(ends) if ends else len(text)
            value = text[position:end].removesuffix("\r")
            if '"' in value:
                raise GoCsvError('bare " in non-quoted-field')
            position = end
        record.append(value)
        if position >= len(text):
            records.append(record)
            return records
        if text[position] == "\n":
            records.append(record)
            record = []
        position += 1
        if position >= len(text):
            records.append(record)
            return records


def parse_mount(flag: str) -> list[str]:
    """The fields podman reads from one ``--mount=`` argument (exactly one record)."""
    assert flag.startswith("--mount=")
    records = go_csv(flag.removeprefix("--mount="))
    assert len(records) == 1
    return records[0]


def parse_env_file(text: str) -> dict[str, str]:
    """podman's ``ParseFile``; a line without ``=`` (read from the client) fails the test."""
    env: dict[str, str] = {}
    for raw in text.split("\n"):
        line = raw.removesuffix("\r").lstrip(" \t\n")
        if not line or line.startswith("#"):
            continue
        name, equals, value = line.partition("=")
        assert equals, f"{line!r} would be read from the client's environment"
        env[name.lstrip(" \t\n")] = value
    return env


def options_of(argv: list[str]) -> tuple[list[tuple[str, str]], list[str]]:
    """pflag's view of ``podman run``: (flag, value) pairs, then what follows ``--``."""
    split = argv.index("--")
    options = []
    for argument in argv[2:split]:
        assert argument.startswith("--"), argument
        name, _, value = argument.partition("=")
        options.append((name, value))
    return options, argv[split + 1 :]


HOSTILE = st.text(
    alphabet=st.sampled_from(list(",=\"'\n\r\t :\\-/#*$ab\x00\x7f\u2028é")), max_size=24
)
TEXT = st.one_of(HOSTILE, st.text(max_size=24))


def test_a_mount_path_with_commas_is_one_quoted_field():
    flag = mount_flag(Mount(Path("/run/pods/p/volumes/data"), "/data,src=/,dst=/hostroot"))

    assert (
        flag
        == '--mount=type=bind,source=/run/pods/p/volumes/data,"target=/data,src=/,dst=/hostroot"'
    )
    assert parse_mount(flag) == [
        "type=bind",
        "source=/run/pods/p/volumes/data",
        "target=/data,src=/,dst=/hostroot",
    ]


def test_a_mount_path_with_quotes_keeps_them():
    flag = mount_flag(Mount(Path('/run/a"b'), '/x"y', read_only=True))

    assert flag == '--mount=type=bind,"source=/run/a""b","target=/x""y",ro'
    assert parse_mount(flag) == ["type=bind", 'source=/run/a"b', 'target=/x"y', "ro"]


@pytest.mark.parametrize("target", ["/data\n", "/data\r", "/da\tta", "/da\x00ta"])
def test_a_mount_path_with_a_control_character_is_refused(target: str):
    with pytest.raises(UserError) as raised:
        mount_flag(Mount(Path("/run/v"), target))
    assert str(raised.value) == (
        f"mount path {target!r}: contains a control character (a line break, tab or NUL), which the "
        "engine's option syntax cannot carry; rename it"
    )


def test_an_env_value_with_a_newline_is_refused_not_passed_through_the_client():
    with pytest.raises(UserError) as raised:
        env_file_text({"LD_PRELOAD": "/pod/emptydir/evil.so\n"})
    assert str(raised.value) == (
        "env LD_PRELOAD: contains a line break (or NUL), which a container run cannot pass to "
        "the container privately (the engine reads env files line by line); put multi-line "
        "text in a ConfigMap volume, or use --runtime process"
    )


@pytest.mark.parametrize("name", ["#X", "X*", " X", "A B", "A=B", "", "X\n"])
def test_an_env_name_the_env_file_would_misread_is_refused(name: str):
    with pytest.raises(UserError) as raised:
        env_file_text({name: "1"})
    assert str(raised.value) == (
        f"env {name}: the name {name!r} cannot be one line of an env file; rename it"
    )


def test_an_image_is_never_an_option():
    request = ContainerRequest(
        name="c",
        pod="p",
        image="--help",
        entrypoint=None,
        args=("--privileged",),
        env_file=Path("/e"),
    )
    for engine in (Podman("podman"), Docker("docker")):
        options, positional = options_of(engine.run_command(request))
        assert positional == ["--help", "--privileged"]
        assert ("--privileged", "") not in options


@pytest.mark.parametrize(
    ("request_kwargs", "message"),
    [
        (
            {"secrets": {"ca-bundle": Path("/tmp/ca.pem,id=x,src=/etc/shadow")}},
            "build secret file '/tmp/ca.pem,id=x,src=/etc/shadow': contains ',', where the "
            "engine would split it; rename it",
        ),
        (
            {"volumes": {Path("/srv/wheels:/etc"): "/run/build/pip-0"}},
            "build directory '/srv/wheels:/etc': contains ',' or ':', where the engine would "
            "split it; rename it",
        ),
    ],
)
def test_build_inputs_that_the_engine_would_split_are_refused(request_kwargs, message):
    request = BuildRequest(
        dockerfile=Path("Dockerfile"), context=Path("."), tag="t:1", **request_kwargs
    )
    with pytest.raises(UserError) as raised:
        Podman("podman").build(request, print)
    assert str(raised.value) == message


EXPECTED_OPTIONS = {
    "--rm",
    "--pull",
    "--pod",
    "--name",
    "--env-file",
    "--mount",
    "--workdir",
    "--cap-drop",
    "--cap-add",
    "--security-opt",
    "--label",
    "--entrypoint",
}


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    source=TEXT,
    target=TEXT,
    env=st.dictionaries(TEXT, TEXT, max_size=4),
    workdir=TEXT,
    image=TEXT,
    args=st.lists(TEXT, max_size=3),
)
@example(
    source="data",
    target="/data,src=/,dst=/hostroot",
    env={"LD_PRELOAD": "/x.so\nY=1"},
    workdir="/w --privileged",
    image="--help",
    args=["--privileged"],
)
def test_generated_hostile_values_reach_the_engine_as_exactly_those_values(
    source: str, target: str, env: dict[str, str], workdir: str, image: str, args: list[str]
):
    host = Path("/run/pods/p/volumes") / source.lstrip("/")
    try:
        env_text = env_file_text(env)
        argv = Podman("podman").run_command(
            ContainerRequest(
                name="tj-1-p-main",
                pod="tj-1-p",
                image=image,
                entrypoint=("sh", "-c"),
                args=tuple(args),
                env_file=Path("/run/pods/p/env/main.env"),
                mounts=(Mount(host, target, read_only=True),),
                workdir=workdir or None,
                capabilities=("CHOWN",),
                labels={"io.trainjobs.run": "1"},
            )
        )
    except UserError:
        bad = [*env, *env.values(), str(host), target]
        assert any(any(ord(c) < 0x20 or ord(c) == 0x7F for c in text) for text in bad) or any(
            not name
            or "=" in name
            or name.startswith("#")
            or name.endswith("*")
            or any(c.isspace() or not c.isprintable() for c in name)
            for name in env
        )
        return
    assert parse_env_file(env_text) == env
    options, positional = options_of(argv)
    assert {name for name, _ in options} <= EXPECTED_OPTIONS
    assert [value for name, value in options if name == "--cap-add"] == ["CHOWN"]
    assert [value for name, value in options if name == "--cap-drop"] == ["all"]
    assert [value for name, value in options if name == "--workdir"] == (
        [workdir] if workdir else []
    )
    mounts = [value for name, value in options if name == "--mount"]
    assert [parse_mount(f"--mount={value}") for value in mounts] == [
        ["type=bind", f"source={host}", f"target={target}", "ro"]
    ]
    assert positional == [image, *args]
