"""A pod template's schema check runs once per content, however many replicas or jobs share it,
and once per content across commands, through the user's answer cache."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from trainjobs.core import answer_cache, pod_schema
from trainjobs.core.errors import Problem


def template(image: Any) -> dict[str, Any]:
    return {"spec": {"containers": [{"name": "main", "image": image, "colour": "red"}]}}


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[Any]:
    """Every template the schema itself is asked about, from empty caches (in memory and on
    disk, at ``tmp_path / "cache"``)."""
    monkeypatch.setenv("TRAINJOBS_CACHE_DIR", str(tmp_path / "cache"))
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


def a_new_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a later command starts with: nothing in memory, the disk cache as it was."""
    monkeypatch.setattr(pod_schema, "_CHECKED", {})


def test_a_later_command_takes_the_answer_from_the_cache(checks, monkeypatch, tmp_path):
    first = check(template(["img"]), "spec.master.template")
    a_new_command(monkeypatch)
    cached = template(["img"])
    again = check(cached, "spec.master.template")
    assert checks == [template(["img"])]
    assert again == first
    assert again[0] == [
        Problem(
            "spec.master.template.spec.containers[0].image",
            "Invalid value: a list: must be a string",
        )
    ]
    # The cached answer still removes the unknown field, as the schema's own answer does.
    assert cached == {"spec": {"containers": [{"name": "main", "image": ["img"]}]}}
    (entry,) = (tmp_path / "cache" / "pod-schema").iterdir()
    assert oct(entry.stat().st_mode & 0o777) == "0o600"
    assert oct((tmp_path / "cache" / "pod-schema").stat().st_mode & 0o777) == "0o700"


def test_new_code_does_not_read_an_older_answer(checks, monkeypatch):
    check(template("a:1"), "t")
    a_new_command(monkeypatch)
    monkeypatch.setattr(pod_schema, "_code_salt", lambda: "another version of the checker")
    check(template("a:1"), "t")
    assert checks == [template("a:1"), template("a:1")]


def test_an_answer_that_is_not_well_formed_is_not_used(checks, monkeypatch, tmp_path):
    check(template("a:1"), "t")
    (entry,) = (tmp_path / "cache" / "pod-schema").iterdir()
    entry.write_text(json.dumps({"problems": "none"}), encoding="utf-8")
    a_new_command(monkeypatch)
    assert check(template(["img"]), "t")[0] != []
    a_new_command(monkeypatch)
    assert check(template("a:1"), "t")[0] == []
    assert checks == [template("a:1"), template(["img"]), template("a:1")]


def test_an_answer_planted_in_a_cache_others_can_write_is_never_read(checks, monkeypatch, tmp_path):
    # Someone else plants "no problems" for a template that has one.
    check(template("a:1"), "t")
    (entry,) = (tmp_path / "cache" / "pod-schema").iterdir()
    a_new_command(monkeypatch)
    monkeypatch.setattr(
        pod_schema, "_content", lambda value: json.dumps(template("a:1"), sort_keys=True)
    )
    (tmp_path / "cache").chmod(0o777)
    problems, _ = check(template(["img"]), "t")
    assert problems == [
        Problem("t.spec.containers[0].image", "Invalid value: a list: must be a string")
    ]
    assert len(checks) == 2
    assert [entry] == list((tmp_path / "cache" / "pod-schema").iterdir())


def test_an_answer_in_a_cache_another_user_owns_is_never_read(checks, monkeypatch, tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to give the cache directory to another user")
    check(template("a:1"), "t")
    a_new_command(monkeypatch)
    monkeypatch.setattr(
        pod_schema, "_content", lambda value: json.dumps(template("a:1"), sort_keys=True)
    )
    os.chown(tmp_path / "cache" / "pod-schema", 4242, 4242)
    problems, _ = check(template(["img"]), "t")
    assert problems == [
        Problem("t.spec.containers[0].image", "Invalid value: a list: must be a string")
    ]
    assert len(checks) == 2


def test_the_cache_is_bounded(checks, monkeypatch, tmp_path):
    monkeypatch.setattr(answer_cache, "MAX_ANSWERS", 2)
    for image in ("a:1", "b:1", "c:1"):
        check(template(image), "t")
    # The third answer started the kind afresh: only it is kept.
    assert len(list((tmp_path / "cache" / "pod-schema").iterdir())) == 1
    a_new_command(monkeypatch)
    check(template("c:1"), "t")
    check(template("a:1"), "t")
    assert checks == [template("a:1"), template("b:1"), template("c:1"), template("a:1")]
