"""``runAsNonRoot``: the kubelet's rules (``verifyRunAsNonRoot``) against the image's user.

The rules alone, then a container run of an image whose user is root: the container is never
created and the run fails as the kubelet reports it (CreateContainerConfigError).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.local.container.test_isolation import IMAGE, needs_image
from tests.local.container.test_runtime import CONTAINER, left_by, single_pod, write_job
from tests.local.runs import Run
from trainjobs.local.container.non_root import non_root_problem

WHERE = '(pod: "p_default", container: c)'


def problem(image_user: str, pod: dict[str, Any] | None = None, **own: Any) -> str | None:
    container = {"name": "c", "securityContext": own}
    return non_root_problem({"securityContext": pod or {}}, container, image_user, "p_default")


@pytest.mark.parametrize("image_user", ["", "0", "0:0", "00", "+0"])
def test_an_image_running_as_uid_0_is_refused(image_user: str):
    assert problem(image_user, runAsNonRoot=True) == (
        f"container has runAsNonRoot and image will run as root {WHERE}"
    )


def test_a_non_numeric_image_user_cannot_be_verified():
    assert problem("nobody:nogroup", {"runAsNonRoot": True}) == (
        "container has runAsNonRoot and image has non-numeric user (nobody), cannot verify "
        f"user is non-root {WHERE}"
    )
    arabic_indic = "\u0661\u0660\u0660\u0660"  # int() reads it; Go's ParseInt does not
    assert problem(arabic_indic, runAsNonRoot=True) == (
        f"container has runAsNonRoot and image has non-numeric user ({arabic_indic}), cannot "
        f"verify user is non-root {WHERE}"
    )


def test_run_as_user_0_breaks_the_policy_and_another_uid_satisfies_it():
    assert problem("1000", {"runAsNonRoot": True, "runAsUser": 0}) == (
        f"container's runAsUser breaks non-root policy {WHERE}"
    )
    assert problem("", {"runAsNonRoot": True}, runAsUser=1000) is None


def test_an_image_uid_out_of_range_is_invalid():
    assert problem("-5", runAsNonRoot=True) == (
        "container has runAsNonRoot and image has an invalid user id (-5). (Must be "
        "1-(2147483647)): must be between 0 and 2147483647, inclusive " + WHERE
    )


def test_a_non_root_image_user_or_no_policy_passes():
    assert problem("1000:1000", runAsNonRoot=True) is None
    assert problem("", {"runAsNonRoot": True}, runAsNonRoot=False) is None
    assert problem("") is None


@needs_image
def test_run_as_non_root_with_a_root_image_is_not_started(tmp_path: Path):
    job = single_pod(
        "nonroot", IMAGE, ["sh", "-c", "id -u"], securityContext={"runAsNonRoot": True}
    )

    run = Run(write_job(tmp_path / "job.yaml", job), tmp_path / "run", *CONTAINER)

    assert run.exit_code == 1
    assert (run.summary["outcome"], run.summary["reason"], run.summary["message"]) == (
        "Failed",
        "CreateContainerConfigError",
        "container has runAsNonRoot and image will run as root "
        '(pod: "nonroot-master-0_default", container: pytorch)',
    )
    assert not (tmp_path / "run" / "logs" / "nonroot-master-0.log").exists()
    assert left_by(run) == []
