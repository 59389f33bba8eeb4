"""crds/ is generated from the spec models and must stay current."""

from __future__ import annotations

from tests.conftest import REPO
from trainjobs.cli import main
from trainjobs.kinds import crds


def test_checked_in_crds_match_the_models():
    on_disk = {p.name: p.read_text() for p in (REPO / "crds").glob("*.yaml")}
    assert on_disk == crds.rendered(), "crds/ is stale: run `make crds`"


def test_crds_command_writes_the_generated_files(tmp_path, capsys):
    assert main(["crds", "--out", str(tmp_path)]) == 0
    assert {p.name: p.read_text() for p in tmp_path.iterdir()} == crds.rendered()
    assert capsys.readouterr().out.splitlines() == [
        f"{tmp_path}/chainerjobs.kubeflow.org.yaml",
        f"{tmp_path}/tfjobs.kubeflow.org.yaml",
        f"{tmp_path}/pytorchjobs.kubeflow.org.yaml",
        f"{tmp_path}/mpijobs.kubeflow.org.yaml",
        f"{tmp_path}/xgboostjobs.kubeflow.org.yaml",
        f"{tmp_path}/paddlejobs.kubeflow.org.yaml",
        f"{tmp_path}/jaxjobs.kubeflow.org.yaml",
    ]


def test_tf_and_pytorch_crds_serve_every_released_version_and_store_v1():
    for source in crds.sources()[1:3]:
        versions = crds.crd(source)["spec"]["versions"]
        assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
            ("v1alpha1", True, False),
            ("v1alpha2", True, False),
            ("v1beta1", True, False),
            ("v1beta2", True, False),
            ("v1", True, True),
        ]


def test_the_mpijob_crd_serves_its_three_versions_and_stores_v2beta1():
    source = crds.sources()[3]
    versions = crds.crd(source)["spec"]["versions"]

    assert source.kind == "MPIJob"
    assert [(v["name"], v["served"], v["storage"]) for v in versions] == [
        ("v1alpha2", True, False),
        ("v1", True, False),
        ("v2beta1", True, True),
    ]


def test_each_version_pins_its_own_api_version_and_kind():
    tfjob = crds.sources()[1]
    schema = crds.structural_schema(tfjob, "v1beta1")
    assert schema["properties"]["apiVersion"] == {
        "type": "string",
        "enum": ["kubeflow.org/v1beta1"],
    }
    assert schema["properties"]["kind"] == {"type": "string", "enum": ["TFJob"]}
    replicas = schema["properties"]["spec"]["properties"]["tfReplicaSpecs"]
    assert replicas["additionalProperties"]["properties"]["restartPolicy"] == {
        "description": "Always, OnFailure, Never or ExitCode (1-127 fail the job, others are "
        "retried).",
        "type": "string",
    }


def test_crd_schema_is_structural_and_documents_our_fields():
    schema = crds.structural_schema(crds.sources()[0], "v1alpha1")
    spec = schema["properties"]["spec"]["properties"]
    assert spec["worker"]["properties"]["replicas"] == {
        "description": "Number of worker pods. Default: 1.",
        "type": "integer",
        "minimum": 1,
        "default": 1,
    }
    assert spec["master"]["properties"]["template"]["x-kubernetes-preserve-unknown-fields"]
    assert spec["workerSets"]["additionalProperties"]["required"] == ["template"]
    assert schema["properties"]["metadata"] == {"type": "object"}
    text = str(schema)
    assert "$ref" not in text and "anyOf" not in text and "title" not in text
