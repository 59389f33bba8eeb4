"""libyaml's parser and PyYAML's pure-Python one read every spec the same way."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from trainjobs.core import safe_yaml

SPECS = sorted([*(REPO / "jobs").glob("*.yaml"), *(REPO / "tests" / "corpus").glob("*.yaml")])


def pure_python(text: str) -> list[object]:
    loader = safe_yaml._Loader(text)
    return safe_yaml._documents(loader)


def test_libyaml_is_used_here() -> None:
    assert safe_yaml._CParser is not None


@pytest.mark.parametrize("path", SPECS, ids=lambda path: path.name)
def test_both_parsers_give_the_same_documents_or_the_same_error(path) -> None:
    text = safe_yaml.decode(path.read_bytes())
    try:
        expected: object = pure_python(text)
    except Exception as error:  # the corpus holds files YAML itself refuses
        expected = (type(error), str(error))
    try:
        found: object = safe_yaml.load_all(text)
    except Exception as error:
        found = (type(error), str(error))
    assert found == expected


def test_a_limit_is_reported_at_the_same_line_by_both_parsers() -> None:
    text = "a: 1\nb: " + "[" * (safe_yaml.MAX_DEPTH + 5) + "]" * (safe_yaml.MAX_DEPTH + 5) + "\n"
    with pytest.raises(safe_yaml.LimitExceeded) as fast:
        safe_yaml.load_all(text)
    with pytest.raises(safe_yaml.LimitExceeded) as slow:
        pure_python(text)
    assert (
        str(fast.value)
        == str(slow.value)
        == (
            f"line 2: nested more than {safe_yaml.MAX_DEPTH} levels deep; a job spec needs far fewer"
        )
    )
