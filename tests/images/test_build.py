"""Building the images for real: build settings, this machine's sources, and the built images.

The settings are checked as the files and flags a build receives. The CPU images themselves
are built by `make container-images` before the suite (with this machine's mirror, pip
configuration and CA bundle, as `make engine` saved them); the tests check they are current and
that none of those settings reached an image, its history or its configuration.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from trainjobs.cli import main
from trainjobs.core.errors import UserError
from trainjobs.engines import settings as engine_settings
from trainjobs.engines.engine import RECIPE_LABEL
from trainjobs.engines.registry import available_engines
from trainjobs.images import builder, kubectl_stand_in
from trainjobs.images.build_settings import BuildSettings
from trainjobs.images.builder import cpu_images, saved_settings
from trainjobs.images.catalogue import IMAGES
from trainjobs.images.dockerfiles import recipe_hash
from trainjobs.images.host_config import deb822_sources, debian_mirrors, one_line_sources

CHAINERMN_CPU = IMAGES["trainjobs/chainermn:7.8.1"]
PYTORCH_CPU = IMAGES["trainjobs/pytorch:2.13.0-cpu"]


def test_the_public_sources_need_no_build_args_secrets_or_mounts(tmp_path: Path):
    inputs = BuildSettings().for_build(CHAINERMN_CPU, tmp_path)

    assert (inputs.build_args, inputs.secrets, inputs.volumes) == ({}, {}, {})
    assert list(tmp_path.iterdir()) == []


def test_mirrors_pip_and_ca_reach_the_build_as_secret_files(tmp_path: Path):
    wheels = tmp_path / "wheels"
    (tmp_path / "index" / "simple").mkdir(parents=True)
    wheels.mkdir()
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    settings = BuildSettings(
        debian_base_image="mirror.example/debian:12.12-slim",
        kubectl_image="mirror.example/kubectl:v1.34.2",
        debian_mirror="http://mirror.example/debian",
        pip={
            "index-url": ("https://pypi.mirror.example/simple",),
            "extra-index-url": (f"file://{tmp_path}/index/simple",),
            "find-links": (str(wheels),),
        },
        ca_bundle=ca,
    )
    work = tmp_path / "work"
    work.mkdir()

    inputs = settings.for_build(CHAINERMN_CPU, work)

    assert inputs.build_args == {
        "BASE_IMAGE": "mirror.example/debian:12.12-slim",
        "KUBECTL_IMAGE": "mirror.example/kubectl:v1.34.2",
    }
    assert inputs.secrets == {
        "ca-bundle": ca,
        "apt-sources": work / "apt-sources",
        "apt-config": work / "apt-config",
        "pip-config": work / "pip-config",
    }
    assert (work / "apt-sources").read_text() == (
        "deb http://mirror.example/debian bookworm bookworm-updates main\n"
        "deb http://mirror.example/debian-security bookworm-security main\n"
    )
    assert (work / "apt-config").read_text() == (
        'Dir::Etc::SourceList "/run/secrets/apt-sources";\n'
        'Acquire::https::CAInfo "/run/secrets/ca-bundle";\n'
    )
    assert (work / "pip-config").read_text() == (
        "[global]\n"
        "index-url = https://pypi.mirror.example/simple\n"
        "extra-index-url = file:///run/build/pip-0/simple\n"
        "find-links = /run/build/pip-1\n"
        "cert = /run/secrets/ca-bundle\n"
    )
    # A file:// index links to its files beside it: its parent directory is mounted.
    assert inputs.volumes == {tmp_path / "index": "/run/build/pip-0", wheels: "/run/build/pip-1"}


def test_an_image_without_a_kubectl_stage_gets_no_kubectl_build_arg(tmp_path: Path):
    settings = BuildSettings(kubectl_image="mirror.example/kubectl:v1.34.2")
    assert settings.for_build(PYTORCH_CPU, tmp_path).build_args == {}


def test_a_local_pip_location_that_does_not_exist_is_refused(tmp_path: Path):
    settings = BuildSettings(pip={"find-links": ("/nonexistent/wheels",)})
    with pytest.raises(UserError) as raised:
        settings.for_build(PYTORCH_CPU, tmp_path)
    assert str(raised.value) == (
        "pip location '/nonexistent/wheels': /nonexistent/wheels does not exist on this machine"
    )


def test_settings_round_trip_through_their_saved_file():
    settings = BuildSettings(debian_mirror="http://deb.example/debian", pip={"find-links": ("/",)})
    assert BuildSettings.from_json(settings.to_json(), "saved") == settings


def test_a_broken_settings_file_says_how_to_rewrite_it():
    with pytest.raises(UserError) as raised:
        BuildSettings.from_json('{"mirror": 1}', "out/engine/build-settings.json")
    assert str(raised.value) == (
        "out/engine/build-settings.json: not valid build settings (BuildSettings.__init__() got "
        "an unexpected keyword argument 'mirror'); rewrite it with `make engine`"
    )


def test_unknown_pip_options_and_bad_mirrors_are_refused():
    with pytest.raises(UserError) as raised:
        BuildSettings(pip={"client-cert": ("/key.pem",)})
    assert str(raised.value) == (
        "pip option 'client-cert' is not a build setting (known: index-url, extra-index-url, "
        "find-links, trusted-host, timeout, retries)"
    )
    with pytest.raises(UserError) as raised:
        BuildSettings(debian_mirror="ftp://deb.example/debian")
    assert str(raised.value) == (
        "Debian mirror 'ftp://deb.example/debian': expected an http:// or https:// URL"
    )


# -- this machine's sources ----------------------------------------------------------------------


@pytest.fixture
def saved_elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Where `images configure` saves, instead of the project's settings (which other runs
    use), should a refusal ever fail to stop it."""
    directory = tmp_path / "engine"
    directory.mkdir()
    monkeypatch.setattr(builder, "SETTINGS_FILE", directory / "build-settings.json")
    write = engine_settings.write_containers_conf
    monkeypatch.setattr(
        engine_settings, "write_containers_conf", lambda: write(directory / "containers.conf")
    )
    return directory


