"""`trainjobs watch JOB --logs`: the deciding pod's log followed as the job runs, against the
API fake's pod log endpoint (``follow=true``, as the kubelet streams it)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.test_training_jobs import deployed, in_background, pods, tf_job, wait_for
from tests.kubefake import FakeKube, running, terminated, waiting
from trainjobs.cli import main as cli_main
from trainjobs.cluster.errors import DEFAULT_RETRY, RetryPolicy
from trainjobs.cluster.logs import LogFollower
from trainjobs.cluster.transport import MAX_EVENT_BYTES

NS = "default"
CHIEF = "tf-mnist-chief-0"


@pytest.fixture
def kube(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKube]:
    with FakeKube(controllers=True, pod_grace_seconds=0.05) as fake:
        monkeypatch.setenv("KUBECONFIG", str(fake.write_kubeconfig(tmp_path / "kubeconfig")))
        yield fake


def chief_pod(kube: FakeKube) -> tuple[str, str]:
    """(name, container) of the chief Job's first pod, once it runs."""
    wait_for(lambda: pods(kube, CHIEF) == ["Running"])
    pod = kube.pods_of(CHIEF)[0]
    return pod["metadata"]["name"], pod["spec"]["containers"][0]["name"]


def end_pod(kube: FakeKube, pod: str, container: str, exit_code: int) -> None:
    phase = "Succeeded" if exit_code == 0 else "Failed"
    reason = "Completed" if exit_code == 0 else "Error"
    status = {"phase": phase, "containerStatuses": [terminated(container, exit_code, reason)]}
    kube.patch_object("pods", pod, NS, {"status": status})


def test_watch_logs_streams_the_chiefs_log_and_follows_its_replacement(
    kube, tmp_path, capsys
) -> None:
    deployed(kube, tmp_path, tf_job("Running"))
    code = in_background(lambda: cli_main(["watch", "tf-mnist", "--logs"]))
    first, container = chief_pod(kube)
    kube.append_log(first, container, "step 1\n")
    kube.append_log(first, container, "loss \x1b[31m0.5\n")
    # The pod fails; the Job controller replaces it (restartPolicy Never, within backoffLimit).
    end_pod(kube, first, container, 1)
    second = f"{CHIEF}-zzzzz"
    kube.add_pod(second, NS, job_name=CHIEF, phase="Running", containers=[running(container)])
    kube.append_log(second, container, "resumed\n\nlast line\r\n")
    end_pod(kube, second, container, 0)
    kube.complete_job("tf-mnist-worker-0")
    kube.complete_job(CHIEF)

    assert code() == 0
    out = capsys.readouterr().out.splitlines()
    assert out[:4] == [
        f"[{first}] step 1",
        f"[{first}] loss \\x1b[31m0.5",
        f"[{second}] resumed",
        f"[{second}] last line",
    ]
    assert out[4].startswith("job default/tf-mnist Succeeded (CompletionsReached: ")


def test_watch_logs_with_json_keeps_stdout_for_the_outcome(kube, tmp_path, capsys) -> None:
    deployed(kube, tmp_path, tf_job("Running"))
    code = in_background(lambda: cli_main(["watch", "tf-mnist", "--logs", "--json"]))
    pod, container = chief_pod(kube)
    kube.append_log(pod, container, "epoch 1/1\n")
    end_pod(kube, pod, container, 0)
    kube.complete_job("tf-mnist-worker-0")
    kube.complete_job(CHIEF)

    assert code() == 0
    out, err = capsys.readouterr()
    assert out.startswith("{\n")
    assert f"[{pod}] epoch 1/1" in err.splitlines()


def test_a_container_restart_is_followed_as_a_new_run(kube) -> None:
    """restartPolicy OnFailure: the same pod, its container's restartCount one higher."""
    kube.add_pod("p", NS, job_name="j", phase="Running", containers=[running("c")])
    lines: list[str] = []
    api = kube.api_client()
    follower = LogFollower(api, NS, "j", lines.append, timeout_seconds=20, poll_seconds=0.02)
    follower.start()
    kube.append_log("p", "c", "one\n")
    wait_for(lambda: lines == ["[p] one"])
    kube.set_log("p", "c", "")  # the new container's log starts empty
    last = terminated("c", 1)
    kube.patch_object(
        "pods",
        "p",
        NS,
        {"status": {"containerStatuses": [running("c", restarts=1, last_terminated=last)]}},
    )
    kube.append_log("p", "c", "two\n")
    wait_for(lambda: lines == ["[p] one", "[p] two"])
    end_pod(kube, "p", "c", 0)
    follower.finish()
    api.close()
    assert lines == ["[p] one", "[p] two"]


