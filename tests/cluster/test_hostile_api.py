"""A hostile or broken API server cannot hang `status` or `watch`, make them read a huge
body, or make them print a traceback; a watch it closes at once is re-listed with back-off."""

from __future__ import annotations

import concurrent.futures
from typing import Any

import pytest

from tests.cluster.hostile import (
    Answer,
    Events,
    Huge,
    Json,
    Raw,
    Trickle,
    empty_list,
    hostile,
    job,
    job_list,
)
from trainjobs.cli import main as cli_main
from trainjobs.cluster.errors import ClusterAccessError, RetryPolicy
from trainjobs.cluster.watch import JobWatchTimeout, watch_job

SERVICES = "/api/v1/namespaces/default/services"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
JOBS = "/apis/batch/v1/namespaces/default/jobs"
TEST_LIMIT = 60
"""Seconds a command may take here before the test calls it hung (its own limits are far
lower: the point is that it returns, with the right message)."""


def in_time(argv: list[str]) -> int:
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        return pool.submit(cli_main, argv).result(timeout=TEST_LIMIT)
    finally:
        pool.shutdown(wait=False)


def job_server(watch: Answer, jobs: Answer | None = None) -> Any:
    """No training jobs, a Job train-master (running), its watch answered with ``watch``."""
    running = job(active=1)

    def answer(method: str, path: str, query: dict[str, str]) -> Answer:
        if path in (SERVICES, CONFIGMAPS):
            return Json(empty_list("List"))
        if path == f"{JOBS}/train-master":
            return Json(running)
        if path == JOBS and query.get("watch", "").lower() == "true":
            return watch
        if path == JOBS:
            return jobs if jobs is not None else Json(job_list(running))
        return Json({"kind": "Status", "code": 404, "message": "not found"}, status=404)

    return hostile(answer)


def test_status_against_a_trickling_server_ends_at_its_connect_timeout(tmp_path, capsys):
    with hostile(lambda *_: Trickle()) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(["status", "--kubeconfig", str(config), "--connect-timeout", "2s"])

    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"error: the Kubernetes API at {server.url} could not be reached for 2")
    assert "(last error: ResponseTooSlow: GET /api/v1/namespaces/default/services: the " in err
    assert "response did not end within 2s)" in err
    assert len(err.splitlines()) == 1


def test_status_against_a_server_trickling_its_headers_ends_at_its_connect_timeout(
    tmp_path, capsys
):
    with hostile(lambda *_: Trickle(headers=True)) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(["status", "--kubeconfig", str(config), "--connect-timeout", "2s"])

    err = capsys.readouterr().err
    assert code == 1
    assert (
        "(last error: ResponseTooSlow: no response from /api/v1/namespaces/default/services "
        "within 2s)" in err
    )
    assert len(err.splitlines()) == 1


def test_watch_against_a_trickling_watch_stream_ends_at_its_timeout(tmp_path, capsys):
    with job_server(Trickle(body=b'{"type": "MODIFIED", ' + b" " * 10_000)) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(
            [
                "watch",
                "train-master",
                "--kubeconfig",
                str(config),
                "--timeout",
                "3s",
                "--connect-timeout",
                "1s",
            ]
        )

    err = capsys.readouterr().err.splitlines()
    assert code == 1
    assert err[-1] == (
        "error: job default/train-master still running after 3s (Running: 1 active (0 ready), "
        "0 succeeded, 0 failed); workers left running; run `trainjobs watch train-master "
        "--namespace default` again to keep watching"
    )


def test_a_300_mb_body_is_not_read_whole(tmp_path, capsys):
    with hostile(lambda *_: Huge(300 * 1024 * 1024)) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(["status", "--kubeconfig", str(config)])

    assert code == 1
    assert capsys.readouterr().err == (
        "error: the Kubernetes API answered GET /api/v1/namespaces/default/services with more "
        "than 64 MiB; refusing to read it\n"
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (Raw(b"{not json"), "ValueError: Invalid value for `items`, must not be `None`"),
        (Json([1, 2]), "ValueError: Invalid value for `items`, must not be `None`"),
        (Json({"items": "x"}), "an object without metadata"),
    ],
    ids=["bad json", "a list", "items a string"],
)
def test_a_bad_list_answer_is_one_line_naming_the_request(tmp_path, capsys, body, problem):
    with hostile(lambda *_: body) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(["status", "--kubeconfig", str(config)])

    assert code == 1
    assert capsys.readouterr().err == (
        "error: the Kubernetes API answered the request to list services with an invalid "
        f"response ({problem}); check that the kubeconfig points at a Kubernetes API server\n"
    )


