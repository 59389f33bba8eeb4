"""A pod template's schema check runs once per content, however many replicas or jobs share it."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from trainjobs.core import pod_schema
from trainjobs.core.errors import Problem


def template(image: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": image, "colour": "red"}]}}


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Every template the schema itself is asked about, from an empty cache."""
    monkeypatch.setattr(pod_schema, "_CHECKED", {})
    asked: list[Any] = []
    original = pod_schema._type_problems

    def counted(value: Any) -> Any:
        asked.append(copy.deepcopy(value))  # as asked: the check then drops unknown fields
        return original(value)

    monkeypatch.setattr(pod_schema, "_type_problems", counted)
    return asked


def check(value: Any, path: str) -> tuple[list[Problem], list[Problem]]:
    problems: list[Problem] = []
    warnings: list[Problem] = []
    pod_schema.check_template_types(value, path, problems, warnings)
    return problems, warnings


def test_the_same_content_is_checked_once_and_reported_at_each_path(checks: list[Any]) -> None:
    first = check(template(["img"]), "spec.master.template")
    second = check(template(["img"]), "spec.worker.template")
    version = pod_schema.kubernetes_version()
    unknown = (
        f"not a field of a Kubernetes {version} pod template: the API server drops it, so it "
        "has no effect"
    )
    assert first == (
        [
            Problem(
                "spec.master.template.spec.containers[0].image",
                "Invalid value: a list: must be a string",
            )
        ],
        [Problem("spec.master.template.spec.containers[0].colour", unknown)],
    )
    assert second == (
        [
            Problem(
                "spec.worker.template.spec.containers[0].image",
                "Invalid value: a list: must be a string",
            )
        ],
        [Problem("spec.worker.template.spec.containers[0].colour", unknown)],
    )
    assert checks == [template(["img"])]


def test_a_cached_answer_still_drops_the_unknown_field(checks: list[Any]) -> None:
    first, second = template("a:1"), template("a:1")
    check(first, "spec.master.template")
    check(second, "spec.worker.template")
    assert len(checks) == 1
    assert first == second == {"spec": {"containers": [{"name": "main", "image": "a:1"}]}}


def test_different_content_is_checked_again(checks: list[Any]) -> None:
    check(template("a:1"), "t")
    check(template("b:1"), "t")
    check(template("a:1"), "t")
    assert checks == [template("a:1"), template("b:1")]


def test_values_json_would_merge_are_told_apart(checks: list[Any]) -> None:
    def grace(value: Any) -> dict[str, Any]:
        return {
            "spec": {"containers": [{"name": "m", "image": "i"}], "activeDeadlineSeconds": value}
        }

    assert check(grace(True), "t")[0] == [
        Problem("t.spec.activeDeadlineSeconds", "Invalid value: true: must be a whole number")
    ]
    assert check(grace(1), "t")[0] == []
    assert len(checks) == 2


def test_a_template_with_keys_that_are_not_strings_is_checked_every_time(checks: list[Any]) -> None:
    def odd() -> dict[Any, Any]:
        return {"spec": {"containers": [{"name": "main", "image": "img"}]}, True: 1}

    assert check(odd(), "t")[1] == check(odd(), "t")[1]
    assert check(odd(), "t")[1][0].path == "t.True"
    assert len(checks) == 3
