"""The podman adapter: pods are podman pods, builds are podman (buildah) builds.

A pod is ``podman pod create`` with the pod's hostname and fixed address on the run's
network; its infra container holds the network, UTS and IPC namespaces that the pod's
containers join, as Kubernetes' pause container does. ``--no-hosts``: every container gets
the run's own hosts file instead (the cluster-DNS names of the process runtime).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

from trainjobs.engines.engine import (
    BuildRequest,
    ContainerRequest,
    Engine,
    Labelled,
    Output,
    PodRequest,
    container_flags,
    image_and_command,
    label_flags,
    plain_value,
)


class Podman(Engine):
    name = "podman"

    def build(self, request: BuildRequest, output: Output) -> None:
        args = ["build", "--layers", f"--file={request.dockerfile}"]
        args.append(f"--tag={request.tag}")
        args += [f"--build-arg={key}={value}" for key, value in sorted(request.build_args.items())]
        args += [
            f"--secret=id={key},src={plain_value(str(path), ',', 'build secret file')}"
            for key, path in sorted(request.secrets.items())
        ]
        args += [
            f"--volume={plain_value(str(host), ',:', 'build directory')}:{inside}:ro"
            for host, inside in sorted(request.volumes.items())
        ]
        args += label_flags(request.labels)
        self.stream([*args, str(request.context)], output)

    def no_dns_flags(self) -> list[str]:
        return ["--disable-dns"]

    def create_pod(self, request: PodRequest) -> int:
        infra = f"{request.name}-infra"
        self.call(
            "pod",
            "create",
            f"--name={request.name}",
            f"--infra-name={infra}",
            f"--hostname={request.hostname}",
            f"--network={request.network}",
            f"--ip={request.address}",
            "--no-hosts",
            *label_flags(request.labels),
        )
        self.call("pod", "start", request.name)
        return int(self.call("container", "inspect", "--format", "{{.State.Pid}}", infra))

    # `--ignore`: without it podman 4, given one name that is already gone among several,
    # removes none of them and still exits 0.
    def remove_pods(self, names: Sequence[str]) -> None:
        if names:
            self.call("pod", "rm", "--force", "--ignore", "--time=0", *names, check=False)

    def remove_containers(self, names: Sequence[str]) -> None:
        if names:
            self.call("rm", "--force", "--ignore", "--time=0", *names, check=False)

    def run_command(self, request: ContainerRequest) -> list[str]:
        return self.command(
            "run",
            "--rm",
            "--pull=never",
            f"--pod={request.pod}",
            *container_flags(request),
            *image_and_command(request),
        )

    def labelled(self, label: str) -> list[Labelled]:
        """The three listings are independent: asked at once."""
        listings = (
            ("pod", ["pod", "ls", "--format=json"]),
            ("container", ["ps", "--all", "--format=json"]),
            ("network", ["network", "ls", "--format=json"]),
        )
        with ThreadPoolExecutor(max_workers=len(listings)) as pool:
            answers = list(
                pool.map(
                    lambda args: self.call(*args, f"--filter=label={label}"),
                    (a for _, a in listings),
                )
            )
        found = []
        for (kind, _), answer in zip(listings, answers, strict=True):
            for entry in json.loads(answer or "[]"):
                name = entry.get("Name") or entry.get("name") or (entry.get("Names") or [""])[0]
                labels = entry.get("Labels") or entry.get("labels") or {}
                found.append(Labelled(kind, name, labels))
        return found
