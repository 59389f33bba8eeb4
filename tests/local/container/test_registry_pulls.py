"""Container runs pull as the kubelet does, from a real registry (:mod:`tests.registry`).

Debian's docker-registry serves on 127.0.0.1 over TLS (a CA made here, trusted through
out/engine/certs.d only), one registry open and one with basic auth. The images pushed are
derived from small local images (the bootstrapped Debian base, the kubectl stand-in), so each
push and pull costs seconds. Between tests a pulled image is untagged, never removed: its
layers stay shared with the local images it came from.
"""

from __future__ import annotations

import json
import ssl
import subprocess
import sys
import textwrap
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import REPO
from tests.local.container.test_runtime import CONTAINER, ENGINE, left_by, single_pod
from tests.local.runs import Run
from tests.registry import MISSING_TOOLS, SKIP_REASON, Registry, running_registry
from trainjobs.engines.engine import RegistryAccess
from trainjobs.engines.settings import CERTS_DIR
from trainjobs.images import bootstrap, kubectl_stand_in
from trainjobs.images.catalogue import IMAGES

DEBIAN = next(image.debian for image in IMAGES.values() if image.debian is not None)
BASE = bootstrap.bootstrap_reference(DEBIAN)
"""The bootstrapped Debian base (`make engine`): the open registry's image."""
STAND_IN = kubectl_stand_in.REFERENCE
"""The kubectl stand-in (Debian with python3): what the Kubeflow-shaped image derives from."""

pytestmark = [
    pytest.mark.skipif(ENGINE is None, reason="needs podman (as root: make engine)"),
    pytest.mark.skipif(bool(MISSING_TOOLS), reason=SKIP_REASON),
    # BASE and STAND_IN are made before the first image, which the push test builds.
    pytest.mark.needs_images("trainjobs/chainer:7.8.1"),
]


def untag(reference: str) -> None:
    """Forget a pulled reference; the image (shared with a local one) stays."""
    assert ENGINE is not None
    ENGINE.call("untag", reference, reference, check=False)
    ENGINE.forget_images()


def push(source: str, destination: str, registry: Registry, tmp: Path) -> str:
    """Push with the project's own push (credentials as an auth file); the digest."""
    assert ENGINE is not None
    auth_file = tmp / "auth.json"
    auth_file.write_text(json.dumps(registry.docker_config()))
    access = RegistryAccess(auth_file, CERTS_DIR / registry.host)
    return ENGINE.push(source, destination, access, lambda line: None)


def write(path: Path, *documents: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump_all(documents), encoding="utf-8")
    return path


def pulled_lines(run: Run) -> list[str]:
    """The run's pull events, without the engine's progress lines."""
    return [line for line in run.lines if "image '" in line]


@pytest.fixture(scope="module")
def open_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("open-registry"), auth=False) as registry:
        yield registry


@pytest.fixture(scope="module")
def auth_registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    with running_registry(tmp_path_factory.mktemp("auth-registry"), auth=True) as registry:
        yield registry


@pytest.fixture(scope="module")
def base_in_registry(open_registry: Registry, tmp_path_factory: pytest.TempPathFactory):
    """The Debian base as ``<registry>/team/base:1``, and its digest."""
    reference = f"{open_registry.host}/team/base:1"
    digest = push(BASE, reference, open_registry, tmp_path_factory.mktemp("push"))
    return reference, digest


MNIST_SHAPED = textwrap.dedent(
    '''\
    """Shaped like kubeflowkatib/pytorch-mnist's /opt/pytorch-mnist/mnist.py: the script lives
    in the image, the job's command names it. The master waits for each worker to report its
    rank over TCP at MASTER_ADDR:MASTER_PORT, as torch.distributed's rendezvous would."""
    import argparse, os, socket, time

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=1)
    epochs = parser.parse_args().epochs
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    address = (os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]))
    if rank == 0:
        server = socket.create_server(("", address[1]))
        ranks = sorted(int(server.accept()[0].recv(16)) for _ in range(world - 1))
        print(f"master: {epochs} epoch(s), workers {ranks} of {world}", flush=True)
    else:
        # A deadline, not a count of tries: a refused connection returns at once, and on a
        # busy machine the master's container may start many seconds after this one.
        deadline = time.monotonic() + 240
        while True:
            try:
                connection = socket.create_connection(address, timeout=1)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
        # Printed before the report: once the master has it, the job may end at once.
        print(f"worker {rank}: reporting to the master", flush=True)
        connection.sendall(str(rank).encode())
    '''
)


