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

from tests.conftest import REPO
from tests.kubefake import FakeKube, running_fake, terminated
from trainjobs.cluster.record import RECORD_ANNOTATION
from trainjobs.cluster.rules import CompletionRules
from trainjobs.cluster.scaling import WorkerRef
from trainjobs.cluster.target import WatchTarget
from trainjobs.core.errors import UserError
from trainjobs.deploy.completion import (
    JobCompletion,
    JobCompletionProvider,
    JobFailedError,
    WatchedJob,
    WatchSettings,
)

NS = "default"
JOB = "train-master"
STS = "train-worker"
ANCHOR = "train-assets"


def target(name: str = "train", *, run: str = "run-1", **changes: Any) -> WatchTarget:
    """A ChainerJob-shaped job: a master Job, a worker StatefulSet of 2, an anchor ConfigMap."""
    fields: dict[str, Any] = {
        "namespace": NS,
        "name": name,
        "kind": "ChainerJob",
        "rules": CompletionRules(f"{name}-master"),
        "workers": (WorkerRef("StatefulSet", f"{name}-worker", 2),),
        "run": run,
        "anchor": ("ConfigMap", f"{name}-assets"),
        "gated": True,
    }
    return WatchTarget(**{**fields, **changes})


def deploy(kube: FakeKube, name: str = "train", *, suspended: bool = True) -> None:
    """What `pulumi up` created: the anchor, the workers, the master Job (suspended)."""
    labels = {"training.kubeflow.org/job-name": name}
    kube.create(
        "configmaps",
        {"metadata": {"name": f"{name}-assets", "labels": labels}, "data": {"hostfile": "x"}},
    )
    kube.add_statefulset(f"{name}-worker", replicas=2)
    kube.add_job(f"{name}-master", labels=labels)
    kube.set_job_status(f"{name}-master")
    kube.patch_object("jobs", f"{name}-master", NS, {"spec": {"suspend": suspended}})


@pytest.fixture
def kube() -> Iterator[FakeKube]:
    yield from running_fake()


@pytest.fixture
def props(kube: FakeKube, tmp_path: Path) -> dict[str, Any]:
    """Inputs as the engine sends them to `create`: checked, plain values, the kubeconfig's
    content unwrapped from its secret, the serialized provider alongside."""
    return {
        "jobs": [{"target": target().to_dict(), "uids": {}}],
        "context": None,
        "timeout_seconds": 10,
        "fail_on_failure": True,
        "kubeconfig": kube.write_kubeconfig(tmp_path / "config").read_text(),
        "__provider": "serialized-provider",
    }


@pytest.fixture
def provider() -> JobCompletionProvider:
    return JobCompletionProvider()


def inputs_of(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k != "__provider"}


def in_background(call: Any) -> Any:
    """Run ``call`` on a thread; returns a function that waits for its result (or raises)."""
    import concurrent.futures

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    future = pool.submit(call)
    pool.shutdown(wait=False)
    return lambda: future.result(timeout=20)


# --- check and diff: offline -----------------------------------------------------------------


def test_check_fills_in_defaults_and_drops_everything_else(provider: JobCompletionProvider):
    news = {"jobs": [], "outcomes": None, "__provider": "x"}

    result = provider.check({}, news)

    assert result.failures == []
    assert result.inputs == {
        "jobs": [],
        "context": None,
        "timeout_seconds": 86400,
        "fail_on_failure": True,
        "kubeconfig": None,
        "mode": "finish",
    }


def test_check_reports_every_invalid_input(provider: JobCompletionProvider) -> None:
    bad_policy = target(clean_pod_policy="Sometimes").to_dict()
    news = {
        "jobs": [
            {"target": target().to_dict(), "uids": []},
            {"target": target().to_dict()},
            {"target": bad_policy},
            {"target": {"name": "x"}},
            "nope",
        ],
        "timeout_seconds": -5,
        "fail_on_failure": "yes",
        "context": 7,
    }

    failures = provider.check({}, news).failures

    assert [(f.property, f.reason) for f in failures] == [
        ("jobs[0]", "uids must be a mapping of Job name to uid, not list"),
        ("jobs[1]", "job default/train is watched twice"),
        ("jobs[2]", "job default/train is watched twice"),
        ("jobs[2]", "target.clean_pod_policy must be one of None, Running, All, not 'Sometimes'"),
        ("jobs[3]", "target is not a watch description (KeyError: 'success_jobs')"),
        ("jobs[4]", "must be a mapping {target, uids}"),
        ("context", "must be a string, not int"),
        ("timeout_seconds", "must be a positive number of seconds, not -5"),
        ("fail_on_failure", "must be true or false"),
    ]


