"""Image pulls as the kubelet makes them, with its reasons when they fail.

Each container's ``imagePullPolicy`` decides, and the pod's ``imagePullSecrets`` give the
credentials.

The kubelet (kubernetes ``pkg/kubelet/images/image_manager.go``, ``EnsureImageExists`` and
``shouldPullImage``) pulls an image when its policy is ``Always``, or ``IfNotPresent`` and the
node lacks it; with ``Never`` an absent image is ``ErrImageNeverPull``. A failed pull is
``ErrImagePull`` with the registry's error, and the next attempts wait in ``ImagePullBackOff``
("Back-off pulling image ..."), for as long as the pod exists. A local run makes one attempt:
the same failure would repeat, so it stops there and says both reasons, with nothing started.

An image is pulled once per run, however many containers name it: ``Always`` from any of them
pulls it; else it is pulled when absent, unless every container says ``Never``.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjobs.core.errors import EnvironmentFailure
from trainjobs.engines.engine import Engine, EngineError, RegistryAccess
from trainjobs.engines.settings import CERTS_DIR, registry_cert_dir
from trainjobs.images.builder import Say
from trainjobs.images.references import registry_host
from trainjobs.images.registry_auth import auth_file_text
from trainjobs.local.cluster import ClusterPlan
from trainjobs.local.files import write_private


class ImagePullFailed(EnvironmentFailure):
    """An image could not be made present: one line with the kubelet's reason, exit 1."""


def default_pull_policy(reference: str) -> str:
    """Kubernetes' default (``pkg/apis/core/v1/defaults.go``, ``SetDefaults_Container``):
    ``Always`` when the tag is ``latest``, which ``ParseImageName`` also gives a reference with
    neither tag nor digest; ``IfNotPresent`` otherwise (a digest, or another tag)."""
    name, _, digest = reference.partition("@")
    last = name.rpartition("/")[2]
    tag = last.partition(":")[2] if ":" in last else ("" if digest else "latest")
    return "Always" if tag == "latest" else "IfNotPresent"


@dataclass
class Wanted:
    """One image a run needs, and what its containers say about pulling it."""

    reference: str
    policies: set[str] = field(default_factory=set)
    containers: list[str] = field(default_factory=list)
    """``pod P container C``, for messages (the first names the image in them)."""
    secrets: list[str] = field(default_factory=list)
    """The pods' imagePullSecrets names, in order, each once."""


def wanted_images(plan: ClusterPlan, references: set[str]) -> dict[str, Wanted]:
    """What the pods that run here say about pulling each of ``references``."""
    wanted: dict[str, Wanted] = {}
    for pod in plan.pods:
        if pod.gpu_request():
            continue  # never scheduled here: its images are not needed
        # getPullSecretsForPod (kubelet_pods.go) skips entries without a name, which the API
        # server lets through.
        names = [
            item["name"]
            for item in pod.spec.get("imagePullSecrets") or []
            if isinstance(item, dict) and isinstance(item.get("name"), str) and item["name"]
        ]
        for group in ("initContainers", "containers"):
            for container in pod.spec.get(group) or []:
                reference = container["image"]
                if reference not in references:
                    continue
                entry = wanted.setdefault(reference, Wanted(reference))
                policy = container.get("imagePullPolicy") or default_pull_policy(reference)
                entry.policies.add(policy)
                entry.containers.append(f"pod {pod.name} container {container['name']}")
                entry.secrets += [
                    name for name in dict.fromkeys(names) if name not in entry.secrets
                ]
    return wanted


def ensure_present(
    engine: Engine,
    wanted: Wanted,
    secrets: Mapping[str, Mapping[str, Any]],
    namespace: str,
    say: Say,
) -> None:
    """Make ``wanted`` present as the kubelet would, or raise :class:`ImagePullFailed`."""
    reference, where = wanted.reference, wanted.containers[0]
    present = engine.image_exists(reference)
    if "Always" not in wanted.policies and present:
        return
    if wanted.policies == {"Never"}:
        raise ImagePullFailed(
            f"{where}: ErrImageNeverPull: Container image {reference!r} is not present with "
            f"pull policy of Never; pull or build it first (`{engine.name} pull {reference}`), "
            "or set imagePullPolicy: IfNotPresent"
        )
    found = []
    for name in wanted.secrets:
        if name in secrets:
            found.append((f"Secret {name!r}", secrets[name]))
        else:
            # kubelet_pods.go, getPullSecretsForPod: a missing Secret is logged, not fatal.
            say(
                f"{where}: Unable to retrieve pull secret {namespace}/{name}, the image pull "
                "may not succeed (no image pull Secret of that name beside the job in its file)"
            )
    registry = registry_host(reference)
    say(f"{where}: Pulling image {reference!r}")
    lines: list[str] = []

    def progress(line: str) -> None:
        lines.append(line)
        say(f"  {line}")

    with tempfile.TemporaryDirectory(prefix="trainjobs-pull-") as scratch:
        auth_file = None
        if found:
            # A docker config: podman's --authfile reads it, docker's --config finds it by name.
            auth_file = Path(scratch) / "config.json"
            write_private(auth_file, auth_file_text(found))
        access = RegistryAccess(auth_file, registry_cert_dir(registry))
        try:
            engine.pull(reference, access, progress)
        except EngineError:
            reason = _reason(lines)
            raise ImagePullFailed(
                f"{where}: ErrImagePull: Failed to pull image {reference!r}: {reason}; then "
                f"ImagePullBackOff: Back-off pulling image {reference!r} (a local run does not "
                f"retry){_hint(reason, registry, engine)}"
            ) from None
    say(f"{where}: Successfully pulled image {reference!r}")


def _reason(lines: list[str]) -> str:
    """The engine's error line (podman: ``Error: ...``, docker: ``Error response ...``)."""
    errors = [line for line in lines if line.startswith("Error")]
    text = (errors or lines or ["no message"])[-1]
    return text.removeprefix("Error: ")


def _hint(reason: str, registry: str, engine: Engine) -> str:
    if "unauthorized" in reason or "authentication required" in reason:
        return (
            ": give the pod imagePullSecrets naming a kubernetes.io/dockerconfigjson Secret "
            f"beside the job in its file, or log in (`{engine.name} login {registry}`)"
        )
    if "x509" in reason or "certificate" in reason:
        return f": trust the registry's CA by putting it at {CERTS_DIR / registry / 'ca.crt'}"
    return ""