SPLITS = (
    "contains white space, a comma or a control character, which would split it into more "
    "settings; give one URL, host or path"
)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (
            ["--debian-mirror", "http://m/debian\ndeb [trusted=yes] http://evil/ bookworm main"],
            "--debian-mirror 'http://m/debian\\ndeb [trusted=yes] http://evil/ bookworm main'",
        ),
        (
            ["--pip-index-url", "https://m/simple\n[global]\nindex-url = https://evil/"],
            "--pip-index-url 'https://m/simple\\n[global]\\nindex-url = https://evil/'",
        ),
        (
            ["--pip-trusted-host", "m.example evil.example"],
            "--pip-trusted-host 'm.example evil.example'",
        ),
        (
            ["--ca-bundle", "/etc/ssl/ca.pem,id=pip-config,src=/etc/shadow"],
            "--ca-bundle '/etc/ssl/ca.pem,id=pip-config,src=/etc/shadow'",
        ),
    ],
)
def test_build_settings_that_would_add_config_lines_or_secret_keys_exit_2_naming_the_flag(
    capsys: pytest.CaptureFixture, saved_elsewhere: Path, flags: list[str], message: str
):
    assert main(["images", "configure", *flags]) == 2
    assert capsys.readouterr() == ("", f"error: {message}: {SPLITS}\n")
    assert list(saved_elsewhere.iterdir()) == []


def test_a_base_image_that_is_an_option_is_refused(
    capsys: pytest.CaptureFixture, saved_elsewhere: Path
):
    assert main(["images", "configure", "--base-image=--help"]) == 2
    assert list(saved_elsewhere.iterdir()) == []
    assert capsys.readouterr().err == (
        "error: --base-image '--help': not a valid image reference "
        "([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case repository); name the image as a "
        "registry would\n"
    )


def test_a_local_pip_directory_with_a_colon_is_refused(tmp_path: Path):
    wheels = tmp_path / "wheels:/etc"
    wheels.mkdir(parents=True)
    settings = BuildSettings(pip={"find-links": (str(wheels),)})
    with pytest.raises(UserError) as raised:
        settings.for_build(CHAINERMN_CPU, tmp_path)
    assert str(raised.value) == (
        f"pip location {str(wheels)!r}: {wheels} holds ':', which the engine's --volume would "
        "split at; use a directory without ':'"
    )


def test_one_line_sources_are_read_with_their_options_skipped():
    text = (
        "# a comment\n"
        "deb [signed-by=/usr/share/keyrings/debian.gpg arch=amd64] http://m.example/debian "
        "bookworm main\n"
        "deb-src http://m.example/debian bookworm main\n"
        "deb http://m.example/debian-security bookworm-security main # trailing\n"
    )
    assert one_line_sources(text) == [
        ("http://m.example/debian", ["bookworm"]),
        ("http://m.example/debian-security", ["bookworm-security"]),
    ]


def test_deb822_sources_skip_disabled_and_source_only_stanzas():
    text = (
        "Types: deb\nURIs: http://m.example/debian\nSuites: bookworm bookworm-updates\n"
        "Components: main\n\n"
        "Types: deb-src\nURIs: http://src.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nEnabled: no\nURIs: http://off.example/debian\nSuites: bookworm\n\n"
        "Types: deb\nURIs: http://m.example/debian-security\nSuites: bookworm-security\n"
    )
    assert deb822_sources(text) == [
        ("http://m.example/debian", ["bookworm", "bookworm-updates"]),
        ("http://m.example/debian-security", ["bookworm-security"]),
    ]