@pytest.mark.parametrize(
    ("watch", "jobs", "problem"),
    [
        (
            Events([]),
            Json(job_list(job(active="many"))),
            "ValueError: invalid literal for int() with base 10: 'many'",
        ),
        (
            Events([]),
            Json(job_list({"metadata": {"name": "train-master", "labels": ["a"]}})),
            "AttributeError: 'list' object has no attribute 'items'",
        ),
        (
            Events([]),
            Json(job_list(job(startTime="yesterday"))),
            "Failed to parse `yesterday` as datetime object",
        ),
        (
            Events([b"garbage"]),
            None,
            "an event that is not JSON: Expecting value: line 1 column 1 (char 0)",
        ),
        (
            Events([b'{"type": "EXPLODED", "object": {}}']),
            None,
            'an event without a known type: b\'{"type": "EXPLODED", "object": {}}\'',
        ),
        (
            Events([b'{"type": "MODIFIED", "object": 5}']),
            None,
            "a MODIFIED event whose object is int",
        ),
        (
            Events([b'{"type": "MODIFIED", "object": {"kind": "Job"}}']),
            None,
            "an object without metadata",
        ),
    ],
    ids=[
        "count a string",
        "labels a list",
        "bad date",
        "not json",
        "unknown type",
        "object an int",
        "no metadata",
    ],
)
def test_a_bad_job_or_watch_event_is_one_line_naming_the_request(
    tmp_path, capsys, watch, jobs, problem
):
    with job_server(watch, jobs) as server:
        config = server.write_kubeconfig(tmp_path / "config")
        code = in_time(["watch", "train-master", "--kubeconfig", str(config), "--timeout", "20s"])

    err = capsys.readouterr().err
    assert code == 1
    assert "Traceback" not in err
    what = (
        "list Jobs in namespace default (metadata.name=train-master)"
        if jobs is not None
        else "watch Job default/train-master"
    )
    assert err.splitlines()[-1] == (
        f"error: the Kubernetes API answered the request to {what} with an invalid response "
        f"({problem}); check that the kubeconfig points at a Kubernetes API server"
    )


class FakeTime:
    """A clock that only the watcher's own sleeps move."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(round(seconds, 3))
        self.now += seconds


def test_a_watch_the_server_closes_at_once_is_relisted_with_back_off(tmp_path):
    watches = {"n": 0}
    running = job(active=1)

    def answer(method: str, path: str, query: dict[str, str]) -> Answer:
        if query.get("watch", "").lower() == "true":
            watches["n"] += 1
            if watches["n"] > 200:  # without back-off the watcher would spin: stop it
                return Json({"kind": "Status", "code": 403, "message": "enough"}, status=403)
            return Events([])
        return Json(job_list(running))

    fake = FakeTime()
    policy = RetryPolicy(initial_backoff=0.5, max_backoff=8.0)
    with hostile(answer) as server:
        from kubernetes import client

        api = client.ApiClient(client.Configuration(host=server.url))
        with pytest.raises(JobWatchTimeout):
            watch_job(
                api,
                "default",
                "train-master",
                timeout_seconds=60,
                retry=policy,
                clock=fake.clock,
                sleep=fake.sleep,
                progress_interval=3600,
            )
        lists = server.count("GET", JOBS)

    # 0.5 s doubling to the 8 s cap until the 60 s deadline: 11 lists, not thousands.
    assert fake.sleeps == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0, 8.0, 8.0, 8.0, 4.5]
    assert lists == 11


def test_an_access_error_stays_an_access_error(tmp_path):
    def answer(method: str, path: str, query: dict[str, str]) -> Answer:
        return Json({"kind": "Status", "code": 403, "message": "no"}, status=403)

    with hostile(answer) as server:
        from kubernetes import client

        api = client.ApiClient(client.Configuration(host=server.url))
        with pytest.raises(ClusterAccessError) as refused:
            watch_job(api, "default", "train-master", timeout_seconds=5)

    assert str(refused.value) == (
        "the Kubernetes API refused to watch Job default/train-master (HTTP 403 Forbidden); "
        "the kubeconfig's identity needs, in namespace default: get/list/watch and patch on "
        "jobs, list and delete on pods, get on pods/log, patch on statefulsets/scale, list, "
        "get and patch on services and configmaps"
    )


@pytest.mark.parametrize("command", ["watch", "status"])
def test_a_namespace_that_would_change_the_request_path_is_refused(command, capsys):
    with pytest.raises(SystemExit) as exited:
        cli_main(
            [command, "x", "--namespace", "../../api/v1/secrets"]
            if command == "watch"
            else [command, "--namespace", "../../api/v1/secrets"]
        )
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"trainjobs {command}: error: argument -n/--namespace: Invalid value: "
        '"../../api/v1/secrets": a lowercase RFC 1123 label must consist of lower case '
        "alphanumeric characters or '-', and must start and end with an alphanumeric character "
        "(e.g. 'my-name',  or '123-abc', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
    )
