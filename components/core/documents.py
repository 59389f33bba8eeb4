"""Reading job spec files: one YAML mapping per file, every failure a user error."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from trainjobs.core import safe_yaml
from trainjobs.core.errors import Problem, SpecError, UserError

RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")
"""Kubeflow Trainer's training runtimes: documents that may go beside a TrainJob in its file."""
PULL_SECRET_TYPES = {
    "kubernetes.io/dockerconfigjson": ".dockerconfigjson",
    "kubernetes.io/dockercfg": ".dockercfg",
}
"""Image pull Secrets' types -> the key of their docker config (core/v1
``SecretTypeDockerConfigJson``, ``SecretTypeDockercfg``): such Secrets may go beside any job
in its file, for the pods' ``imagePullSecrets`` in local runs."""


def is_pull_secret(document: Any) -> bool:
    """Whether a document of a job's file is an image pull Secret."""
    return (
        isinstance(document, dict)
        and document.get("kind") == "Secret"
        and document.get("type") in PULL_SECRET_TYPES
    )


class UnreadableFile(UserError):
    """A YAML file that cannot be read, decoded or parsed within the bounds."""

    def __init__(self, source: str, problem: str) -> None:
        super().__init__(f"{source}: {problem}")
        self.source = source
        self.problem = problem


def read_text(path: str | Path) -> str:
    """A file's text, bounded in size and decoded as UTF-8."""
    source = str(path)
    if "\0" in source:
        raise UnreadableFile(source.replace("\0", "\\0"), "a file name cannot hold a NUL character")
    try:
        with open(path, "rb") as handle:
            data = handle.read(safe_yaml.MAX_BYTES + 1)
    except OSError as error:
        raise UnreadableFile(source, f"cannot read file: {error.strerror}") from None
    if len(data) > safe_yaml.MAX_BYTES:
        raise UnreadableFile(
            source,
            f"larger than {safe_yaml.MAX_BYTES} bytes, the most the Kubernetes API server "
            "accepts in one request; a job spec is far smaller",
        )
    try:
        return safe_yaml.decode(data)
    except UnicodeDecodeError as error:
        line = data[: error.start].count(b"\n") + 1
        raise UnreadableFile(
            source,
            f"not UTF-8 text (byte 0x{data[error.start]:02x} on line {line}); save the file "
            "as UTF-8",
        ) from None


def load_documents(path: str | Path) -> list[Any]:
    """Every non-empty YAML document of a file, read within :mod:`safe_yaml`'s bounds."""
    text = read_text(path)
    try:
        return [doc for doc in safe_yaml.load_all(text) if doc is not None]
    except safe_yaml.LimitExceeded as error:
        raise UnreadableFile(str(path), str(error)) from None
    except yaml.YAMLError as error:
        raise UnreadableFile(str(path), f"not valid YAML: {safe_yaml.describe(error)}") from None


def load_mapping(path: str | Path) -> dict[str, Any]:
    """A file of one YAML mapping (or an empty file: an empty mapping), e.g. a stack file."""
    documents = load_documents(path)
    if not documents:
        return {}
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise UnreadableFile(str(path), "expected one YAML mapping")
    return documents[0]


def load_file(path: str | Path) -> dict[str, Any]:
    """Read a job file: its one YAML document, or, for several, a List of them as kubectl
    reads a file of several objects (the job and what a ``kubectl apply`` of the file creates
    beside it, :func:`trainjobs.kinds.registry.parse_job` tells them apart). Image pull Secrets
    beside the job are the local run's (:mod:`trainjobs.images.registry_auth`). Unreadable or
    non-mapping files are user errors."""
    try:
        documents = load_documents(path)
    except UnreadableFile as error:
        raise SpecError(error.source, [Problem("", error.problem)]) from None
    documents = [document for document in documents if not is_pull_secret(document)]
    if len(documents) > 1 and all(isinstance(doc, dict) for doc in documents):
        return {"apiVersion": "v1", "kind": "List", "items": documents}
    if len(documents) != 1 or not isinstance(documents[0], dict):
        raise SpecError(
            str(path), [Problem("", "expected exactly one YAML mapping (one job per file)")]
        )
    return documents[0]


RUNTIME_SUFFIXES = (".yaml", ".yml")


def load_runtime_files(paths: list[str]) -> tuple[list[tuple[dict[str, Any], str]], list[Problem]]:
    """The runtime documents of ``paths`` (files, or directories of ``*.yaml`` and ``*.yml``
    files, read in name order), each with the file it came from; a warning for each other
    document (a directory of Trainer's manifests holds its kustomization). A path that does
    not exist is a user error."""
    documents: list[tuple[dict[str, Any], str]] = []
    warnings: list[Problem] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files = sorted(p for p in path.iterdir() if p.suffix in RUNTIME_SUFFIXES)
        elif path.exists():
            files = [path]
        else:
            raise UserError(
                f"--runtimes {given!r}: no such file or directory; name a runtime file or a "
                "directory of them"
            )
        for file in files:
            for document in load_documents(file):
                kind = document.get("kind") if isinstance(document, dict) else None
                if isinstance(document, dict) and kind in RUNTIME_KINDS:
                    documents.append((document, str(file)))
                    continue
                what = f"a {kind}" if isinstance(kind, str) else "a document without kind"
                warnings.append(
                    Problem(
                        str(file),
                        f"not a ClusterTrainingRuntime or TrainingRuntime ({what}): left out",
                    )
                )
    return documents, warnings