def test_the_mirrors_are_those_serving_the_release_and_its_security_suite():
    sources = [
        ("https://deb.nodesource.com/node_20.x", ["nodistro"]),
        ("http://m.example/debian", ["bookworm", "bookworm-updates"]),
        ("http://m.example/debian-security", ["bookworm-security"]),
    ]
    assert debian_mirrors(sources, "bookworm") == (
        "http://m.example/debian",
        "http://m.example/debian-security",
    )


def test_images_build_refuses_an_image_trainjobs_does_not_build(capsys: pytest.CaptureFixture):
    assert main(["images", "build", "example.org/mine:1"]) == 2
    assert capsys.readouterr().err.startswith(
        "error: image 'example.org/mine:1' is not built by trainjobs (it builds: "
        "trainjobs/chainer:7.8.1, trainjobs/chainer:7.8.1-cuda12.2,"
    )


# -- the images built for real -------------------------------------------------------------------

ENGINES = available_engines()
EACH_CPU_IMAGE = [
    pytest.param(image, id=image.reference, marks=pytest.mark.needs_images(image.reference))
    for image in cpu_images()
]
# The Debian base and the kubectl stand-in are made before the first image is built.
FIRST_IMAGE = pytest.mark.needs_images(cpu_images()[0].reference)


def engine_text(*args: str) -> str:
    engine = ENGINES[0]
    return subprocess.run(
        [engine.executable, *args], capture_output=True, text=True, env=engine.env, check=True
    ).stdout


@pytest.mark.parametrize("image", EACH_CPU_IMAGE)
def test_the_cpu_images_are_built_from_their_current_recipe(image):
    engine = ENGINES[0]
    assert engine.image_exists(image.reference), "run `make container-images`"
    assert engine.image_label(image.reference, RECIPE_LABEL) == recipe_hash(image)


def _settings_values() -> list[str]:
    """Every location the saved build settings name that the public sources do not."""
    settings = saved_settings()
    values = [value for option in settings.pip.values() for value in option]
    values += [str(settings.ca_bundle)] if settings.ca_bundle else []
    public = ("http://deb.debian.org/debian", "http://deb.debian.org/debian-security")
    values += [m for m in (settings.debian_mirror, settings.debian_security_mirror) if m]
    return [value for value in values if value not in public] + ["/run/build/pip-"]


@pytest.mark.parametrize("image", EACH_CPU_IMAGE)
def test_no_build_setting_reaches_an_images_history_or_configuration(image):
    engine = ENGINES[0]
    recorded = "\n".join(engine.history(image.reference)) + engine.image_config(image.reference)

    assert [value for value in _settings_values() if value in recorded] == []
    assert json.loads(engine.image_config(image.reference))[0]["Config"]["Labels"][
        RECIPE_LABEL
    ] == recipe_hash(image)


@pytest.mark.needs_images(PYTORCH_CPU.reference)
def test_no_build_secret_or_pip_configuration_stays_in_an_image():
    leftovers = engine_text(
        "run",
        "--rm",
        "--entrypoint=python3",
        "trainjobs/pytorch:2.13.0-cpu",
        "-c",
        "import os, subprocess\n"
        "files = [os.path.join(d, f) for top in ('/run/secrets', '/run/build') "
        "for d, _, fs in os.walk(top) for f in fs]\n"
        "print(files, subprocess.run(['pip', 'config', 'list'], capture_output=True, "
        "text=True).stdout.strip() or 'no pip configuration')",
    )
    assert leftovers == "[] no pip configuration\n"


@FIRST_IMAGE
def test_the_kubectl_stand_in_image_carries_the_in_container_client():
    kubectl_stand_in.ensure(ENGINES[0], saved_settings(), print)
    inside = engine_text("run", "--rm", kubectl_stand_in.REFERENCE, "cat", "/bin/kubectl")
    assert inside == kubectl_stand_in.CLIENT.read_text()


@pytest.mark.needs_images("trainjobs/chainer:7.8.1")
def test_a_current_image_is_not_built_again(capsys: pytest.CaptureFixture):
    image = IMAGES["trainjobs/chainer:7.8.1"]

    assert main(["images", "build", image.reference]) == 0
    assert capsys.readouterr().out.splitlines()[-2:] == [
        f"[images] trainjobs/chainer:7.8.1: up to date (recipe {recipe_hash(image)[:12]})",
        "[images] done: 0 built, 1 up to date",
    ]
