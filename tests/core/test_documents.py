"""Reading spec files: bounded in size, depth and alias expansion, UTF-8 only, duplicate keys
with different values refused; every failure one line naming the problem, exit 2."""

from __future__ import annotations

import time
import tracemalloc
from pathlib import Path

import pytest

from trainjobs.cli import main
from trainjobs.core import safe_yaml
from trainjobs.core.documents import load_file
from trainjobs.core.errors import SpecError

BILLION_LAUGHS = """\
apiVersion: kubeflow.org/v1alpha1
kind: ChainerJob
metadata: {name: demo}
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
spec: {master: {template: {spec: {containers: [{image: x, env: [{name: X, value: *i}]}]}}}}
"""


def problems_of(path: Path) -> list[str]:
    with pytest.raises(SpecError) as raised:
        load_file(path)
    return [str(problem) for problem in raised.value.problems]


def write(tmp_path: Path, content: str | bytes) -> Path:
    path = tmp_path / "job.yaml"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def test_a_billion_laughs_is_refused_before_it_expands(tmp_path, capsys):
    path = write(tmp_path, BILLION_LAUGHS)
    tracemalloc.start()
    started = time.monotonic()
    assert main(["validate", str(path)]) == 2
    elapsed = time.monotonic() - started
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert capsys.readouterr().err.splitlines() == [
        f"{path}: invalid job spec (1 problem(s))",
        "  line 9: this value holds more than 100000 values once its aliases are expanded; a "
        "job spec may hold at most that many",
    ]
    # Generous bounds: the expansion would need gigabytes and minutes.
    assert elapsed < 5 and peak < 50 * 1024 * 1024


def test_too_many_values_without_aliases_are_refused_too(tmp_path):
    # A document without aliases is measured only when it holds too many values.
    path = write(tmp_path, "spec:\n  args: [" + "0, " * 100_000 + "0]\n")
    assert problems_of(path) == [
        "line 2: this value holds more than 100000 values once its aliases are expanded; a "
        "job spec may hold at most that many"
    ]


def test_an_alias_that_contains_itself_is_refused(tmp_path):
    assert problems_of(write(tmp_path, "a: &a [1, *a]\n")) == [
        "line 1: an alias refers to a value that contains it, which would repeat forever"
    ]


def test_deep_nesting_is_refused_without_a_recursion_error(tmp_path):
    path = write(tmp_path, "a: " + "[" * 5000 + "]" * 5000 + "\n")
    assert problems_of(path) == [
        "line 1: nested more than 100 levels deep; a job spec needs far fewer"
    ]


def test_nesting_reached_through_aliases_counts_too(tmp_path):
    # Each line is one level deeper than the one before it; line 97 is the 101st level.
    levels = "".join(f"l{i}: &l{i} [*l{i - 1}]\n" for i in range(1, 97))
    path = write(tmp_path, "l0: &l0 [[[[1]]]]\n" + levels)
    assert problems_of(path) == [
        "line 97: nested more than 100 levels deep once its aliases are expanded; a job spec "
        "needs far fewer"
    ]


def test_latin1_text_is_refused_naming_the_byte_and_line(tmp_path):
    path = write(tmp_path, "metadata:\n  name: caf\xe9\n".encode("latin-1"))
    assert problems_of(path) == ["not UTF-8 text (byte 0xe9 on line 2); save the file as UTF-8"]


def test_binary_input_is_refused(tmp_path):
    assert problems_of(write(tmp_path, b"\x89PNG\r\n\x1a\n\x00\x00")) == [
        "not UTF-8 text (byte 0x89 on line 1); save the file as UTF-8"
    ]


def test_a_byte_order_mark_is_accepted(tmp_path):
    assert load_file(write(tmp_path, "\ufeffa: 1\n".encode())) == {"a": 1}


def test_a_file_over_the_api_servers_request_limit_is_refused_unread(tmp_path):
    path = write(tmp_path, b"#" * (safe_yaml.MAX_BYTES + 1))
    assert problems_of(path) == [
        "larger than 3145728 bytes, the most the Kubernetes API server accepts in one request; "
        "a job spec is far smaller"
    ]


def test_a_key_given_twice_with_different_values_is_refused(tmp_path):
    path = write(tmp_path, "spec:\n  image: a\n  image: b\n")
    assert problems_of(path) == [
        "not valid YAML: key 'image' is given twice with different values (first at line 2); "
        "keep one (line 3, column 3)"
    ]


def test_a_key_repeating_the_same_value_loses_nothing_and_is_accepted(tmp_path):
    path = write(tmp_path, "spec:\n  restartPolicy: OnFailure\n  restartPolicy: OnFailure\n")
    assert load_file(path) == {"spec": {"restartPolicy": "OnFailure"}}


def test_timestamps_stay_strings_as_the_api_server_reads_them(tmp_path):
    assert load_file(write(tmp_path, "value: 2024-01-01\n")) == {"value": "2024-01-01"}


def test_tags_for_types_json_lacks_are_refused(tmp_path):
    assert problems_of(write(tmp_path, "a: !!binary aGVsbG8=\n")) == [
        "not valid YAML: tag 'tag:yaml.org,2002:binary' is not allowed: a job spec holds only "
        "strings, numbers, booleans, null, lists and mappings (line 1, column 4)"
    ]


def test_a_yaml_error_is_one_line_with_its_place(tmp_path):
    assert problems_of(write(tmp_path, "a: [1\n")) == [
        "not valid YAML: while parsing a flow sequence (line 1, column 4): expected ',' or ']', "
        "but got '<stream end>' (line 2, column 1)"
    ]


def test_a_directory_is_refused_as_unreadable(tmp_path):
    assert problems_of(tmp_path) == ["cannot read file: Is a directory"]
