"""The `JobCompletion` dynamic resource: its provider called as the Pulumi engine calls it
(plain dict inputs), against the local Kubernetes API fake; its settings; its pickling."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pulumi
import pytest
from pulumi.dynamic.dynamic import serialize_provider
from pulumi.runtime import mocks, rpc, settings

from components.cluster.scaling import WorkerRef
from components.cluster.watch import JobWatchTimeout
from components.core.errors import UserError
from components.deploy.completion import (
    JobCompletion,
    JobCompletionArgs,
    JobCompletionProvider,
    JobFailedError,
    WatchSettings,
)
from tests.conftest import REPO
from tests.kubefake import FakeKube, running_fake, terminated

NS = "default"
JOB = "train-master"
STS = "train-workerset-worker"


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    yield from running_fake()


@pytest.fixture
def props(kube: FakeKube, tmp_path: Path) -> dict[str, Any]:
    """Inputs as the engine sends them to `create`: checked, plain values, the kubeconfig's
    content unwrapped from its secret, the serialized provider alongside."""
    return {
        "namespace": NS,
        "job_name": JOB,
        "job_uid": None,
        "template_hash": None,
        "workers": [{"kind": "StatefulSet", "name": STS}],
        "context": None,
        "timeout_seconds": 10,
        "fail_on_failure": True,
        "kubeconfig": kube.write_kubeconfig(tmp_path / "config").read_text(),
        "selector": None,
        "__provider": "serialized-provider",
    }


@pytest.fixture
def provider() -> JobCompletionProvider:
    return JobCompletionProvider()


def inputs_of(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k != "__provider"}


# --- check and diff: offline -----------------------------------------------------------------


def test_check_fills_in_defaults_and_drops_everything_else(provider: JobCompletionProvider):
    news = {"namespace": NS, "job_name": JOB, "phase": None, "__provider": "x"}

    result = provider.check({}, news)

    assert result.failures == []
    assert result.inputs == {
        "namespace": NS,
        "job_name": JOB,
        "job_uid": None,
        "template_hash": None,
        "workers": [],
        "context": None,
        "timeout_seconds": 86400,
        "fail_on_failure": True,
        "kubeconfig": None,
        "selector": None,
    }


def test_check_reports_every_invalid_input(provider: JobCompletionProvider) -> None:
    news = {
        "namespace": "",
        "job_name": JOB,
        "workers": [{"kind": "Deployment", "name": "w"}, {"kind": "Job", "name": ""}],
        "timeout_seconds": -5,
        "fail_on_failure": "yes",
        "job_uid": 7,
    }

    failures = provider.check({}, news).failures

    assert [(f.property, f.reason) for f in failures] == [
        ("namespace", "must be a non-empty string, not ''"),
        ("job_uid", "must be a string, not int"),
        ("workers[0].kind", "must be StatefulSet or Job, not 'Deployment'"),
        ("workers[1].name", "must be a non-empty string, not ''"),
        ("timeout_seconds", "must be a positive number of seconds, not -5"),
        ("fail_on_failure", "must be true or false"),
    ]


def test_check_refuses_a_selector_that_is_not_a_string(provider: JobCompletionProvider):
    failures = provider.check({}, {"namespace": NS, "job_name": JOB, "selector": ["a=b"]}).failures

    assert [(f.property, f.reason) for f in failures] == [
        ("selector", "must be a string, not list")
    ]


def test_check_accepts_values_unknown_during_preview(provider: JobCompletionProvider) -> None:
    news = {
        "namespace": NS,
        "job_name": rpc.UNKNOWN,
        "job_uid": rpc.UNKNOWN,
        "workers": rpc.UNKNOWN,
    }

    assert provider.check({}, news).failures == []


@pytest.mark.parametrize(
    ("change", "replaces"),
    [
        ({"job_uid": "uid-2"}, ["job_uid"]),
        ({"job_uid": rpc.UNKNOWN}, ["job_uid"]),
        ({"job_name": "other-master"}, ["job_name"]),
        ({"template_hash": "b"}, ["template_hash"]),
        ({"workers": [{"kind": "StatefulSet", "name": "other"}]}, ["workers"]),
        ({"namespace": "team-a"}, ["namespace"]),
        ({"context": "prod"}, ["context"]),
    ],
)
def test_diff_replaces_the_watcher_for_another_run(
    provider: JobCompletionProvider, change: dict[str, Any], replaces: list[str]
) -> None:
    olds = {"namespace": NS, "job_name": JOB, "job_uid": "uid-1", "template_hash": "a"}

    result = provider.diff("id", olds, {**olds, **change})

    assert (result.changes, result.replaces, result.delete_before_replace) == (
        True,
        replaces,
        False,
    )


@pytest.mark.parametrize(
    "change",
    [
        {"timeout_seconds": 60},
        {"fail_on_failure": False},
        {"kubeconfig": "new"},
        {"selector": "training.kubeflow.org/job-name=tf"},
    ],
)
def test_diff_updates_in_place_for_watch_settings(
    provider: JobCompletionProvider, change: dict[str, Any]
) -> None:
    olds = {"namespace": NS, "job_name": JOB}

    result = provider.diff("id", olds, {**olds, **change})

    assert (result.changes, result.replaces) == (True, [])


def test_diff_ignores_outputs_and_the_serialized_provider(provider: JobCompletionProvider):
    olds = {"namespace": NS, "job_name": JOB, "phase": "Succeeded", "__provider": "old-code"}
    news = {"namespace": NS, "job_name": JOB, "__provider": "new-code"}

    result = provider.diff("id", olds, news)

    assert (result.changes, result.replaces) == (False, [])


def test_check_and_diff_never_contact_the_cluster(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    provider.check({}, props)
    provider.diff("id", props, {**props, "job_uid": "x"})

    assert kube.requests == []


# --- create ----------------------------------------------------------------------------------


def test_create_records_the_outcome_when_the_job_succeeds(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    uid = kube.add_job(JOB)["metadata"]["uid"]
    kube.add_statefulset(STS)
    kube.complete_job(JOB)
    kube.set_job_status(
        JOB, startTime="2025-01-01T10:00:00Z", completionTime="2025-01-01T10:05:02Z"
    )

    result = provider.create(props)

    assert result.id == f"default/train-master@{uid}"
    assert result.outs is not None
    outputs = {k: v for k, v in result.outs.items() if k not in props}
    assert outputs == {
        "phase": "Succeeded",
        "reason": "CompletionsReached",
        "message": "Reached expected number of succeeded pods",
        "start_time": "2025-01-01T10:00:00Z",
        "completion_time": "2025-01-01T10:05:02Z",
        "duration_seconds": 302.0,
        "succeeded": 1,
        "failed": 0,
        "workers_scaled_down": True,
        "diagnosis": None,
    }
    assert {k: result.outs[k] for k in inputs_of(props)} == inputs_of(props)
    assert kube.replicas(STS) == 0


def test_create_fails_the_update_with_exit_code_and_log_when_the_job_fails(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.add_pod("train-master-q8z", job_name=JOB, containers=[terminated("chainer", 1)])
    kube.set_log("train-master-q8z", "chainer", "ValueError: bad batch size\n")
    kube.fail_job(JOB)

    with pytest.raises(JobFailedError) as raised:
        provider.create(props)

    assert str(raised.value).splitlines()[1:] == [
        f"workers scaled to 0: StatefulSet/{STS}",
        "failed pods:",
        "  train-master-q8z (Failed): container chainer exited with code 1 (Error)",
        "last 1 log line(s) of train-master-q8z/chainer:",
        "  | ValueError: bad batch size",
    ]
    assert kube.replicas(STS) == 0


def test_create_records_a_failed_job_when_fail_on_failure_is_off(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.add_pod("train-master-q8z", job_name=JOB, containers=[terminated("chainer", 1)])
    kube.fail_job(JOB, reason="DeadlineExceeded", message="deadline")

    result = provider.create({**props, "fail_on_failure": False})

    assert result.outs is not None
    assert (result.outs["phase"], result.outs["reason"], result.outs["failed"]) == (
        "Failed",
        "DeadlineExceeded",
        1,
    )
    assert [p["pod"] for p in result.outs["diagnosis"]["failed_pods"]] == ["train-master-q8z"]
    assert result.outs["workers_scaled_down"] is True


def test_create_fails_when_the_workers_cannot_be_scaled_down(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.complete_job(JOB)
    kube.fail_next(403, method="PATCH")

    with pytest.raises(JobFailedError) as raised:
        provider.create(props)

    assert str(raised.value).splitlines()[1:] == [
        f"workers NOT scaled to 0: StatefulSet/{STS} (HTTP 403 Forbidden)",
        "run `pulumi up` again to retry",
    ]


def test_create_times_out_leaving_workers_running(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.start_job(JOB)

    with pytest.raises(JobWatchTimeout) as raised:
        provider.create({**props, "timeout_seconds": 0.3})

    assert str(raised.value) == (
        "job default/train-master still running after 0.3s (Running: 1 active (1 ready), 0 succeeded, "
        "0 failed); workers left running; run `pulumi up` again to keep watching"
    )
    assert kube.replicas(STS) == 2


def test_a_second_create_resumes_and_sees_the_job_that_finished_meanwhile(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)
    kube.start_job(JOB)
    with pytest.raises(JobWatchTimeout):
        provider.create({**props, "timeout_seconds": 0.2})
    kube.complete_job(JOB)  # between the two `pulumi up`s

    result = provider.create(props)

    assert result.outs is not None
    assert (result.outs["phase"], kube.replicas(STS)) == ("Succeeded", 0)


def test_create_watches_only_the_job_with_the_given_uid(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.complete_job(JOB)

    with pytest.raises(JobFailedError) as raised:
        provider.create({**props, "job_uid": "uid-of-an-older-run", "workers": []})

    assert str(raised.value).startswith("job default/train-master Deleted (Deleted: Job ")


def test_create_fails_the_update_when_a_worker_job_fails_and_stops_the_chief(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    labels = {"training.kubeflow.org/job-name": "tf"}
    kube.add_job("tf-chief", labels=labels)
    kube.start_job("tf-chief")
    kube.add_job("tf-worker", parallelism=2, completion_mode="Indexed", labels=labels)
    kube.add_pod("tf-worker-1-ab", job_name="tf-worker", containers=[terminated("tensorflow", 3)])
    kube.fail_job("tf-worker", reason="PodFailurePolicy", message="exit code 3")
    tf_props = {
        **props,
        "job_name": "tf-chief",
        "workers": [{"kind": "Job", "name": "tf-worker", "replicas": 2}],
        "selector": "training.kubeflow.org/job-name=tf",
    }

    with pytest.raises(JobFailedError) as raised:
        provider.create(tf_props)

    assert (
        str(raised.value)
        .splitlines()[0]
        .startswith(
            "job default/tf-chief Failed (WorkerFailed: worker Job default/tf-worker failed "
            "(PodFailurePolicy: exit code 3)) after "
        )
    )
    assert str(raised.value).splitlines()[1:3] == [
        "workers scaled to 0: Job/tf-worker, Job/tf-chief",
        "failed pods:",
    ]
    assert kube.get("jobs", "tf-chief")["spec"]["parallelism"] == 0


# --- read, update, delete --------------------------------------------------------------------


def stored_state(props: dict[str, Any], **outputs: Any) -> dict[str, Any]:
    """Outputs as a previous `create` left them in the state."""
    recorded = {
        "phase": "Succeeded",
        "reason": "CompletionsReached",
        "message": None,
        "start_time": None,
        "completion_time": None,
        "duration_seconds": None,
        "succeeded": 0,
        "failed": 0,
        "workers_scaled_down": True,
        "diagnosis": None,
    }
    return {**props, **recorded, **outputs}


def test_read_refreshes_the_job_status_from_the_cluster(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.start_job(JOB)
    kube.complete_job(JOB, succeeded=3)

    result = provider.read("default/train-master", stored_state(props))

    assert result.id == "default/train-master"
    assert result.outs is not None
    assert (result.outs["phase"], result.outs["succeeded"], result.outs["message"]) == (
        "Succeeded",
        3,
        "Reached expected number of succeeded pods",
    )
    assert result.outs["workers_scaled_down"] is True


def test_read_keeps_the_recorded_outcome_when_the_job_is_gone(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    state = stored_state(props, succeeded=2, start_time="2025-01-01T00:00:00Z")

    result = provider.read("default/train-master", state)

    assert result.outs == inputs_of(state)


def test_read_keeps_a_worker_failure_and_does_not_read_the_stopped_chief(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)  # stopped by the watcher: no pods, no condition
    state = stored_state(props, phase="Failed", reason="WorkerFailed", message="worker Job ...")

    result = provider.read("default/train-master", state)

    assert result.outs == inputs_of(state)
    assert kube.requests == []


def test_update_keeps_the_outcome_and_does_not_contact_the_cluster(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    olds = stored_state(props, succeeded=2)

    result = provider.update("id", olds, {**props, "timeout_seconds": 60})

    assert result.outs == {**inputs_of(olds), "timeout_seconds": 60}
    assert kube.requests == []


def test_delete_leaves_the_job_and_the_workers_alone(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    kube.add_job(JOB)
    kube.add_statefulset(STS)

    provider.delete("default/train-master", stored_state(props))

    assert kube.requests == []
    assert kube.replicas(STS) == 2


# --- pickling, as the Pulumi engine does it --------------------------------------------------

UNPICKLE_AND_CALL = """
import base64, json, sys
import dill
provider = dill.loads(base64.b64decode(sys.stdin.read()))
check = provider.check({}, {"namespace": "default", "job_name": "m", "timeout_seconds": 0})
diff = provider.diff("id", {"namespace": "default", "job_name": "m"},
                     {"namespace": "default", "job_name": "n"})
