"""The docker adapter: a pod is a pause container whose namespaces its containers join.

Docker has no pods, so this is what the kubelet's dockershim did: one infra container per
pod (``registry.k8s.io/pause``) owns the network (with the pod's address and hostname) and
IPC namespaces, and every container of the pod joins them with ``--network container:<infra>``
and ``--ipc container:<infra>``; a container that joins another's network takes its hostname
too. Builds use BuildKit (``docker build`` with ``RUN --mount=type=secret``); docker cannot mount
host directories into a build, so build settings that name local directories need podman.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence

from trainjobs.core.errors import UserError
from trainjobs.engines.engine import (
    BuildRequest,
    ContainerRequest,
    Engine,
    EngineError,
    Labelled,
    Output,
    PodRequest,
    RegistryAccess,
    container_flags,
    image_and_command,
    label_flags,
    plain_value,
)

PAUSE_IMAGE = "registry.k8s.io/pause:3.10"
"""The infra container's image, as the kubelet's (it pulls it like any other image)."""
POD_LABEL = "io.trainjobs.pod"
"""On the infra container and every container of a pod: the pod's name."""


class Docker(Engine):
    name = "docker"

    def build(self, request: BuildRequest, output: Output) -> None:
        if request.volumes:
            listed = ", ".join(str(path) for path in sorted(request.volumes))
            raise UserError(
                f"docker cannot mount the local directories the build settings name ({listed}) "
                "into a build: serve them over HTTP (an index URL) or build with podman"
            )
        # BuildKit: RUN --mount=type=secret; no provenance attestation (it records build args).
        args = ["buildx", "build", "--load", "--provenance=false", f"--file={request.dockerfile}"]
        args.append(f"--tag={request.tag}")
        args += [f"--build-arg={key}={value}" for key, value in sorted(request.build_args.items())]
        args += [
            f"--secret=id={key},src={plain_value(str(path), ',', 'build secret file')}"
            for key, path in sorted(request.secrets.items())
        ]
        args += label_flags(request.labels)
        self.stream([*args, str(request.context)], output)

    def pull(self, reference: str, access: RegistryAccess, output: Output) -> None:
        self.forget_images()
        self.stream([*self._config_flags(access), "pull", "--", reference], output)

    def push(self, source: str, destination: str, access: RegistryAccess, output: Output) -> str:
        """``docker push`` pushes a tag (made first) and prints the digest in its last line
        (``<tag>: digest: sha256:... size: N``, docker/cli ``cli/command/image/push.go``)."""
        self.call("tag", source, destination)
        lines: list[str] = []

        def keep(line: str) -> None:
            lines.append(line)
            output(line)

        self.stream([*self._config_flags(access), "push", "--", destination], keep)
        found = [line.split(" digest: ", 1)[1].split()[0] for line in lines if " digest: " in line]
        if not found:
            raise EngineError(f"`docker push {destination}` printed no digest")
        return found[-1]

    def _config_flags(self, access: RegistryAccess) -> list[str]:
        """The client's credentials come from a config directory (``--config``, before the
        command), holding the auth file as ``config.json``; the daemon trusts registries' CAs
        from its own ``/etc/docker/certs.d`` only, so ``cert_dir`` cannot be passed on."""
        if access.auth_file is None:
            return []
        return [f"--config={access.auth_file.parent}"]

    def create_pod(self, request: PodRequest) -> int:
        self.call(
            "run",
            "--detach",
            f"--name={request.name}",
            f"--hostname={request.hostname}",
            f"--network={request.network}",
            f"--ip={request.address}",
            "--ipc=shareable",
            *label_flags({**request.labels, POD_LABEL: request.name}),
            PAUSE_IMAGE,
        )
        return int(self.call("container", "inspect", "--format", "{{.State.Pid}}", request.name))

    def _pod_members(self, name: str) -> list[str]:
        listed = self.call("ps", "--all", "--quiet", f"--filter=label={POD_LABEL}={name}")
        return listed.split()

    def remove_pods(self, names: Sequence[str]) -> None:
        members = [member for name in names for member in self._pod_members(name)]
        if members:
            self.call("rm", "--force", *members, check=False)

    def run_command(self, request: ContainerRequest) -> list[str]:
        labels = {**request.labels, POD_LABEL: request.pod}
        flags = container_flags(dataclasses.replace(request, labels=labels))
        return self.command(
            "run",
            "--rm",
            "--pull=never",
            f"--network=container:{request.pod}",
            f"--ipc=container:{request.pod}",
            *flags,
            *image_and_command(request),
        )

    def labelled(self, label: str) -> list[Labelled]:
        found = []
        for line in self.call(
            "ps", "--all", "--format={{json .}}", f"--filter=label={label}"
        ).splitlines():
            entry = json.loads(line)
            labels = dict(
                item.split("=", 1) for item in (entry.get("Labels") or "").split(",") if "=" in item
            )
            kind = "pod" if labels.get(POD_LABEL) == entry["Names"] else "container"
            found.append(Labelled(kind, entry["Names"], labels))
        for line in self.call(
            "network", "ls", "--format={{json .}}", f"--filter=label={label}"
        ).splitlines():
            entry = json.loads(line)
            networks = json.loads(self.call("network", "inspect", entry["Name"]))
            found.append(Labelled("network", entry["Name"], networks[0].get("Labels") or {}))
        return found

    def network_subnets(self) -> list[str]:
        """``network ls`` shows no subnets: each network's IPAM configuration is inspected."""
        names = self.call("network", "ls", "--format={{.Name}}").split()
        if not names:
            return []
        inspected = json.loads(self.call("network", "inspect", *names) or "[]")
        return [
            config["Subnet"]
            for network in inspected
            for config in (network.get("IPAM") or {}).get("Config") or []
            if config.get("Subnet")
        ]
