"""Registry credentials from image pull Secrets, as the kubelet reads them.

A pod's ``imagePullSecrets`` name Secrets of type ``kubernetes.io/dockerconfigjson`` (key
``.dockerconfigjson``: ``{"auths": {registry: {...}}}``) or the older
``kubernetes.io/dockercfg`` (key ``.dockercfg``: the ``auths`` object alone); the kubelet reads
both (kubernetes ``pkg/credentialprovider/secrets/secrets.go``, ``MakeDockerKeyring``). A local
run finds them beside the job in its file (:func:`pull_secrets`) and hands the engine one
docker config with their registries (:func:`auth_file_text`).
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from trainjobs.core.documents import PULL_SECRET_TYPES, is_pull_secret, load_documents
from trainjobs.core.errors import UserError


def pull_secrets(path: str | Path) -> dict[str, dict[str, Any]]:
    """The image pull Secrets in a job's file, by name."""
    found: dict[str, dict[str, Any]] = {}
    for index, document in enumerate(load_documents(path)):
        if is_pull_secret(document):
            metadata = document.get("metadata")
            name = metadata.get("name") if isinstance(metadata, dict) else None
            if not isinstance(name, str) or not name:
                raise UserError(
                    f"{path}: document {index}: a Secret needs metadata.name (got {name!r}); "
                    "name it as the pods' imagePullSecrets do"
                )
            found[name] = document
    return found


def registry_auths(secret: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The ``auths`` of one pull Secret: ``data`` (base64, as the API stores it) or
    ``stringData`` (plain, merged over ``data`` by the API server)."""
    key = PULL_SECRET_TYPES[secret["type"]]
    text = (secret.get("stringData") or {}).get(key)
    if text is None:
        encoded = (secret.get("data") or {}).get(key)
        if not isinstance(encoded, str):
            raise UserError(f"{where}: data[{key!r}] is missing; put the docker config there")
        try:
            text = base64.b64decode(encoded, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            raise UserError(
                f"{where}: data[{key!r}] is not base64 of UTF-8 text; encode the docker "
                "config with base64 -w0"
            ) from None
    try:
        config = json.loads(text)
    except json.JSONDecodeError as error:
        raise UserError(f"{where}: {key} is not valid JSON ({error.msg})") from None
    auths = config.get("auths") if key == ".dockerconfigjson" else config
    if not isinstance(auths, dict):
        raise UserError(
            f"{where}: {key} must be a docker config with an 'auths' object (registry -> "
            f"credentials); got {type(auths).__name__}"
        )
    return auths


def auth_file_text(secrets: list[tuple[str, Mapping[str, Any]]]) -> str:
    """One docker config holding every named Secret's registries; the first Secret that
    names a registry wins, as the kubelet tries a pod's pull secrets in order."""
    merged: dict[str, Any] = {}
    for where, secret in secrets:
        for registry, credentials in registry_auths(secret, where).items():
            merged.setdefault(registry, credentials)
    return json.dumps({"auths": merged}, indent=1, sort_keys=True)