@pytest.fixture(scope="module")
def mnist_shaped(auth_registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Kubeflow-example-shaped image built here from the kubectl stand-in (one COPY) and
    pushed to the registry with auth as ``kubeflowkatib/pytorch-mnist``; never tagged here."""
    assert ENGINE is not None
    context = tmp_path_factory.mktemp("mnist-shaped")
    (context / "mnist.py").write_text(MNIST_SHAPED)
    (context / "Containerfile").write_text(
        f"FROM {STAND_IN}\nCOPY mnist.py /opt/pytorch-mnist/mnist.py\n"
    )
    local = "localhost/trainjobs-test/pytorch-mnist:shaped"
    subprocess.run(
        [ENGINE.executable, "build", "-q", "-f", str(context / "Containerfile"), "-t", local,
         str(context)],
        env=ENGINE.env, check=True, capture_output=True,
    )  # fmt: skip
    reference = f"{auth_registry.host}/kubeflowkatib/pytorch-mnist:v1beta1-shaped"
    push(local, reference, auth_registry, context)
    ENGINE.remove_image(local)
    return reference


def kubeflow_simple(image: str, secret: str | None) -> dict[str, Any]:
    """Kubeflow training-operator's examples/pytorch/simple.yaml, its image from here."""
    pod: dict[str, Any] = {
        "containers": [
            {
                "name": "pytorch",
                "image": image,
                "imagePullPolicy": "Always",
                "command": ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"],
            }
        ]
    }
    if secret is not None:
        pod["imagePullSecrets"] = [{"name": secret}]
    replica = {"restartPolicy": "OnFailure", "template": {"spec": pod}}
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "pytorch-simple", "namespace": "kubeflow"},
        "spec": {
            "pytorchReplicaSpecs": {
                "Master": {"replicas": 1, **replica},
                "Worker": {"replicas": 1, **replica},
            }
        },
    }


# -- pull policies --------------------------------------------------------------------------


def test_if_not_present_pulls_an_absent_image_by_tag_then_runs_it(
    tmp_path: Path, base_in_registry: tuple[str, str]
):
    reference, _ = base_in_registry
    untag(reference)
    job = single_pod("by-tag", reference, ["sh", "-c", "echo pulled by tag"])
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    where = "pod by-tag-master-0 container pytorch"
    assert pulled_lines(run) == [
        f"[trainjobs] {where}: Pulling image {reference!r}",
        f"[trainjobs] {where}: Successfully pulled image {reference!r}",
    ]
    assert run.pod_log("by-tag-master-0") == ["pulled by tag"]
    assert left_by(run) == []
    untag(reference)


def test_if_not_present_runs_a_present_image_without_pulling(
    tmp_path: Path, base_in_registry: tuple[str, str]
):
    reference, _ = base_in_registry
    assert ENGINE is not None
    ENGINE.call("tag", BASE, reference)
    job = single_pod("present", reference, ["sh", "-c", "echo ran"])
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert pulled_lines(run) == []
    untag(reference)


def test_always_pulls_the_digest_a_pod_is_pinned_to(
    tmp_path: Path, base_in_registry: tuple[str, str]
):
    reference, digest = base_in_registry
    pinned = f"{reference.rsplit(':', 1)[0]}@{digest}"
    job = single_pod("by-digest", pinned, ["sh", "-c", "echo pulled by digest"])
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"
    ] = "Always"
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert f"Successfully pulled image {pinned!r}" in "\n".join(run.lines)
    assert run.pod_log("by-digest-master-0") == ["pulled by digest"]