print(json.dumps({
    "class": f"{type(provider).__module__}.{type(provider).__qualname__}",
    "failures": [[f.property, f.reason] for f in check.failures],
    "replaces": diff.replaces,
}))
"""


def test_provider_unpickles_and_works_in_a_fresh_process_elsewhere(tmp_path: Path) -> None:
    serialized = serialize_provider(JobCompletionProvider())
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    done = subprocess.run(
        [sys.executable, "-c", UNPICKLE_AND_CALL],
        input=serialized,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )

    assert json.loads(done.stdout) == {
        "class": "components.deploy.completion.JobCompletionProvider",
        "failures": [["timeout_seconds", "must be a positive number of seconds, not 0"]],
        "replaces": ["job_name"],
    }


def test_provider_is_pickled_by_reference_not_by_value() -> None:
    pickled = base64.b64decode(serialize_provider(JobCompletionProvider()))

    assert b"components.deploy.completion" in pickled
    assert len(pickled) < 200  # a class reference, no captured code or clients


# --- the resource and its settings, under Pulumi's mock runtime -------------------------------


class _Mocks(pulumi.runtime.Mocks):
    def new_resource(self, args: pulumi.runtime.MockResourceArgs) -> tuple[str, dict]:
        return f"{args.name}-id", args.inputs

    def call(self, args: pulumi.runtime.MockCallArgs) -> tuple[dict, list[tuple[str, str]]]:
        return {}, []


class _RecordingMonitor(mocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(_Mocks())
        self.requests: list[Any] = []

    def RegisterResource(self, request: Any) -> Any:
        if request.type != "pulumi:pulumi:Stack":
            self.requests.append(request)
        return super().RegisterResource(request)


@pytest.fixture
def monitor() -> Iterator[_RecordingMonitor]:
    recording = _RecordingMonitor()
    settings.ROOT.set(None)
    pulumi.runtime.set_mocks(recording.mocks, preview=False, monitor=recording)
    yield recording
    pulumi.runtime.set_all_config({}, [])


def test_job_completion_registers_its_inputs_and_outputs_with_a_secret_kubeconfig(
    monitor: _RecordingMonitor,
) -> None:
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def register() -> pulumi.Output[Any]:
        args = JobCompletionArgs(
            namespace=NS,
            job_name=JOB,
            workers=[WorkerRef("StatefulSet", STS)],
            job_uid="uid-1",
            kubeconfig="apiVersion: v1\nkind: Config\n",
        )
        completion = JobCompletion("train-completion", args)
        kubeconfig = completion.kubeconfig  # type: ignore[attr-defined]
        return pulumi.Output.all(completion.phase, kubeconfig.is_secret()).apply(
            lambda values: seen.update(phase=values[0], kubeconfig_secret=values[1])
        )

    register()

    (request,) = monitor.requests
    inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
    assert request.type == "pulumi-python:dynamic/trainjobs:JobCompletion"
    assert list(request.additionalSecretOutputs) == ["kubeconfig"]
    assert rpc.is_rpc_secret(inputs["kubeconfig"])
    assert {k: inputs[k] for k in ("namespace", "job_name", "job_uid", "workers")} == {
        "namespace": NS,
        "job_name": JOB,
        "job_uid": "uid-1",
        "workers": [{"kind": "StatefulSet", "name": STS}],
    }
    assert seen == {"phase": None, "kubeconfig_secret": True}


def test_job_completion_registers_its_selector(monitor: _RecordingMonitor) -> None:
    @pulumi.runtime.test
    def register() -> pulumi.Output[Any]:
        args = JobCompletionArgs(namespace=NS, job_name=JOB, selector="a=b")
        return JobCompletion("train-completion", args).urn

    register()

    (request,) = monitor.requests
    assert rpc.deserialize_properties(request.object)["selector"] == "a=b"


def settings_from(config: dict[str, str], secret_keys: list[str] | None = None) -> WatchSettings:
    pulumi.runtime.set_all_config(config, secret_keys or [])
    return WatchSettings.from_config(pulumi.Config("trainjobs"), pulumi.Config("kubernetes"))


def test_watch_settings_default_to_watching_for_24h_and_failing_on_failure(
    monitor: _RecordingMonitor,
) -> None:
    watch_settings = settings_from({})

    assert watch_settings == WatchSettings(
        watch=True, timeout_seconds=86400, fail_on_failure=True, kubeconfig=None, context=None
    )


def test_watch_settings_read_the_stack_config(monitor: _RecordingMonitor) -> None:
    watch_settings = settings_from(
        {
            "trainjobs:watch": "false",
            "trainjobs:watchTimeout": "90m",
            "trainjobs:failOnJobFailure": "false",
            "kubernetes:context": "gpu-cluster",
        }
    )

    assert (
        watch_settings.watch,
        watch_settings.timeout_seconds,
        watch_settings.fail_on_failure,
        watch_settings.context,
    ) == (False, 5400, False, "gpu-cluster")


def test_watch_settings_keep_the_kubeconfig_secret(monitor: _RecordingMonitor) -> None:
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def read() -> pulumi.Output[Any]:
        kubeconfig = settings_from({"kubernetes:kubeconfig": "apiVersion: v1\n"}).kubeconfig
        assert kubeconfig is not None
        return pulumi.Output.all(kubeconfig, kubeconfig.is_secret()).apply(
            lambda values: seen.update(value=values[0], secret=values[1])
        )

    read()

    assert seen == {"value": "apiVersion: v1\n", "secret": True}


def test_invalid_watch_timeout_names_key_value_and_fix(monitor: _RecordingMonitor) -> None:
    with pytest.raises(UserError) as raised:
        settings_from({"trainjobs:watchTimeout": "a day"})

    assert str(raised.value) == (
        "trainjobs:watchTimeout: 'a day' is not a positive duration; use seconds (3600) or a "
        "duration such as 24h, 90m, 30s or 1h30m, e.g. `pulumi config set "
        "trainjobs:watchTimeout 24h`"
    )


def test_invalid_watch_flag_names_key_value_and_fix(monitor: _RecordingMonitor) -> None:
    with pytest.raises(UserError) as raised:
        settings_from({"trainjobs:failOnJobFailure": "maybe"})

    assert str(raised.value) == (
        "trainjobs:failOnJobFailure: 'maybe' is not a boolean; use true or false, "
        "e.g. `pulumi config set trainjobs:failOnJobFailure true`"
    )
