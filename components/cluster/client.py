"""An API client for the cluster, found the way kubectl finds its credentials."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from trainjobs.core.errors import UserError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

    from trainjobs.cluster.rest import JsonClient


def _looks_like_path(kubeconfig: str) -> bool:
    """pulumi-kubernetes' ``kubernetes:kubeconfig`` holds either the file's content or its
    path; content is YAML or JSON and always spans several lines or starts with a brace."""
    text = kubeconfig.strip()
    return "\n" not in text and not text.startswith("{")


def load_api_client(
    kubeconfig: str | None = None, context: str | None = None, *, connections: int | None = None
) -> ApiClient:
    """An API client found the way kubectl finds one.

    Order: the given kubeconfig (content or path), else ``$KUBECONFIG`` (which may list
    several files), else ``~/.kube/config``, else the in-cluster service account. The
    configuration is private to the returned client: watchers for different clusters in one
    process must not share the kubernetes package's global default. Refreshed tokens are
    not written back into the user's kubeconfig. ``connections`` sizes the connection pool
    for a client that many threads share. A kubeconfig that cannot be read or understood is
    a UserError naming it, never a traceback.
    """
    import yaml
    from kubernetes import client, config

    from trainjobs.cluster.transport import bound
    from trainjobs.core import safe_yaml

    configuration = client.Configuration()
    try:
        if kubeconfig and not _looks_like_path(kubeconfig):
            # The stack's secret content gets the bounds every spec file gets.
            documents = safe_yaml.load_all(kubeconfig)
            data = documents[0] if len(documents) == 1 else None
            if not isinstance(data, dict):
                raise UserError("kubeconfig: the given content is not a kubeconfig mapping")
            config.load_kube_config_from_dict(
                data, context=context, client_configuration=configuration, persist_config=False
            )
        else:
            path = _kubeconfig_path(kubeconfig)
            if path is not None:
                config.load_kube_config(
                    config_file=path,
                    context=context,
                    client_configuration=configuration,
                    persist_config=False,
                )
            elif os.environ.get("KUBERNETES_SERVICE_HOST"):
                config.load_incluster_config(client_configuration=configuration)
            else:
                raise UserError(
                    "no Kubernetes credentials found: set KUBECONFIG, create ~/.kube/config, "
                    "set `pulumi config set --secret kubernetes:kubeconfig ...`, "
                    "or run inside a cluster"
                )
    except config.ConfigException as error:
        raise UserError(f"cannot load Kubernetes credentials: {error}") from error
    except safe_yaml.LimitExceeded as error:
        raise UserError(f"the given kubeconfig is not a valid kubeconfig: {error}") from error
    except (yaml.YAMLError, ValueError, TypeError, KeyError, AttributeError, OSError) as error:
        # The kubernetes package reads a malformed kubeconfig with plain dict and list
        # access, so its mistakes surface as these rather than as ConfigException.
        source = "the given kubeconfig" if kubeconfig else "the kubeconfig"
        detail = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise UserError(
            f"{source} is not a valid kubeconfig ({type(error).__name__}: {detail}); check it "
            "with `kubectl config view`"
        ) from error
    if connections is not None:
        configuration.connection_pool_maxsize = connections
    # Every request gets a deadline for all of it and a size bound (see transport).
    return bound(client.ApiClient(configuration))


def connect(kubeconfig: str | None = None, context: str | None = None) -> JsonClient:
    """A client that reads JSON from the API server :func:`load_api_client` would reach,
    with the same credentials, found in the same order.

    A kubeconfig file that names a server, its CA and a token, a client certificate or a
    password is read without the kubernetes package (:mod:`trainjobs.cluster.kubeconfig`);
    anything else (exec plugins, auth providers, in-cluster credentials, proxies, a
    kubeconfig given as content, and every kubeconfig that cannot be read, for the message)
    goes through :func:`load_api_client` as before.
    """
    from trainjobs.cluster.kubeconfig import read_endpoint
    from trainjobs.cluster.rest import JsonClient

    if kubeconfig is None or _looks_like_path(kubeconfig):
        path = _kubeconfig_path(kubeconfig)
        endpoint = read_endpoint(path, context) if path is not None else None
        if endpoint is not None:
            return JsonClient.direct(endpoint)
    return JsonClient.through(load_api_client(kubeconfig, context))


def _kubeconfig_path(kubeconfig: str | None) -> str | None:
    """The kubeconfig file(s) to read, or None when only in-cluster config is left."""
    if kubeconfig:
        path = Path(kubeconfig.strip()).expanduser()
        if not path.is_file():
            raise UserError(f"kubeconfig file {str(path)!r} does not exist")
        return str(path)
    from_env = os.environ.get("KUBECONFIG")
    if from_env:
        return from_env
    default = Path("~/.kube/config").expanduser()
    return str(default) if default.is_file() else None