def test_the_fakes_log_follows_until_the_container_stops(kube) -> None:
    """pkg/kubelet/kuberuntime/logs/logs.go: the stream ends when the container exits."""
    kube.add_pod("p", NS, job_name="j", phase="Running", containers=[running("c")])
    kube.append_log("p", "c", "a\n")
    api = kube.api_client()
    from kubernetes import client

    response = client.CoreV1Api(api).read_namespaced_pod_log(
        "p", NS, container="c", follow=True, _preload_content=False, _request_timeout=(5, 5)
    )
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.extend(response.stream(2)))
    reader.start()
    kube.append_log("p", "c", "b\n")
    end_pod(kube, "p", "c", 0)
    reader.join(10)
    api.close()
    assert b"".join(got) == b"a\nb\n"


def test_the_fake_has_no_log_for_a_container_waiting_to_start(kube) -> None:
    """pkg/kubelet/kubelet_pods.go validateContainerLogStatus."""
    kube.add_pod(
        "p", NS, job_name="j", phase="Pending", containers=[waiting("c", "ContainerCreating")]
    )
    api = kube.api_client()
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    with pytest.raises(ApiException) as raised:
        client.CoreV1Api(api).read_namespaced_pod_log("p", NS, container="c", _request_timeout=5)
    api.close()
    assert raised.value.status == 400
    assert 'container \\"c\\" in pod \\"p\\" is waiting to start: ContainerCreating' in str(
        raised.value.body
    )


def follow(
    kube: FakeKube, lines: list[str], retry: RetryPolicy = DEFAULT_RETRY
) -> tuple[LogFollower, Any]:
    api = kube.api_client()
    follower = LogFollower(
        api, NS, "j", lines.append, timeout_seconds=20, poll_seconds=0.02, retry=retry
    )
    return follower.start(), api


def log_requests(kube: FakeKube) -> int:
    return sum(1 for request in kube.requests if request.path.endswith("/pods/p/log"))


def test_a_pod_is_followed_once_its_container_has_started(kube) -> None:
    kube.add_pod(
        "p", NS, job_name="j", phase="Pending", containers=[waiting("c", "ContainerCreating")]
    )
    lines: list[str] = []
    follower, api = follow(kube, lines)
    kube.append_log("p", "c", "up\n")
    kube.patch_object(
        "pods", "p", NS, {"status": {"phase": "Running", "containerStatuses": [running("c")]}}
    )
    wait_for(lambda: lines == ["[p] up"])
    end_pod(kube, "p", "c", 0)
    follower.finish()
    api.close()
    assert lines == ["[p] up"]


def test_a_broken_stream_is_opened_again_without_repeating_lines(kube) -> None:
    """A quiet log trips the read timeout: the stream is opened again, its lines skipped."""
    kube.add_pod("p", NS, job_name="j", phase="Running", containers=[running("c")])
    kube.append_log("p", "c", "a\n")
    lines: list[str] = []
    quick = RetryPolicy(connect_timeout=0.3, request_timeout=0.3)
    follower, api = follow(kube, lines, retry=quick)
    wait_for(lambda: log_requests(kube) >= 3)
    kube.append_log("p", "c", "b\n")
    end_pod(kube, "p", "c", 0)
    follower.finish()
    api.close()
    assert lines == ["[p] a", "[p] b"]


def test_a_line_over_the_bound_ends_the_follow_with_a_note(kube) -> None:
    kube.add_pod("p", NS, job_name="j", phase="Running", containers=[running("c")])
    kube.append_log("p", "c", "fine\n" + "x" * (MAX_EVENT_BYTES + 1))
    lines: list[str] = []
    follower, api = follow(kube, lines)
    wait_for(lambda: len(lines) == 2)
    kube.append_log("p", "c", "\nnot shown\n")
    end_pod(kube, "p", "c", 0)
    follower.finish()
    api.close()
    assert lines == ["[p] fine", "[p] (a line longer than 4 MiB: the log is not followed on)"]
