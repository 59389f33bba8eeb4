"""A feature whose extra is missing stops with one line naming how to install it."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import REPO
from trainjobs.core import extras
from trainjobs.core.extras import EXTRAS, MissingExtra, import_extra


def test_in_a_checkout_a_missing_extra_names_its_make_target(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pulumi_aws", None)  # None: import raises as if absent
    with pytest.raises(MissingExtra) as raised:
        import_extra("pulumi_aws", "a GPU node pool")
    assert str(raised.value) == (
        "a GPU node pool needs pulumi-aws, which is not installed: run `make setup-aws`"
    )
    assert raised.value.exit_code == 2


def test_a_missing_submodule_of_an_extra_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # None in sys.modules: importing the name fails as if it were not installed (the module
    # and its submodule, which an earlier test in this process may have imported).
    monkeypatch.setitem(sys.modules, "botocore", None)
    monkeypatch.setitem(sys.modules, "botocore.exceptions", None)
    with pytest.raises(MissingExtra) as raised:
        import_extra("botocore.exceptions", "`trainjobs preflight`")
    assert str(raised.value) == (
        "`trainjobs preflight` needs boto3, which is not installed: run `make setup-aws`"
    )


def test_an_installed_extra_is_the_module_itself() -> None:
    import pulumi_docker_build

    assert import_extra("pulumi_docker_build", "a CUDA image") is pulumi_docker_build


def test_every_extra_has_a_make_target_a_requirements_file_and_a_pip_extra() -> None:
    assert EXTRAS == {
        "pulumi_aws": ("pulumi-aws", "aws"),
        "boto3": ("boto3", "aws"),
        "botocore": ("boto3", "aws"),
        "pulumi_docker_build": ("pulumi-docker-build", "images"),
    }
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    makefile = (REPO / "Makefile").read_text()
    for distribution, extra in EXTRAS.values():
        assert [pin for pin in extras[extra] if pin.startswith(f"{distribution}>=")] != []
        assert f"\nsetup-{extra}: " in makefile
        pins = (REPO / f"requirements-{extra}.txt").read_text().splitlines()
        assert [line for line in pins if line.startswith(f"{distribution}==")] != []


def test_installed_from_a_wheel_a_missing_extra_names_the_pip_extra_alone(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No Makefile beside an installed package: `make setup-aws` is no fix there.
    monkeypatch.setattr(extras, "source_checkout", lambda: None)
    monkeypatch.setitem(sys.modules, "pulumi_aws", None)
    with pytest.raises(MissingExtra) as raised:
        import_extra("pulumi_aws", "a GPU node pool")
    assert str(raised.value) == (
        "a GPU node pool needs pulumi-aws, which is not installed: run "
        "`pip install 'trainjobs[aws]'`"
    )


def test_the_checkout_is_found_from_the_package_and_not_from_an_installed_copy(tmp_path):
    assert extras.source_checkout() == REPO
    installed = tmp_path / "site-packages" / "trainjobs" / "core"
    installed.mkdir(parents=True)
    copy = installed / "extras.py"
    copy.write_text(Path(extras.__file__).read_text())
    namespace: dict[str, object] = {"__file__": str(copy), "__name__": "installed_extras"}
    exec(compile(copy.read_text(), str(copy), "exec"), namespace)
    assert namespace["source_checkout"]() is None  # type: ignore[operator]
