"""A kubeconfig's server and credentials, read as the kubernetes client reads them.

The kubernetes client's loader imports the whole client (its models, seconds per command)
before it reads a line. :func:`read_endpoint` reads the same files to the same result
(kubernetes-client/python ``kubernetes/config/kube_config.py``: ``KubeConfigMerger``,
``KubeConfigLoader``, ``FileOrData``) when the kubeconfig needs nothing more than a server,
its CA, a bearer token (``token`` or ``tokenFile``), a client certificate or a user name and
password. For anything else it answers None and the caller uses the kubernetes client's
loader itself: exec plugins and auth providers (whose tokens it refreshes), in-cluster
credentials, proxies, and every kubeconfig it cannot read, so that each error message stays
the one that loader gives.
"""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import yaml

PROXY_VARIABLES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy")
"""The kubernetes client's ``Configuration`` sends every request through these."""
DEFAULT_HOST = "http://localhost"
"""``Configuration().host``: a cluster entry without ``server``."""


@dataclass(frozen=True)
class Pem:
    """A certificate or key: a file's path, or the decoded ``*-data`` bytes."""

    path: str | None = None
    data: bytes | None = None


@dataclass(frozen=True)
class Endpoint:
    """What a client needs to reach the API server as the kubeconfig says."""

    host: str
    authorization: str | None = None
    """The ``Authorization`` header: ``Bearer TOKEN`` or ``Basic ...``."""
    verify: bool = True
    ca: Pem | None = None
    """None: the certifi bundle, as the kubernetes client uses it."""
    client_cert: Pem | None = None
    client_key: Pem | None = None
    tls_server_name: str | None = None


class _Unsupported(Exception):
    """Left to the kubernetes client's loader."""


@dataclass(frozen=True)
class _Entry:
    """A named cluster, user or context, and the directory of the file that defined it
    (relative paths in it are relative to that directory)."""

    value: Any
    base: str


def read_endpoint(paths: str, context: str | None) -> Endpoint | None:
    """The endpoint of ``context`` (default: the current one) in the kubeconfig file(s)
    ``paths`` (``$KUBECONFIG``'s form: several joined by ``:``); None where the kubernetes
    client's loader must be used instead."""
    if any(os.environ.get(name) for name in PROXY_VARIABLES):
        return None
    try:
        return _read(paths, context)
    except (_Unsupported, yaml.YAMLError, OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _read(paths: str, context: str | None) -> Endpoint:
    merged = _merge(paths)
    name = context if context is not None else merged["current-context"]
    chosen = _named(merged["contexts"], name).value["context"]
    user, user_base = None, ""
    if chosen.get("user") and merged["users"]:
        found = [entry for entry in merged["users"] if entry.value["name"] == chosen["user"]]
        if found:  # an unknown user is no user (``get_with_name(..., safe=True)``)
            user, user_base = found[0].value["user"], found[0].base
    cluster_entry = _named(merged["clusters"], chosen["cluster"])
    cluster = cluster_entry.value["cluster"]
    host = DEFAULT_HOST
    ca = client_cert = client_key = None
    if "server" in cluster:
        host = cluster["server"].rstrip("/")
        if host.startswith("https"):
            # ``_load_cluster_info``: the client's files too are relative to the cluster's.
            ca = _pem(cluster, "certificate-authority", cluster_entry.base)
            client_cert = _pem(user, "client-certificate", cluster_entry.base)
            client_key = _pem(user, "client-key", cluster_entry.base)
    skip = "insecure-skip-tls-verify" in cluster and cluster["insecure-skip-tls-verify"]
    return Endpoint(
        host=host,
        authorization=_authorization(user, user_base) if user else None,
        verify=not skip,
        ca=ca,
        client_cert=client_cert,
        client_key=client_key,
        tls_server_name=cluster.get("tls-server-name"),
    )


def _merge(paths: str) -> dict[str, Any]:
    """``KubeConfigMerger``: the first entry of each name wins, and the last file that sets
    ``current-context`` sets it."""
    merged: dict[str, Any] | None = None
    for path in paths.split(os.pathsep):
        if not path:
            continue
        path = os.path.expanduser(path)
        if not os.path.exists(path):
            continue
        with open(path) as file:
            config = yaml.safe_load(file)
        if not isinstance(config, dict):
            raise _Unsupported  # the loader's own message says what is wrong
        if merged is None:
            merged = {**config, "clusters": [], "contexts": [], "users": []}
        base = os.path.abspath(os.path.dirname(path))
        for item in ("clusters", "contexts", "users"):
            known = {entry.value["name"] for entry in merged[item]}
            for new in config.get(item, []) or []:
                if new["name"] not in known:
                    merged[item].append(_Entry(new, base))
                    known.add(new["name"])
        if "current-context" in config:
            merged["current-context"] = config["current-context"]
    if merged is None:
        raise _Unsupported
    return merged


def _named(entries: list[_Entry], name: Any) -> _Entry:
    found = [entry for entry in entries if entry.value["name"] == name]
    if len(found) != 1:
        raise _Unsupported
    return found[0]


def _authorization(user: Mapping[str, Any], base: str) -> str | None:
    """``_load_authentication``, in its order: an auth provider (left to the kubernetes
    client), a token, an exec plugin (likewise), a user name and password."""
    if "auth-provider" in user:
        raise _Unsupported
    token: Any = None
    if "token" in user:
        token = user["token"]
    elif "tokenFile" in user:
        with open(os.path.normpath(os.path.join(base, user["tokenFile"]))) as file:
            token = file.read()
    if token:
        return f"Bearer {token}"
    if "exec" in user:
        raise _Unsupported
    if "username" in user and "password" in user:
        pair = f"{user['username']}:{user['password']}"
        return "Basic " + base64.b64encode(pair.encode("latin-1")).decode()
    return None


def _pem(obj: Mapping[str, Any] | None, key: str, base: str) -> Pem | None:
    """``FileOrData(obj, key).as_file()``: ``KEY-data`` (base64) wins over ``KEY`` (a path,
    which must exist)."""
    if not obj:
        return None
    if f"{key}-data" in obj:
        data = obj[f"{key}-data"]
        if not data:
            return None
        try:
            content = data.encode() if isinstance(data, str) else data
            return Pem(data=base64.standard_b64decode(content))
        except binascii.Error as error:
            raise _Unsupported from error
    if key in obj:
        path = os.path.normpath(os.path.join(base, obj[key]))
        if not os.path.isfile(path):
            raise _Unsupported
        return Pem(path=path)
    return None
