"""Which property changes make pulumi-kubernetes replace an object rather than update it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from trainjobs.review.properties import PropertyPath
from trainjobs.review.stack_file import stack_settings

# Replace-on-change inputs of dynamic resources, from their providers' `diff` (kept in step
# with trainjobs.deploy.completion.REPLACE_ON by a test; not imported, to keep the CLI light).
DYNAMIC_REPLACE_ON: dict[str, tuple[str, ...]] = {
    "pulumi-python:dynamic/trainjobs:JobCompletion": ("context",),
}


# pulumi-kubernetes' replace-on-change properties (JSONPath-like, `[*]` = any list item), per
# apiVersion and kind, for the kinds trainjobs renders and the workload kinds next to them.
# `.metadata.name` and `.metadata.namespace` apply to every kind. The provider also lists each
# selector's sub-fields; a prefix match on `.spec.selector` already covers them.
_STATEFULSET = (
    ".spec.podManagementPolicy",
    ".spec.revisionHistoryLimit",
    ".spec.selector",
    ".spec.serviceName",
    ".spec.volumeClaimTemplates",
)


_JOB = (".spec.completions", ".spec.parallelism", ".spec.selector", ".spec.template")


_ROLE_BINDING = (".roleRef",)


REPLACE_ON_CHANGE: dict[tuple[str, str], tuple[str, ...]] = {
    ("apps/v1", "StatefulSet"): _STATEFULSET,
    ("apps/v1beta2", "StatefulSet"): _STATEFULSET,
    ("apps/v1beta1", "StatefulSet"): _STATEFULSET,
    ("apps/v1", "Deployment"): (".spec.selector",),
    ("apps/v1", "DaemonSet"): (".spec.selector",),
    ("batch/v1", "Job"): _JOB,
    ("v1", "Service"): (".spec.clusterIP",),
    ("v1", "PersistentVolumeClaim"): (
        ".spec.accessModes",
        ".spec.selector",
        ".spec.storageClassName",
        ".spec.volumeName",
    ),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): _ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): _ROLE_BINDING,
}


_IDENTITY = (".metadata.name", ".metadata.namespace")


@dataclass(frozen=True)
class ProviderSettings:
    """The pulumi-kubernetes provider options that change what forces a replacement.

    Both default to off in pulumi-kubernetes 4.x: a ConfigMap's `data`/`binaryData` or a
    Secret's `data`/`stringData` change replaces the object unless the stack sets
    `kubernetes:enableConfigMapMutable` / `kubernetes:enableSecretMutable` (or the environment
    sets `PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE` / `PULUMI_K8S_ENABLE_SECRET_MUTABLE`). An object
    marked `immutable: true` is replaced either way.
    """

    config_map_mutable: bool = False
    secret_mutable: bool = False

    @classmethod
    def from_stack(cls, project_dir: Path, stack: str) -> ProviderSettings:
        config = _raw_stack_config(project_dir / f"Pulumi.{stack}.yaml")

        def enabled(key: str, variable: str) -> bool:
            value = config.get(f"kubernetes:{key}", os.environ.get(variable))
            return str(value).lower() == "true"

        return cls(
            config_map_mutable=enabled(
                "enableConfigMapMutable", "PULUMI_K8S_ENABLE_CONFIGMAP_MUTABLE"
            ),
            secret_mutable=enabled("enableSecretMutable", "PULUMI_K8S_ENABLE_SECRET_MUTABLE"),
        )


def replace_on_change(manifest: dict[str, Any], settings: ProviderSettings) -> tuple[str, ...]:
    """The properties whose change makes pulumi-kubernetes replace this object."""
    api_version, kind = manifest.get("apiVersion", ""), manifest.get("kind", "")
    immutable = manifest.get("immutable") is True
    paths = _IDENTITY + REPLACE_ON_CHANGE.get((api_version, kind), ())
    if (api_version, kind) == ("v1", "Secret"):
        paths += (".type",)
        if immutable or not settings.secret_mutable:
            paths += (".stringData", ".data")
    if (api_version, kind) == ("v1", "ConfigMap") and (
        immutable or not settings.config_map_mutable
    ):
        paths += (".binaryData", ".data")
    return paths


def _rule_tokens(rule: str) -> tuple[str, ...]:
    return tuple(rule.replace("[*]", ".*").strip(".").split("."))


def _rule_matches(rule: str, path: PropertyPath, value: Any) -> bool:
    """Whether a change at `path` (new value `value`) touches `rule`.

    As in the provider, the rule is looked up in the changed value shaped by its path: it
    matches a change at or under it, or a change above it whose new value contains it.
    """
    tokens = _rule_tokens(rule)
    for index, token in enumerate(tokens):
        if index == len(path):
            return _contains(value, tokens[index:])
        part = path[index]
        if (token == "*" and not isinstance(part, int)) or (token != "*" and part != token):
            return False
    return True


def _contains(value: Any, tokens: tuple[str, ...]) -> bool:
    if not tokens:
        return True
    token, rest = tokens[0], tokens[1:]
    if token == "*":
        return isinstance(value, list) and any(_contains(item, rest) for item in value)
    return isinstance(value, dict) and token in value and _contains(value[token], rest)


def _raw_stack_config(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    return {
        (key if ":" in key else f"trainjobs:{key}"): value
        for key, value in stack_settings(path).items()
    }
