"""InfraStack reads the infra stack through the public StackReference API: a program awaits its
pool and image pins in the entrypoint it gives ``pulumi.run``, which the offline preview runs
as the Python language host does (after the program's module code)."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import REPO
from trainjobs.core.errors import UserError
from trainjobs.review.preview import run_preview

INFRA = "org/trainjobs-infra/gpu-a100"

PROGRAM = """
import pulumi
import trainjobs

infra = trainjobs.InfraStack("org/trainjobs-infra/gpu-a100")


async def main() -> dict[str, object]:
    pool = await infra.gpu_pool()
    images = await infra.images()
    return {"nodeSelector": pool.node_selector, "images": images}


pulumi.export("module", "ran first")
pulumi.run(main)
"""


def project(root: Path, program: str, references: dict | None) -> Path:
    root.mkdir(parents=True)
    (root / "__main__.py").write_text(program, encoding="utf-8")
    shutil.copy(REPO / "Pulumi.yaml", root / "Pulumi.yaml")
    (root / "Pulumi.test.yaml").write_text(yaml.safe_dump({"config": {}}), encoding="utf-8")
    if references is not None:
        (root / "stack-references.json").write_text(json.dumps(references), encoding="utf-8")
    return root


def test_a_program_awaits_the_pool_and_the_pins_of_the_infra_stack(tmp_path):
    references = json.loads((REPO / "examples" / "sweep" / "stack-references.json").read_text())
    result = run_preview("test", project(tmp_path / "p", PROGRAM, references))
    assert result.outputs == {
        "module": "ran first",
        "nodeSelector": {"trainjobs.io/gpu-pool": "a100"},
        "images": references[INFRA]["images"],
    }
    assert [(r.type, r.name) for r in result.resources] == [("pulumi:pulumi:StackReference", INFRA)]


def test_a_stack_without_pools_is_a_clear_error_in_the_program(tmp_path):
    with pytest.raises(UserError) as error:
        run_preview("test", project(tmp_path / "p", PROGRAM, {INFRA: {}}))
    assert str(error.value) == (
        "stack org/trainjobs-infra/gpu-a100 exports no GPU pool (schedulingProfiles is None); "
        "deploy the infra stack with trainjobs-infra:pools first"
    )


def test_other_stacks_are_read_through_pulumis_public_api_only():
    """No private SDK function (such as ``_sync_await``) where a program reads a stack."""
    private = []
    for name in ("infra_stack.py", "program.py"):
        path = REPO / "components" / "deploy" / name
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pulumi"):
                private += [
                    f"{path.name}: {node.module}.{alias.name}"
                    for alias in node.names
                    if alias.name.startswith("_")
                ]
    assert private == []
