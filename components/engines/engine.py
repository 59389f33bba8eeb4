"""The container engine interface both adapters implement and its requests.

Like the Kubeflow Trainer SDK's container backend (``backends/container/adapters/``), the
callers (image builds, the container runtime) speak to :class:`Engine` only; each adapter
turns a request into its engine's command line. Everything an engine creates for trainjobs
carries labels (:data:`RUN_LABEL`, :data:`OWNER_LABEL`), stored by the engine together with the
object in the same call, so what a killed run left behind can always be found again.
Finding an engine is :mod:`trainjobs.engines.registry`'s (it knows the adapters; no adapter
imports it).
"""

from __future__ import annotations

import json
import subprocess
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from trainjobs.core.errors import EnvironmentFailure
from trainjobs.engines.settings import engine_environment

RUN_LABEL = "io.trainjobs.run"
"""On every pod, container and network of a local run: the run's id."""
OWNER_LABEL = "io.trainjobs.owner"
"""The trainjobs process that created the object: ``<boot id>:<pid>:<start time>`` (see
:func:`trainjobs.engines.owners.owner_alive`)."""
RECIPE_LABEL = "io.trainjobs.recipe"
"""On images trainjobs builds: the SHA-256 of their recipe (Dockerfile and copied files)."""
ENGINES = ("podman", "docker")


class EngineError(EnvironmentFailure):
    """An engine command failed: a fault of the environment, not of the user's input (one
    line, exit 1)."""


class EngineUnavailable(EnvironmentFailure):
    """No usable engine: says what to install (one line, exit 1)."""


@dataclass(frozen=True)
class BuildRequest:
    """One image build."""

    dockerfile: Path
    context: Path
    tag: str
    build_args: dict[str, str] = field(default_factory=dict)
    """Only image references (BASE_IMAGE, KUBECTL_IMAGE): build args used by a RUN step are
    recorded in the image's history, these (used by FROM only) are not."""
    secrets: dict[str, Path] = field(default_factory=dict)
    """Secret id -> file, mounted at /run/secrets/<id> only while a RUN step runs."""
    volumes: dict[Path, str] = field(default_factory=dict)
    """Host directory -> path inside RUN steps, read-only, for the build only."""
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Mount:
    source: Path
    target: str
    read_only: bool = False


@dataclass(frozen=True)
class PodRequest:
    """A pod: a network, UTS and IPC namespace its containers share, with a fixed address."""

    name: str
    hostname: str
    network: str
    address: str
    labels: dict[str, str]


@dataclass(frozen=True)
class ContainerRequest:
    """One container of a pod, run attached: its output is the client's, its exit code too."""

    name: str
    pod: str
    image: str
    entrypoint: tuple[str, ...] | None
    """Replaces the image's ENTRYPOINT (and drops its CMD); None keeps the image's."""
    args: tuple[str, ...]
    """Replaces the image's CMD when given (or when the entrypoint is replaced)."""
    env_file: Path
    """KEY=VALUE lines (values without newlines)."""
    env_names: tuple[str, ...] = ()
    """Variables whose value the client passes from its own environment (multi-line values)."""
    mounts: tuple[Mount, ...] = ()
    workdir: str | None = None
    user: str | None = None
    read_only_root: bool = False
    cap_add: tuple[str, ...] = ()
    cap_drop: tuple[str, ...] = ()
    no_new_privileges: bool = False
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Labelled:
    """A pod, container or network an engine lists with its labels."""

    kind: str
    """pod, container or network."""
    name: str
    labels: dict[str, str]


Output = Callable[[str], None]