def test_check_accepts_values_unknown_during_preview(provider: JobCompletionProvider) -> None:
    news = {
        "jobs": [{"target": target().to_dict(), "uids": {"train-master": rpc.UNKNOWN}}],
        "kubeconfig": rpc.UNKNOWN,
        "timeout_seconds": rpc.UNKNOWN,
    }

    assert provider.check({}, news).failures == []


def test_diff_updates_in_place_for_a_new_run_of_a_job(provider: JobCompletionProvider, props):
    news = {**props, "jobs": [{"target": target(run="run-2").to_dict(), "uids": {}}]}

    diff = provider.diff("id", props, news)

    assert (diff.changes, diff.replaces) == (True, [])


def test_diff_replaces_the_watcher_for_another_cluster(provider: JobCompletionProvider, props):
    diff = provider.diff("id", props, {**props, "context": "other"})

    assert (diff.changes, diff.replaces, diff.delete_before_replace) == (True, ["context"], False)


def test_diff_ignores_outputs_and_the_serialized_provider(provider: JobCompletionProvider, props):
    olds = {**props, "outcomes": {"default/train": {"phase": "Succeeded"}}}
    news = {**props, "__provider": "a-newer-serialization"}

    assert provider.diff("id", olds, news).changes is False


def test_check_and_diff_never_contact_the_cluster(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    provider.check({}, props)
    provider.diff("id", props, {**props, "timeout_seconds": 60})

    assert kube.requests == []


# --- create: the watch -------------------------------------------------------------------------


def test_create_starts_the_run_records_its_end_and_stops_the_workers(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube)
    result = in_background(lambda: provider.create(props))
    kube.wait_until(lambda: not kube.get("jobs", JOB)["spec"]["suspend"])
    kube.start_job(JOB)
    kube.complete_job(JOB)

    created = result()

    assert created.id == "trainjobs-completion"
    outcome = created.outs["outcomes"]["default/train"]
    assert (outcome["phase"], outcome["reason"], outcome["workers_scaled_down"]) == (
        "Succeeded",
        "CompletionsReached",
        True,
    )
    assert kube.replicas(STS) == 0
    record = json.loads(
        kube.get("configmaps", ANCHOR)["metadata"]["annotations"][RECORD_ANNOTATION]
    )
    assert (record["run"], record["phase"]) == ("run-1", "Succeeded")


def test_create_fails_the_update_with_exit_code_and_log_when_the_job_fails(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, suspended=False)
    kube.add_pod("train-master-abcde", job_name=JOB, containers=[terminated("chainer", 1)])
    kube.set_log("train-master-abcde", "chainer", "ValueError: bad batch size\n")
    kube.fail_job(JOB)

    with pytest.raises(JobFailedError) as raised:
        provider.create(props)

    assert str(raised.value).splitlines() == [
        "job default/train Failed (BackoffLimitExceeded: Job has reached the specified backoff "
        "limit); 0 succeeded, 1 failed pod(s)",
        "workers stopped: StatefulSet/train-worker",
        "failed pods:",
        "  train-master-abcde (Failed): container chainer exited with code 1 (Error)",
        "last 1 log line(s) of train-master-abcde/chainer:",
        "  | ValueError: bad batch size",
    ]


def test_create_records_a_failed_job_when_fail_on_failure_is_off(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, suspended=False)
    kube.fail_job(JOB, reason="DeadlineExceeded", message="too slow")

    created = provider.create({**props, "fail_on_failure": False})

    outcome = created.outs["outcomes"]["default/train"]
    assert (outcome["phase"], outcome["reason"], outcome["message"]) == (
        "Failed",
        "DeadlineExceeded",
        "too slow",
    )


def test_create_fails_when_the_workers_cannot_be_stopped(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, suspended=False)
    kube.complete_job(JOB)
    kube.fail_next(403, method="PATCH", path="/statefulsets/")

    with pytest.raises(JobFailedError) as raised:
        provider.create(props)

    assert "workers NOT stopped: StatefulSet/train-worker (HTTP 403 Forbidden)" in str(raised.value)
    assert str(raised.value).endswith("run `pulumi up` again to retry")


def test_create_times_out_leaving_workers_running(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, suspended=False)
    kube.start_job(JOB)

    with pytest.raises(JobFailedError) as raised:
        provider.create({**props, "timeout_seconds": 0.3})

    assert str(raised.value) == (
        "job default/train-master still running after 0.3s (Running: 1 active (1 ready), 0 "
        "succeeded, 0 failed); workers left running; run `pulumi up` again to keep watching"
    )
    assert kube.replicas(STS) == 2


def test_a_run_recorded_as_ended_is_not_started_again(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    """The Jobs were created again (suspended) after a TTL removed them: nothing runs."""
    deploy(kube)
    record = {"run": "run-1", "phase": "Succeeded", "reason": "CompletionsReached"}
    kube.patch_object(
        "configmaps",
        ANCHOR,
        NS,
        {"metadata": {"annotations": {RECORD_ANNOTATION: json.dumps(record)}}},
    )

    created = provider.create(props)

    outcome = created.outs["outcomes"]["default/train"]
    assert (outcome["phase"], outcome["reason"]) == ("Succeeded", "CompletionsReached")
    assert outcome["notes"] == [
        "this run already ended (Succeeded), as recorded on ConfigMap/train-assets: its Jobs "
        "stay suspended and nothing runs again. To run the job again, change its spec, e.g. "
        "bump a trainjobs.io/run annotation on its pod templates"
    ]
    assert kube.get("jobs", JOB)["spec"]["suspend"] is True
    assert kube.patches == []


def test_a_job_its_spec_suspends_is_kept_suspended_and_reported(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube)
    props["jobs"] = [{"target": target(suspend=True).to_dict(), "uids": {}}]

    outcome = provider.create(props).outs["outcomes"]["default/train"]

    assert (outcome["phase"], outcome["message"]) == (
        "Suspended",
        "suspended by its spec (runPolicy.suspend: true); set it to false to run it",
    )
    assert (kube.get("jobs", JOB)["spec"]["suspend"], kube.replicas(STS)) == (True, 0)


def test_create_watches_only_the_job_with_the_given_uid(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, suspended=False)
    props["jobs"][0]["uids"] = {JOB: "another-uid"}

    outcome = provider.create({**props, "fail_on_failure": False}).outs["outcomes"]["default/train"]

    assert (outcome["phase"], outcome["message"]) == (
        "Deleted",
        f"Job default/{JOB} was replaced by another Job with the same name (uid "
        f"{kube.get('jobs', JOB)['metadata']['uid']}, expected another-uid)",
    )


# --- update, read, delete ----------------------------------------------------------------------


def stored_state(props: dict[str, Any], outcome: dict[str, Any]) -> dict[str, Any]:
    return {**props, "outcomes": {"default/train": outcome}}


def test_update_keeps_the_outcome_of_an_unchanged_run_and_does_not_contact_the_cluster(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    olds = stored_state(props, {"phase": "Succeeded"})

    result = provider.update("id", olds, {**props, "timeout_seconds": 60})

    assert (result.outs["outcomes"], result.outs["timeout_seconds"]) == (
        {"default/train": {"phase": "Succeeded"}},
        60,
    )
    assert kube.requests == []


def test_update_watches_a_new_run_and_keeps_the_other_jobs_outcomes(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube, "other", suspended=False)
    kube.complete_job("other-master")
    other = {"target": target("other").to_dict(), "uids": {}}
    olds = {
        **props,
        "jobs": [*props["jobs"], other],
        "outcomes": {"default/train": {"phase": "Succeeded"}, "default/other": {"phase": "Old"}},
    }
    uid = kube.get("jobs", "other-master")["metadata"]["uid"]
    news = {**props, "jobs": [*props["jobs"], {**other, "uids": {"other-master": uid}}]}

    outcomes = provider.update("id", olds, news).outs["outcomes"]

    assert (outcomes["default/train"], outcomes["default/other"]["phase"]) == (
        {"phase": "Succeeded"},
        "Succeeded",
    )


def test_update_drops_jobs_no_longer_in_the_stack(
    provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    olds = stored_state(props, {"phase": "Succeeded"})

    assert provider.update("id", olds, {**props, "jobs": []}).outs["outcomes"] == {}


def test_read_keeps_the_recorded_outcomes_offline(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    state = stored_state(props, {"phase": "Succeeded"})

    result = provider.read("trainjobs-completion", state)

    assert result.outs["outcomes"] == {"default/train": {"phase": "Succeeded"}}
    assert kube.requests == []


def test_delete_leaves_the_jobs_and_the_workers_alone(
    kube: FakeKube, provider: JobCompletionProvider, props: dict[str, Any]
) -> None:
    deploy(kube)

    before = len(kube.requests)
    provider.delete("trainjobs-completion", stored_state(props, {"phase": "Succeeded"}))

    assert len(kube.requests) == before
    assert kube.replicas(STS) == 2


# --- pickling, as the Pulumi engine does it --------------------------------------------------

UNPICKLE_AND_CALL = """
import base64, json, sys
import dill
provider = dill.loads(base64.b64decode(sys.stdin.read()))
check = provider.check({}, {"jobs": [], "timeout_seconds": 0})
diff = provider.diff("id", {"context": "a"}, {"context": "b"})
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
        "class": "trainjobs.deploy.completion.JobCompletionProvider",
        "failures": [["timeout_seconds", "must be a positive number of seconds, not 0"]],
        "replaces": ["context"],
    }


@pytest.mark.parametrize(
    ("module", "loaded"),
    [
        ("components.completion", "trainjobs.deploy.completion"),
        ("components.deploy.completion", "components.deploy.completion"),
    ],
)
def test_a_provider_stored_under_an_earlier_import_path_still_unpickles(
    module: str, loaded: str
) -> None:
    # Stacks deployed before the package was imported as `trainjobs` stored the provider by
    # reference under these paths; refresh and delete unpickle that stored copy, from the
    # project directory (the dynamic provider host runs there, with it on sys.path).
    stored = base64.b64encode(f"c{module}\nJobCompletionProvider\n)\x81.".encode("latin-1"))

    done = subprocess.run(
        [sys.executable, "-c", UNPICKLE_AND_CALL],
        input=stored.decode(),
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    )

    assert json.loads(done.stdout) == {
        "class": f"{loaded}.JobCompletionProvider",
        "failures": [["timeout_seconds", "must be a positive number of seconds, not 0"]],
        "replaces": ["context"],
    }


def test_provider_is_pickled_by_reference_not_by_value() -> None:
    pickled = base64.b64decode(serialize_provider(JobCompletionProvider()))

    assert b"trainjobs.deploy.completion" in pickled
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


def test_job_completion_registers_its_jobs_and_a_secret_kubeconfig(
    monitor: _RecordingMonitor,
) -> None:
    seen: dict[str, Any] = {}

    @pulumi.runtime.test
    def register() -> pulumi.Output[Any]:
        watch = WatchSettings(kubeconfig=pulumi.Output.from_input("apiVersion: v1\nkind: Config\n"))
        jobs = [WatchedJob(target(), {JOB: "uid-1"}), WatchedJob(target("b"), {})]
        completion = JobCompletion("completion", jobs, watch)
        kubeconfig = completion.kubeconfig  # type: ignore[attr-defined]
        return pulumi.Output.all(completion.outcomes, kubeconfig.is_secret()).apply(
            lambda values: seen.update(outcomes=values[0], kubeconfig_secret=values[1])
        )

    register()

    (request,) = monitor.requests
    inputs = rpc.deserialize_properties(request.object, keep_unknowns=True)
    assert request.type == "pulumi-python:dynamic/trainjobs:JobCompletion"
    assert list(request.additionalSecretOutputs) == ["kubeconfig"]
    assert rpc.is_rpc_secret(inputs["kubeconfig"])
    assert [(job["target"]["name"], job["uids"]) for job in inputs["jobs"]] == [
        ("train", {JOB: "uid-1"}),
        ("b", {}),
    ]
    assert seen == {"outcomes": None, "kubeconfig_secret": True}


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


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("finish", (True, "finish")),
        ("true", (True, "finish")),
        ("start", (True, "start")),
        ("false", (False, "finish")),
        ("Start", (True, "start")),
    ],
)
def test_watch_settings_read_the_watch_mode(
    monitor: _RecordingMonitor, value: str, expected: tuple[bool, str]
) -> None:
    watch_settings = settings_from({"trainjobs:watch": value})

    assert (watch_settings.watch, watch_settings.mode) == expected


def test_an_unknown_watch_mode_names_key_value_and_fix(monitor: _RecordingMonitor) -> None:
    with pytest.raises(UserError) as raised:
        settings_from({"trainjobs:watch": "later"})

    assert str(raised.value) == (
        "trainjobs:watch: 'later' is not a watch mode; use finish (see every job through, the "
        "default), start (start the runs and return; follow a job with `trainjobs watch "
        "JOB`) or false (no watcher), e.g. `pulumi config set trainjobs:watch start`"
    )
