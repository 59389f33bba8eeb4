"""Containers as host processes: in-image paths mapped to files on this machine.

A container sees two kinds of paths that do not exist on the host: files its image carries
(``/train_mnist.py``, the declared :class:`~trainjobs.images.declarations.Image` files) and volume
mounts (``/etc/trainjobs`` from the assets ConfigMap, ``/opt/trainjobs/bin`` from an
emptyDir). A local run maps both by **rewriting** the container's command, args and env
values: a path is replaced where it appears as a whole path (an argument, an env value, or a
word inside a shell command line such as ``sh -c "python3 /train_mnist.py"``); a path below a
mounted directory keeps its tail (``/etc/trainjobs/hostfile`` ->
``<run>/pods/<pod>/volumes/trainjobs-assets/hostfile``). Every other path is the host's own:
the host's ``/usr/bin/mpiexec`` and ``sh`` stand in for the image's, and ``python3`` is the
interpreter running trainjobs (its directory comes first on PATH), which is why the images'
Python packages are pinned in ``requirements.txt``.

Why rewriting rather than bind mounts in a private mount namespace: a bind mount needs a
mount point at the in-image path on the host's root filesystem (``/train_mnist.py`` does not
exist there), so exact paths would mean an overlay root per pod, which is a container runtime's
job; rewriting needs no root, leaves the host untouched and works the same with and without
network namespaces. What it cannot reach is a path a program builds at run time (a script
that opens ``/etc/trainjobs/hostfile`` by a name it computed); the generated assets take every
path from the command line or the environment, so they run unchanged.

Kubernetes behaviour reproduced here: ``command`` replaces the image entrypoint and ``args``
follow it; ``$(VAR)`` in command and args expands from the container's env (``$$`` escapes);
container env overrides the image's ENV; ``fieldRef`` and ``configMapKeyRef`` env sources;
configMap volumes honour ``defaultMode`` and ``items``. Not reproduced: securityContext (processes
run as the invoking user), resource limits, image pull. Unsupported sources fail up front with
the field named.
"""

from __future__ import annotations

import os
import posixpath
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from trainjobs.core.errors import UserError
from trainjobs.images.declarations import Image
from trainjobs.local.files import inside

_VARIABLE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)")


@dataclass(frozen=True)
class Mapping:
    """One in-container path and the host path standing in for it."""

    container_path: str
    host_path: Path
    directory: bool


class PathMap:
    """Rewrites in-container paths to host paths (see the module docstring for the rules)."""

    def __init__(self, mappings: list[Mapping]) -> None:
        self.mappings = {mapping.container_path: mapping for mapping in mappings}
        alternatives = []
        # Longest first, so /etc/trainjobs/hostfile wins over /etc/trainjobs when both map.
        for mapping in sorted(mappings, key=lambda m: len(m.container_path), reverse=True):
            tail = r"(?=/|[^\w.-]|$)" if mapping.directory else r"(?![\w./-])"
            alternatives.append(re.escape(mapping.container_path) + tail)
        self._pattern = (
            re.compile(r"(?<![\w./~-])(?:" + "|".join(alternatives) + ")") if alternatives else None
        )

    def rewrite(self, text: str) -> str:
        if self._pattern is None:
            return text
        return self._pattern.sub(lambda m: str(self.mappings[m.group(0)].host_path), text)

    def host(self, container_path: str) -> Path | None:
        """The host path for an in-container path, if it is mapped. The path is normalised
        first, as the container's kernel would resolve it: ``/mnt/../etc`` is not below
        ``/mnt``, so it never maps into (or out of) the volume mounted there."""
        container_path = posixpath.normpath(container_path)
        for prefix, mapping in sorted(self.mappings.items(), key=lambda i: -len(i[0])):
            if container_path == prefix:
                return mapping.host_path
            if mapping.directory and container_path.startswith(prefix.rstrip("/") + "/"):
                return mapping.host_path / container_path[len(prefix.rstrip("/")) + 1 :]
        return None