def test_latest_defaults_to_always(tmp_path: Path, open_registry: Registry):
    """No such image in the registry: the pull (Always, by default for :latest) fails."""
    reference = f"{open_registry.host}/team/base:latest"
    assert ENGINE is not None
    ENGINE.call("tag", BASE, reference)
    try:
        job = single_pod("latest", reference, ["true"])
        run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)
    finally:
        untag(reference)

    assert run.exit_code == 1
    assert run.stderr == (
        f"error: pod latest-master-0 container pytorch: ErrImagePull: Failed to pull image "
        f"{reference!r}: initializing source docker://{reference}: reading manifest latest in "
        f"{open_registry.host}/team/base: manifest unknown: manifest unknown; then "
        f"ImagePullBackOff: Back-off pulling image {reference!r} (a local run does not retry)\n"
    )
    assert not (tmp_path / "run").exists()


def test_never_with_an_absent_image_is_err_image_never_pull(
    tmp_path: Path, open_registry: Registry
):
    reference = f"{open_registry.host}/team/base:1"
    untag(reference)
    job = single_pod("never", reference, ["true"])
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"
    ] = "Never"
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert run.stderr == (
        "error: pod never-master-0 container pytorch: ErrImageNeverPull: Container image "
        f"{reference!r} is not present with pull policy of Never; pull or build it first "
        f"(`podman pull {reference}`), or set imagePullPolicy: IfNotPresent\n"
    )
    assert not (tmp_path / "run").exists()


# -- credentials and trust ------------------------------------------------------------------


def test_a_pull_without_credentials_is_refused_with_the_registrys_reason(
    tmp_path: Path, auth_registry: Registry, mnist_shaped: str
):
    job = kubeflow_simple(mnist_shaped, secret=None)
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    repository = mnist_shaped.rsplit(":", 1)[0]
    assert run.stderr == (
        "error: pod pytorch-simple-master-0 container pytorch: ErrImagePull: Failed to pull "
        f"image {mnist_shaped!r}: initializing source docker://{mnist_shaped}: reading "
        f"manifest v1beta1-shaped in {repository}: unauthorized: authentication required; "
        f"then ImagePullBackOff: Back-off pulling image {mnist_shaped!r} (a local run does not "
        "retry): give the pod imagePullSecrets naming a kubernetes.io/dockerconfigjson Secret "
        f"beside the job in its file, or log in (`podman login {auth_registry.host}`)\n"
    )
    assert not (tmp_path / "run").exists()


def test_a_named_pull_secret_that_is_missing_is_reported_and_the_pull_goes_on(
    tmp_path: Path, auth_registry: Registry, mnist_shaped: str
):
    job = kubeflow_simple(mnist_shaped, secret="absent")
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert (
        "[trainjobs] pod pytorch-simple-master-0 container pytorch: Unable to retrieve pull "
        "secret kubeflow/absent, the image pull may not succeed (no image pull Secret of that "
        "name beside the job in its file)"
    ) in run.lines
    assert "unauthorized: authentication required" in run.stderr


def test_the_kubeflow_example_shape_pulls_with_its_secret_and_runs_unchanged(
    tmp_path: Path, auth_registry: Registry, mnist_shaped: str
):
    job = kubeflow_simple(mnist_shaped, secret="regcred")
    path = write(tmp_path / "job.yaml", job, auth_registry.pull_secret("regcred"))
    run = Run(path, tmp_path / "run", *CONTAINER)

    assert run.exit_code == 0, run.output
    assert f"Successfully pulled image {mnist_shaped!r}" in "\n".join(run.lines)
    assert run.pod_log("pytorch-simple-master-0") == ["master: 1 epoch(s), workers [1] of 2"]
    assert run.pod_log("pytorch-simple-worker-0") == ["worker 1: reporting to the master"]
    assert left_by(run) == []
    untag(mnist_shaped)


