"""Each command imports what it uses: `trainjobs validate` and `run` load no Pulumi SDK, no
AWS SDK, no Kubernetes client, and no other kind's models; `run --help` not even the spec
models or the schema validator, and a job validated before not the schema validator;
`status`, and `watch` until it has found its job, read JSON without the Kubernetes client.
Checked in a fresh interpreter, as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO

CLOUD = {"pulumi", "pulumi_kubernetes", "pulumi_tls", "pulumi_aws", "boto3", "botocore"}
CLUSTER_CLIENT = {"kubernetes"}
SPEC_MODELS = {"pydantic", "yaml", "jsonschema", "kubernetes_validate"}
OTHER_KINDS = {
    "trainjobs.kinds.pytorch.spec",
    "trainjobs.kinds.tensorflow.spec",
    "trainjobs.core.replica_spec",
}
OTHER_COMMANDS = {
    "trainjobs.cli.images",
    "trainjobs.cli.preflight",
    "trainjobs.cli.review",
    "trainjobs.cli.watch",
    "trainjobs.kinds.crds",
    "trainjobs.images.dockerfiles",
}
CONTAINER_RUNTIME = {
    "trainjobs.local.container.runtime",
    "trainjobs.engines.engine",
    "trainjobs.images.builder",
}
WATCHED = CLOUD | CLUSTER_CLIENT | SPEC_MODELS | OTHER_KINDS | OTHER_COMMANDS | CONTAINER_RUNTIME

RUN_COMMAND = """
import json, sys
from trainjobs.cli import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(set(sys.modules) & set(json.loads(sys.stdin.read())))))
"""


def loaded(code: str, *arguments: str, cache: Path | None = None) -> set[str]:
    """Which of :data:`WATCHED` a fresh interpreter has imported after ``code``, with an
    empty answer cache, or ``cache``."""
    with tempfile.TemporaryDirectory() as empty:
        done = subprocess.run(
            [sys.executable, "-c", code, *arguments],
            input=json.dumps(sorted(WATCHED)),
            capture_output=True,
            text=True,
            cwd=REPO,
            check=True,
            env={**os.environ, "TRAINJOBS_CACHE_DIR": str(cache or empty)},
        )
    return set(json.loads(done.stdout.strip().splitlines()[-1]))


def test_validate_of_a_chainerjob_loads_its_models_and_the_schema_alone():
    found = loaded(RUN_COMMAND, "validate", "jobs/chainermn-mnist.yaml")
    assert found == SPEC_MODELS


def test_validating_a_job_again_loads_no_schema_validator(tmp_path):
    first = loaded(RUN_COMMAND, "validate", "jobs/chainermn-mnist.yaml", cache=tmp_path)
    again = loaded(RUN_COMMAND, "validate", "jobs/chainermn-mnist.yaml", cache=tmp_path)
    assert first == SPEC_MODELS
    # The templates' schema answers come from the cache: no jsonschema, no Kubernetes schema.
    assert again == {"pydantic", "yaml"}


def test_run_help_loads_no_models_no_schema_and_no_sdk():
    assert loaded(RUN_COMMAND, "run", "--help") == set()


def test_the_run_path_loads_no_sdk_no_cluster_client_and_no_other_kind():
    code = """
import json, sys
import trainjobs.cli, trainjobs.cli.run, trainjobs.local.runtime
from trainjobs.kinds.registry import load_job
load_job("jobs/chainermn-mnist.yaml")
print(json.dumps(sorted(set(sys.modules) & set(json.loads(sys.stdin.read())))))
"""
    assert loaded(code) == SPEC_MODELS


def test_a_process_run_loads_no_container_engine_and_no_image_builder():
    code = """
import json, sys
import trainjobs.cli, trainjobs.cli.run, trainjobs.local.start
from trainjobs.kinds.registry import load_job
load_job("jobs/chainermn-mnist.yaml")
print(json.dumps(sorted(set(sys.modules) & set(json.loads(sys.stdin.read())))))
"""
    assert loaded(code) == SPEC_MODELS


def test_every_kind_validates_when_named():
    found = loaded(RUN_COMMAND, "validate", "jobs/tf-mnist.yaml", "jobs/pytorch-mnist.yaml")
    assert found == SPEC_MODELS | OTHER_KINDS


def test_the_registry_names_each_kind_as_its_models_do():
    from trainjobs.kinds.chainer import spec as chainer_spec
    from trainjobs.kinds.jaxjob import spec as jaxjob_spec
    from trainjobs.kinds.mpijob import spec as mpijob_spec
    from trainjobs.kinds.paddlejob import spec as paddlejob_spec
    from trainjobs.kinds.pytorch import spec as pytorch_spec
    from trainjobs.kinds.registry import KINDS
    from trainjobs.kinds.tensorflow import spec as tensorflow_spec
    from trainjobs.kinds.trainjob import spec as trainjob_spec
    from trainjobs.kinds.xgboostjob import spec as xgboostjob_spec

    assert list(KINDS) == [
        chainer_spec.KIND,
        tensorflow_spec.KIND,
        pytorch_spec.KIND,
        mpijob_spec.KIND,
        trainjob_spec.KIND,
        xgboostjob_spec.KIND,
        paddlejob_spec.KIND,
        jaxjob_spec.KIND,
    ]


@pytest.fixture
def cluster_kubeconfig(tmp_path: Path) -> Iterator[Path]:
    """A kubeconfig for the API fake, which holds one training job, alpha."""
    from tests.cluster.test_training_jobs import chainermn, deployed
    from tests.kubefake import FakeKube

    with FakeKube() as fake:
        deployed(fake, tmp_path / "alpha", chainermn("alpha"))
        yield fake.write_kubeconfig(tmp_path / "kubeconfig")


def test_status_loads_no_kubernetes_client(cluster_kubeconfig):
    # The kubeconfig is read with PyYAML, as the kubernetes client reads it.
    assert loaded(RUN_COMMAND, "status", "--kubeconfig", str(cluster_kubeconfig)) == {
        "yaml",
        "trainjobs.cli.watch",
    }


def test_watch_finds_its_job_before_loading_the_kubernetes_client(cluster_kubeconfig):
    code = """
import json, sys
from trainjobs.cli import main
from trainjobs.cluster import rest

watched = set(json.loads(sys.stdin.read()))
at_first_request = []
get = rest.JsonClient.get

def recording_get(self, *args, **kwargs):
    if not at_first_request:
        at_first_request.append(sorted(set(sys.modules) & watched))
    return get(self, *args, **kwargs)

rest.JsonClient.get = recording_get
main(sys.argv[1:])
print(json.dumps(at_first_request[0]))
"""
    arguments = ["watch", "alpha", "--kubeconfig", str(cluster_kubeconfig), "--timeout", "0.1s"]
    assert loaded(code, *arguments) == {"yaml", "trainjobs.cli.watch"}


def test_watch_of_an_unknown_job_loads_no_kubernetes_client(cluster_kubeconfig):
    found = loaded(RUN_COMMAND, "watch", "nope", "--kubeconfig", str(cluster_kubeconfig))
    assert found == {"yaml", "trainjobs.cli.watch"}