def expand_variables(text: str, env: dict[str, str]) -> str:
    """Kubernetes' $(VAR) expansion: unknown variables stay as written, $$ is a literal $."""

    def substitute(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        return env.get(match.group(1), match.group(0))

    return _VARIABLE.sub(substitute, text)


@dataclass(frozen=True)
class PodContext:
    """What a container's env sources may refer to (the downward API, ConfigMaps)."""

    pod: str
    namespace: str
    address: str
    node: str
    service_account: str
    labels: dict[str, str]
    annotations: dict[str, str]
    config_maps: dict[str, dict[str, str]]
    secrets: dict[str, dict[str, str]] = field(default_factory=dict)
    """The Secrets the run provides (given beside the job, its ssh key pair): name -> key ->
    value."""


def container_env(
    container: dict[str, Any],
    image_env: dict[str, str],
    base: dict[str, str],
    context: PodContext,
    where: str,
) -> dict[str, str]:
    """base < image ENV < the container's env, each value resolved as the kubelet does."""
    env = {**base, **image_env}
    # The kubelet sets envFrom's variables first, then env's over them (kubernetes
    # pkg/kubelet/kubelet_pods.go `makeEnvironmentVariables`).
    for index, source in enumerate(container.get("envFrom") or []):
        env.update(_env_from(source, context, f"{where}.envFrom[{index}]"))
    for index, item in enumerate(container.get("env") or []):
        name = item["name"]
        if item.get("valueFrom") is not None:
            env[name] = _env_source(item["valueFrom"], context, f"{where}.env[{index}]")
        else:
            env[name] = expand_variables(str(item.get("value") or ""), env)
        if "\0" in env[name]:
            raise UserError(
                f"{where}.env[{index}].value: contains a NUL character, which no process "
                "environment can hold"
            )
    return env


def _env_source(source: dict[str, Any], context: PodContext, where: str) -> str:
    if "fieldRef" in source:
        path = source["fieldRef"]["fieldPath"]
        fields = {
            "metadata.name": context.pod,
            "metadata.namespace": context.namespace,
            "status.podIP": context.address,
            "status.hostIP": context.address,
            "spec.nodeName": context.node,
            "spec.serviceAccountName": context.service_account,
        }
        if path in fields:
            return fields[path]
        match = re.fullmatch(r"metadata\.(labels|annotations)\['([^']+)'\]", path)
        if match:
            values = context.labels if match.group(1) == "labels" else context.annotations
            return values.get(match.group(2), "")
        raise UserError(f"{where}.valueFrom.fieldRef: {path!r} is not supported by local runs")
    if "configMapKeyRef" in source:
        ref = source["configMapKeyRef"]
        data = context.config_maps.get(ref["name"])
        if data is None or ref["key"] not in data:
            if ref.get("optional"):
                return ""
            raise UserError(f"{where}.valueFrom: ConfigMap {ref['name']}/{ref['key']} not found")
        return data[ref["key"]]
    if "secretKeyRef" in source:
        ref = source["secretKeyRef"]
        data = context.secrets.get(ref["name"])
        if data is None or ref["key"] not in data:
            if ref.get("optional"):
                return ""
            raise UserError(
                f"{where}.valueFrom: Secret {ref['name']}/{ref['key']} not found: local runs "
                "provide the Secrets given beside the job in its file"
            )
        return data[ref["key"]]
    raise UserError(
        f"{where}.valueFrom: only fieldRef, configMapKeyRef and secretKeyRef are supported locally"
    )


ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")
"""A name envFrom may set (apimachinery pkg/util/validation `IsEnvVarName`, which the kubelet
checks each key against): the kubelet skips other keys."""


def _env_from(source: dict[str, Any], context: PodContext, where: str) -> dict[str, str]:
    """One envFrom source's variables: every key of its ConfigMap or Secret that makes a
    variable name, with the prefix (kubelet_pods.go `makeEnvironmentVariables`)."""
    if source.get("configMapRef") is not None:
        ref, found, what = source["configMapRef"], context.config_maps, "ConfigMap"
    elif source.get("secretRef") is not None:
        ref, found, what = source["secretRef"], context.secrets, "Secret"
    else:
        raise UserError(f"{where}: names neither a configMapRef nor a secretRef")
    data = found.get(ref.get("name"))
    if data is None:
        if ref.get("optional"):
            return {}
        raise UserError(
            f"{where}: {what} {ref.get('name')!r} not found: local runs provide the "
            f"{what}s the job creates and those given beside it in its file"
        )
    prefix = source.get("prefix") or ""
    return {prefix + key: value for key, value in data.items() if ENV_NAME.fullmatch(prefix + key)}


def path_map(
    container: dict[str, Any], image: Image, volume_dirs: dict[str, Path], where: str
) -> PathMap:
    """The image's declared files plus the container's volume mounts."""
    mappings = [Mapping(file.path, file.local_path, directory=False) for file in image.files]
    for index, mount in enumerate(container.get("volumeMounts") or []):
        volume = volume_dirs.get(mount["name"])
        if volume is None:
            raise UserError(
                f"{where}.volumeMounts[{index}]: volume {mount['name']!r} is not defined"
            )
        host = inside(volume, mount["subPath"]) if mount.get("subPath") else volume
        mappings.append(Mapping(mount["mountPath"].rstrip("/") or "/", host, host.is_dir()))
    return PathMap(mappings)


def container_argv(
    container: dict[str, Any], image: Image, env: dict[str, str], paths: PathMap, where: str
) -> list[str]:
    """What the container runs, by Kubernetes' rules: ``command`` replaces the image's
    ENTRYPOINT and drops its CMD; ``args`` alone replace the CMD."""
    if container.get("command"):
        argv = [*container["command"], *(container.get("args") or [])]
    elif container.get("args"):
        argv = [*image.entrypoint, *container["args"]]
    else:
        argv = [*image.entrypoint, *image.cmd]
    if not argv:
        raise UserError(
            f"{where}.command: the container gives no command and image {image.reference} "
            "declares no ENTRYPOINT or CMD, so nothing would run; give the command"
        )
    argv = [paths.rewrite(expand_variables(str(arg or ""), env)) for arg in argv]
    if any("\0" in arg for arg in argv):
        raise UserError(
            f"{where}.command: contains a NUL character, which no process argument can hold"
        )
    return argv


def check_command(argv: list[str], env: dict[str, str], image: Image, where: str) -> None:
    """Fail up front, naming how to get it, if a program a container finds on PATH is missing.

    Programs named by path are not checked: they may be written at run time (kubectl lands in
    an emptyDir when the master's first init container runs).
    """
    program = argv[0]
    if "/" in program or shutil.which(program, path=env["PATH"]):
        return
    hint = (
        f"image {image.reference} installs it with the Debian packages "
        f"{' '.join(image.apt_packages)}: run `make system-deps` as root"
        if image.apt_packages
        else f"declare it among the files of image {image.reference} (your own images: in "
        "trainjobs-images.yaml beside the job), or run the job with --runtime container"
    )
    raise UserError(
        f"{where}: {shlex.quote(program)} is not on this machine (PATH={env['PATH']}); {hint}"
    )


def materialise_config_map(
    target: Path, data: dict[str, str], mode: int, items: list[dict[str, Any]] | None
) -> None:
    """A configMap (or secret) volume as the kubelet writes it: one file per key (or per listed
    item), each inside the volume's directory. Each file is created readable by its owner only
    and then given its mode (never setuid, setgid or sticky), so that a key is never readable
    by others, even for a moment."""
    target.mkdir(parents=True, exist_ok=True)
    chosen = [
        (item["key"], item["path"], mode if item.get("mode") is None else item["mode"])
        for item in items or []
    ] or [(key, key, mode) for key in data]
    for key, relative, file_mode in chosen:
        path = inside(target, relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
                handle.write(data[key])
        except OSError as error:
            # A full disk fails the write or the close: the error then names no file.
            raise OSError(error.errno, error.strerror, str(path)) from None
        path.chmod(file_mode & 0o777)
