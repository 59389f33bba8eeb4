"""The kubeconfig reader of `status` and `watch` finds what the kubernetes client's loader
finds (server, Authorization header, CA, client certificate, TLS checks), and leaves to that
loader what it does not read itself."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
import yaml

from trainjobs.cluster.kubeconfig import Endpoint, Pem, read_endpoint

PEM = b"-----BEGIN CERTIFICATE-----\nnot checked here\n-----END CERTIFICATE-----\n"


def kubernetes_view(paths: str, context: str | None) -> dict[str, Any]:
    """What the kubernetes client's loader sets up from the same files."""
    from kubernetes import client, config

    configuration = client.Configuration()
    config.load_kube_config(
        config_file=paths,
        context=context,
        client_configuration=configuration,
        persist_config=False,
    )
    return {
        "host": configuration.host,
        "authorization": configuration.get_api_key_with_prefix("authorization"),
        "verify": configuration.verify_ssl,
        "ca": _content(configuration.ssl_ca_cert),
        "client_cert": _content(configuration.cert_file),
        "client_key": _content(configuration.key_file),
        "tls_server_name": configuration.tls_server_name,
    }


def our_view(endpoint: Endpoint | None) -> dict[str, Any]:
    assert endpoint is not None
    return {
        "host": endpoint.host,
        "authorization": endpoint.authorization,
        "verify": endpoint.verify,
        "ca": _pem(endpoint.ca),
        "client_cert": _pem(endpoint.client_cert),
        "client_key": _pem(endpoint.client_key),
        "tls_server_name": endpoint.tls_server_name,
    }


def _content(path: str | None) -> bytes | None:
    return None if path is None else Path(path).read_bytes()


def _pem(pem: Pem | None) -> bytes | None:
    if pem is None:
        return None
    return pem.data if pem.data is not None else Path(str(pem.path)).read_bytes()


def config(clusters: dict[str, Any], users: dict[str, Any], current: str | None) -> dict[str, Any]:
    document: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": name, "cluster": c} for name, c in clusters.items()],
        "users": [{"name": name, "user": u} for name, u in users.items()],
        "contexts": [
            {"name": name, "context": {"cluster": name, "user": name}} for name in clusters
        ],
    }
    if current is not None:
        document["current-context"] = current
    return document


def write(path: Path, document: dict[str, Any]) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(document))
    return str(path)


def b64(data: bytes) -> str:
    return base64.standard_b64encode(data).decode()


CASES = {
    "token over https with CA data": (
        {"c": {"server": "https://kube.example:6443/", "certificate-authority-data": b64(PEM)}},
        {"c": {"token": "abc"}},
    ),
    "token file relative to the kubeconfig": (
        {"c": {"server": "https://kube.example", "insecure-skip-tls-verify": True}},
        {"c": {"tokenFile": "secrets/token"}},
    ),
    "client certificate files relative to the cluster's file": (
        {"c": {"server": "https://kube.example", "certificate-authority": "ca.pem"}},
        {"c": {"client-certificate": "client.pem", "client-key-data": b64(b"KEY")}},
    ),
    "user name and password, TLS server name": (
        {"c": {"server": "https://10.0.0.1", "tls-server-name": "kube.example"}},
        {"c": {"username": "admin", "password": "s3cr:et"}},
    ),
    "plain http, no user": ({"c": {"server": "http://127.0.0.1:8080"}}, {}),
    "an empty token falls through to the password": (
        {"c": {"server": "http://127.0.0.1:8080"}},
        {"c": {"token": "", "username": "u", "password": "p"}},
    ),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_one_kubeconfig_reads_as_the_kubernetes_client_reads_it(tmp_path: Path, case: str):
    clusters, users = CASES[case]
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "token").write_text("from-a-file\n")
    (tmp_path / "ca.pem").write_bytes(PEM)
    (tmp_path / "client.pem").write_bytes(PEM)
    path = write(tmp_path / "config", config(clusters, users, "c"))

    assert our_view(read_endpoint(path, None)) == kubernetes_view(path, None)


def test_merged_kubeconfigs_read_as_the_kubernetes_client_merges_them(tmp_path: Path):
    # The first file's entries win; the last file's current-context wins (KubeConfigMerger).
    first = write(
        tmp_path / "a" / "config",
        config(
            {"one": {"server": "https://one.example", "certificate-authority": "ca.pem"}},
            {"one": {"token": "first"}},
            "one",
        ),
    )
    (tmp_path / "a" / "ca.pem").write_bytes(PEM)
    second = write(
        tmp_path / "b" / "config",
        config(
            {"one": {"server": "https://shadowed.example"}, "two": {"server": "http://two:80"}},
            {"one": {"token": "shadowed"}, "two": {"token": "second"}},
            "two",
        ),
    )
    paths = f"{first}:{tmp_path / 'missing'}:{second}"

    for context in (None, "one", "two"):
        assert our_view(read_endpoint(paths, context)) == kubernetes_view(paths, context)


@pytest.mark.parametrize(
    ("user", "cluster"),
    [
        ({"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "get-token"}}, {}),
        ({"auth-provider": {"name": "oidc", "config": {}}}, {}),
        ({"token": "t"}, {"certificate-authority": "no-such-file.pem"}),
    ],
    ids=["exec plugin", "auth provider", "a CA file that does not exist"],
)
def test_what_only_the_kubernetes_client_does_is_left_to_it(tmp_path: Path, user, cluster):
    path = write(
        tmp_path / "config",
        config({"c": {"server": "https://kube.example", **cluster}}, {"c": user}, "c"),
    )
    assert read_endpoint(path, None) is None


def test_a_proxy_in_the_environment_is_left_to_the_kubernetes_client(tmp_path, monkeypatch):
    path = write(tmp_path / "config", config({"c": {"server": "http://k:80"}}, {}, "c"))
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert read_endpoint(path, None) is None


def test_an_unknown_context_is_left_to_the_kubernetes_client_for_its_message(tmp_path):
    path = write(tmp_path / "config", config({"c": {"server": "http://k:80"}}, {}, "c"))
    assert read_endpoint(path, "gone") is None