def test_a_registry_whose_ca_is_not_trusted_is_named_with_where_its_ca_goes(
    tmp_path: Path, open_registry: Registry, base_in_registry: tuple[str, str]
):
    reference, _ = base_in_registry
    untag(reference)
    trusted = CERTS_DIR / open_registry.host / "ca.crt"
    kept = trusted.read_bytes()
    trusted.unlink()
    try:
        job = single_pod("untrusted", reference, ["true"])
        run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)
    finally:
        trusted.write_bytes(kept)

    assert run.exit_code == 1
    assert run.stderr == (
        "error: pod untrusted-master-0 container pytorch: ErrImagePull: Failed to pull image "
        f"{reference!r}: initializing source docker://{reference}: pinging container registry "
        f'{open_registry.host}: Get "https://{open_registry.host}/v2/": x509: certificate '
        "signed by unknown authority; then ImagePullBackOff: Back-off pulling image "
        f"{reference!r} (a local run does not retry): trust the registry's CA by putting it at "
        f"{trusted}\n"
    )


# -- push by digest ---------------------------------------------------------------------------


def registry_digest(registry: Registry, repository: str, tag: str) -> str:
    """The digest the registry itself reports for a tag (Docker-Content-Digest)."""
    request = urllib.request.Request(
        f"https://{registry.host}/v2/{repository}/manifests/{tag}",
        method="HEAD",
        headers={"Accept": "application/vnd.oci.image.manifest.v1+json, "
                 "application/vnd.docker.distribution.manifest.v2+json"},
    )  # fmt: skip
    context = ssl.create_default_context(cafile=str(registry.ca))
    with urllib.request.urlopen(request, context=context) as answer:
        return str(answer.headers["Docker-Content-Digest"])


def test_images_build_push_records_digests_that_a_run_then_pulls(
    tmp_path: Path, open_registry: Registry
):
    """The smallest image trainjobs builds (current here: kept, not rebuilt), pushed; the run
    pinned by the recorded digest pulls exactly that digest."""
    pins = tmp_path / "pins.json"
    pushed = subprocess.run(
        [sys.executable, "-m", "trainjobs.cli", "images", "build", "trainjobs/chainer:7.8.1",
         "--push", open_registry.host, "--pins", str(pins)],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip

    assert pushed.returncode == 0, pushed.stdout + pushed.stderr
    digest = registry_digest(open_registry, "trainjobs/chainer", "7.8.1")
    pinned = f"{open_registry.host}/trainjobs/chainer@{digest}"
    assert json.loads(pins.read_text()) == {"trainjobs/chainer:7.8.1": pinned}
    assert pushed.stdout.splitlines()[-1] == f"[images] digests recorded in {pins}"

    job = single_pod("pinned", "trainjobs/chainer:7.8.1", ["python3", "-c", "print('pinned')"])
    # Always: after a push the engine knows the local image by the pushed digest too, so
    # IfNotPresent would (rightly) find it present.
    job["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0][
        "imagePullPolicy"
    ] = "Always"
    run = Run(
        write(tmp_path / "job.yaml", job),
        tmp_path / "run",
        *CONTAINER,
        "--image-pins",
        str(pins),
        "--require-digests",
    )
    try:
        assert run.exit_code == 0, run.output
        assert f"Successfully pulled image {pinned!r}" in "\n".join(run.lines)
        assert run.pod_log("pinned-master-0") == ["pinned"]
    finally:
        untag(pinned)


def test_require_digests_refuses_an_image_left_on_a_tag(tmp_path: Path):
    job = single_pod("tagged", "trainjobs/chainer:7.8.1", ["true"])
    run = Run(write(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER, "--require-digests")

    assert run.exit_code == 2
    assert run.stderr == (
        "error: PyTorchJob tagged: 1 image(s) not pinned by digest\n"
        "  Job/tagged-master-0: spec.template.spec.containers[0].image: trainjobs/chainer:7.8.1 "
        "is not pinned by digest; add it to the --image-pins file (trainjobs images build "
        "--push REGISTRY records one)\n"
    )
