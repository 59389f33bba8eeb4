"""Image references: whether one is valid, names a version tag, and is pinned by digest."""

from __future__ import annotations

import re

DIGEST_REFERENCE = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


def is_digest_pinned(reference: str) -> bool:
    """Whether ``reference`` names one image by content (``<repository>@sha256:<64 hex>``)."""
    return DIGEST_REFERENCE.fullmatch(reference) is not None


def has_version_tag(reference: str) -> bool:
    last = reference.rpartition("/")[2]
    return ":" in last and last.split(":", 1)[1] != "latest"


# The grammar of distribution/reference ``regexp.go`` (what every engine and the kubelet parse;
# the kubelet reports InvalidImageName for anything else). Anchored: never an option.
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_PATH_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_NAME = rf"(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}"
REFERENCE = re.compile(rf"(?P<name>{_NAME})(?::{_TAG})?(?:@{_DIGEST})?", re.ASCII)
NAME_LIMIT = 255
"""distribution/reference: a repository name's longest length."""


def reference_problem(reference: str) -> str | None:
    """Why ``reference`` is not an image reference an engine accepts as one, or None."""
    match = REFERENCE.fullmatch(reference)
    if match is None:
        return (
            "not a valid image reference ([REGISTRY/]REPOSITORY[:TAG][@DIGEST], lower-case "
            "repository); name the image as a registry would"
        )
    if len(match.group("name")) > NAME_LIMIT:
        return f"the repository name is longer than {NAME_LIMIT} characters"
    return None


DEFAULT_REGISTRY = "docker.io"
"""Where a reference without a registry host is pulled from (distribution/reference
``normalize.go``, ``splitDockerDomain``), as the kubelet's runtimes resolve it."""


def registry_host(reference: str) -> str:
    """The registry a reference is pulled from: its first component when that is a host
    (holds ``.`` or ``:``, or is ``localhost``), else Docker Hub (``splitDockerDomain``)."""
    first, _, rest = reference.partition("/")
    if rest and ("." in first or ":" in first or first == "localhost"):
        return first
    return DEFAULT_REGISTRY