class Engine(ABC):
    """A container engine driven through its command line."""

    name: str

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.env = engine_environment()

    # -- plumbing ---------------------------------------------------------------------------

    def command(self, *args: str) -> list[str]:
        return [self.executable, *args]

    def call(self, *args: str, check: bool = True, stdin: bytes | None = None) -> str:
        """Run one engine command to completion; its stdout, or EngineError with its error."""
        result = subprocess.run(
            self.command(*args),
            input=stdin,
            capture_output=True,
            env=self.env,
            check=False,
        )
        if check and result.returncode != 0:
            error = result.stderr.decode("utf-8", "replace").strip().splitlines()
            raise EngineError(
                f"`{self.name} {' '.join(args[:2])}` failed (exit {result.returncode}): "
                f"{error[-1] if error else 'no message'}"
            )
        return result.stdout.decode("utf-8", "replace")

    def stream(self, args: Sequence[str], output: Output) -> None:
        """Run a long engine command (a build), passing each output line on as it comes."""
        process = subprocess.Popen(
            self.command(*args),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=self.env,
        )
        assert process.stdout is not None
        last: list[str] = []  # the last line only: callers keep what they show
        for raw in process.stdout:
            last = [raw.decode("utf-8", "replace").rstrip("\r\n")]
            output(last[0])
        code = process.wait()
        if code != 0:
            raise EngineError(f"`{self.name} {args[0]}` failed (exit {code}): {last}")

    # -- images -----------------------------------------------------------------------------

    def image_exists(self, reference: str) -> bool:
        return (
            subprocess.run(
                self.command("image", "inspect", "--format", "{{.Id}}", reference),
                capture_output=True,
                env=self.env,
                check=False,
            ).returncode
            == 0
        )

    def image_label(self, reference: str, key: str) -> str | None:
        """A label of a local image, or None (no such label)."""
        value = self.call(
            "image", "inspect", "--format", f'{{{{index .Config.Labels "{key}"}}}}', reference
        ).strip()
        return value if value and value != "<no value>" else None

    def history(self, reference: str) -> list[str]:
        """What made each layer of an image (its history's created_by), newest first."""
        text = self.call("history", "--no-trunc", "--format", "{{.CreatedBy}}", reference)
        return text.splitlines()

    def image_config(self, reference: str) -> str:
        """The image's configuration and metadata as the engine prints them (JSON)."""
        return self.call("image", "inspect", reference)

    @staticmethod
    def usable(executable: str) -> bool:
        """Whether this engine's client answers: ``version`` fails when a daemon it needs
        cannot be reached."""
        answer = subprocess.run([executable, "version"], capture_output=True, check=False)
        return answer.returncode == 0

    @abstractmethod
    def build(self, request: BuildRequest, output: Output) -> None: ...

    def import_rootfs(self, tarball: Path, reference: str, changes: Sequence[str]) -> None:
        """A root filesystem (a tar file) as an image, with Dockerfile-style ``changes``."""
        args = ["import"]
        for change in changes:
            args += ["--change", change]
        self.call(*args, str(tarball), reference)

    def remove_image(self, reference: str) -> None:
        self.call("rmi", "--force", reference, check=False)

    # -- pods, containers, networks --------------------------------------------------------

    def create_network(self, name: str, subnet: str, gateway: str, labels: dict[str, str]):
        """A private network: pods on it reach each other and nothing else (internal), and
        names resolve through each pod's own hosts file (no engine DNS)."""
        args = ["network", "create", "--internal", f"--subnet={subnet}", f"--gateway={gateway}"]
        args += self.no_dns_flags()
        self.call(*args, *label_flags(labels), name)

    def no_dns_flags(self) -> list[str]:
        return []

    def remove_networks(self, names: Sequence[str]) -> None:
        if names:
            self.call("network", "rm", *names, check=False)

    @abstractmethod
    def create_pod(self, request: PodRequest) -> int:
        """Create and start the pod's sandbox; the PID of its infra process."""

    @abstractmethod
    def remove_pods(self, names: Sequence[str]) -> None:
        """Kill and remove pods and every container in them."""

    @abstractmethod
    def run_command(self, request: ContainerRequest) -> list[str]:
        """The command line that creates, starts and attaches to a container: the client
        prints its output, exits with its exit code, forwards SIGTERM to it and removes it."""

    def remove_containers(self, names: Sequence[str]) -> None:
        if names:
            self.call("rm", "--force", *names, check=False)

    def exec_command(self, container: str, command: Sequence[str], stdin: bool) -> list[str]:
        """The command line that runs ``command`` in a running container (`kubectl exec`)."""
        return self.command("exec", *(["--interactive"] if stdin else []), container, *command)

    def signal(self, container: str, signal_name: str) -> None:
        self.call("kill", f"--signal={signal_name}", container, check=False)

    @abstractmethod
    def labelled(self, label: str) -> list[Labelled]:
        """Every pod, container and network that carries ``label``, with its labels."""


def label_flags(labels: dict[str, str]) -> list[str]:
    return [f"--label={key}={value}" for key, value in sorted(labels.items())]


def container_flags(request: ContainerRequest) -> list[str]:
    """The flags of ``run`` both engines spell alike."""
    flags = [f"--name={request.name}", f"--env-file={request.env_file}"]
    flags += [f"--env={name}" for name in request.env_names]
    for mount in request.mounts:
        options = ",ro" if mount.read_only else ""
        flags.append(f"--mount=type=bind,source={mount.source},target={mount.target}{options}")
    if request.workdir:
        flags.append(f"--workdir={request.workdir}")
    if request.user:
        flags.append(f"--user={request.user}")
    if request.read_only_root:
        flags.append("--read-only")
    flags += [f"--cap-add={cap}" for cap in request.cap_add]
    flags += [f"--cap-drop={cap}" for cap in request.cap_drop]
    if request.no_new_privileges:
        flags.append("--security-opt=no-new-privileges")
    flags += label_flags(request.labels)
    return flags


def image_and_command(request: ContainerRequest) -> list[str]:
    """``--entrypoint`` (as JSON: an argv, not a shell line), the image, then the args."""
    flags = []
    if request.entrypoint is not None:
        flags.append(f"--entrypoint={json.dumps(list(request.entrypoint))}")
    return [*flags, request.image, *request.args]


INSTALL_HINT = (
    "install podman (as root: `make engine`, which also writes this project's engine "
    "settings) or start docker"
)
