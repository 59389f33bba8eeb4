"""Small documents of the replica-typed kinds, and the lines a refused one gets."""

from __future__ import annotations

from typing import Any

import yaml

from trainjobs.cli import main
from trainjobs.kinds.registry import JobDefinition, parse_job


def replica(container: str, replicas: int | None = 1, **fields: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {"spec": {"containers": [{"name": container, "image": "img:1"}]}},
        **fields,
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return spec


def job(kind: str, replica_map: str, **replica_specs: Any) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": "j"},
        "spec": {replica_map: replica_specs},
    }


def parse(document: dict[str, Any]) -> JobDefinition:
    return parse_job(document, "job.yaml")


def env_of(definition: JobDefinition, workload: str, container: int = 0) -> list[dict[str, Any]]:
    node = next(n for n in definition.graph.nodes if n.name == workload and n.kind != "Service")
    return node.manifest["spec"]["template"]["spec"]["containers"][container].get("env", [])


def refused(document: dict[str, Any], tmp_path: Any, capsys: Any) -> list[str]:
    """The problem lines of `trainjobs validate` on ``document``, which must exit 2."""
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(document))
    assert main(["validate", str(spec)]) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return [
        line.strip() for line in err.splitlines()[1:] if not line.strip().startswith("warning:")
    ]
