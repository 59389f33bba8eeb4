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
import tempfile
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from trainjobs.core.errors import EnvironmentFailure, UserError
from trainjobs.engines.settings import engine_environment

RUN_LABEL = "io.trainjobs.run"
"""On every pod, container and network of a local run: the run's id."""
OWNER_LABEL = "io.trainjobs.owner"
"""The trainjobs process that created the object: ``<boot id>:<pid>:<start time>`` (see
:func:`trainjobs.engines.owners.owner_alive`)."""
RECIPE_LABEL = "io.trainjobs.recipe"
"""On images trainjobs builds: the SHA-256 of their recipe (Dockerfile and copied files)."""


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
    """One container of a pod, run attached: its output is the client's, its exit code too.

    Every field is a value, never option syntax: the adapters quote or refuse what the
    engine's parser would read as more than one value (:func:`mount_flag`,
    :func:`env_file_text`)."""

    name: str
    pod: str
    image: str
    entrypoint: tuple[str, ...] | None
    """Replaces the image's ENTRYPOINT (and drops its CMD); None keeps the image's."""
    args: tuple[str, ...]
    """Replaces the image's CMD when given (or when the entrypoint is replaced)."""
    env_file: Path
    """NAME=VALUE lines (:func:`write_env_file`): the container's env, read by the engine
    from this private file, never through the client's own environment."""
    mounts: tuple[Mount, ...] = ()
    workdir: str | None = None
    user: str | None = None
    read_only_root: bool = False
    capabilities: tuple[str, ...] = ()
    """The container's whole capability set (names without ``CAP_``): every other one is
    dropped. ``no_new_privs`` is always set."""
    labels: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RegistryAccess:
    """How a pull or push reaches a registry beyond the engine's defaults."""

    auth_file: Path | None = None
    """A docker config (``{"auths": {...}}``) named ``config.json``, in a directory of its
    own, with the credentials to use; None: the engine's own (what `podman login` stored, or
    ``~/.docker/config.json``)."""
    cert_dir: Path | None = None
    """The directory of the registry's CA certificates (``*.crt``); None: the system's."""


@dataclass(frozen=True)
class Labelled:
    """A pod, container or network an engine lists with its labels."""

    kind: str
    """pod, container or network."""
    name: str
    labels: dict[str, str]


@dataclass(frozen=True)
class ImageFacts:
    """What a run needs to know of a local image: that it exists, and its labels."""

    id: str
    labels: dict[str, str]
    user: str = ""
    """The image's ``USER`` (``user[:group]``; empty: root)."""


IMAGE_FACTS_FORMAT = "{{.Id}} {{json .Config.Labels}} {{json .Config.User}}"
"""One ``image inspect`` answers all three (podman and docker print the labels as a JSON
object, or ``null``, and the user as a JSON string)."""

Output = Callable[[str], None]


class Engine(ABC):
    """A container engine driven through its command line."""

    name: str

    def __init__(self, executable: str) -> None:
        self.executable = executable
        self.env = engine_environment()
        self._images: dict[str, ImageFacts | None] = {}
        """Images inspected through this object (a run's): each is asked about once, until
        this object builds, imports or removes an image."""
        self._images_lock = threading.Lock()

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
        last = ""  # the last line said: callers keep what they show
        for raw in process.stdout:
            line = raw.decode("utf-8", "replace").rstrip("\r\n")
            output(line)
            last = line.strip() or last
        code = process.wait()
        if code != 0:
            reason = last or "no message"
            raise EngineError(f"`{self.name} {args[0]}` failed (exit {code}): {reason}")

    # -- images -----------------------------------------------------------------------------

    def image_facts(self, reference: str) -> ImageFacts | None:
        """The local image's id and labels, or None when there is no such image (or the
        engine cannot say): one engine call the first time, none after."""
        with self._images_lock:
            if reference in self._images:
                return self._images[reference]
        text = self.call(
            "image", "inspect", "--format", IMAGE_FACTS_FORMAT, "--", reference, check=False
        ).strip()
        identity, _, rest = text.partition(" ")
        facts = None
        if identity:
            labels, end = json.JSONDecoder().raw_decode(rest or "null")
            user = json.loads(rest[end:].strip() or '""')
            facts = ImageFacts(identity, labels or {}, user if isinstance(user, str) else "")
        with self._images_lock:
            self._images[reference] = facts
        return facts

    def inspect_images(self, references: Iterable[str]) -> None:
        """Ask about several images at once (one call each, concurrently), so that later
        :meth:`image_facts` answers need no call."""
        wanted = sorted(set(references) - set(self._images))
        if len(wanted) > 1:
            with ThreadPoolExecutor(max_workers=len(wanted)) as pool:
                list(pool.map(self.image_facts, wanted))

    def forget_images(self) -> None:
        """What this object knew of images is stale: one was built, imported or removed."""
        with self._images_lock:
            self._images.clear()

    def image_exists(self, reference: str) -> bool:
        return self.image_facts(reference) is not None

    def image_label(self, reference: str, key: str) -> str | None:
        """A label of a local image, or None (no such label, or no such image)."""
        facts = self.image_facts(reference)
        value = facts.labels.get(key) if facts is not None else None
        return value or None

    def history(self, reference: str) -> list[str]:
        """What made each layer of an image (its history's created_by), newest first."""
        text = self.call("history", "--no-trunc", "--format", "{{.CreatedBy}}", "--", reference)
        return text.splitlines()

    def image_config(self, reference: str) -> str:
        """The image's configuration and metadata as the engine prints them (JSON)."""
        return self.call("image", "inspect", "--", reference)

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
        self.forget_images()
        self.call(*args, str(tarball), reference)

    def pull(self, reference: str, access: RegistryAccess, output: Output) -> None:
        """Pull ``reference`` into local storage, passing the engine's progress lines on."""
        self.forget_images()
        self.stream(["pull", *self.access_flags(access), "--", reference], output)

    def push(self, source: str, destination: str, access: RegistryAccess, output: Output) -> str:
        """Push local image ``source`` as ``destination``; the digest the registry stored."""
        with tempfile.TemporaryDirectory(prefix="trainjobs-push-") as scratch:
            digest_file = Path(scratch) / "digest"
            flags = [*self.access_flags(access), f"--digestfile={digest_file}"]
            self.stream(["push", *flags, "--", source, destination], output)
            return digest_file.read_text(encoding="utf-8").strip()

    def access_flags(self, access: RegistryAccess) -> list[str]:
        """podman's (containers/common ``pkg/auth`` and ``--cert-dir`` of pull and push): the
        credentials file and the directory of the registry's CA certificates."""
        flags = []
        if access.auth_file is not None:
            flags.append(f"--authfile={access.auth_file}")
        if access.cert_dir is not None:
            flags.append(f"--cert-dir={access.cert_dir}")
        return flags

    def remove_image(self, reference: str) -> None:
        self.forget_images()
        self.call("rmi", "--force", "--", reference, check=False)

    # -- pods, containers, networks --------------------------------------------------------

    def create_network(self, name: str, subnet: str, gateway: str, labels: dict[str, str]):
        """A private network: pods on it reach each other and nothing else (internal), and
        names resolve through each pod's own hosts file (no engine DNS)."""
        args = ["network", "create", "--internal", f"--subnet={subnet}", f"--gateway={gateway}"]
        args += self.no_dns_flags()
        self.call(*args, *label_flags(labels), name)

    def no_dns_flags(self) -> list[str]:
        return []

    def network_subnets(self) -> list[str]:
        """The subnets of every network the engine has (podman lists them with the networks;
        docker's adapter inspects each)."""
        listed = json.loads(self.call("network", "ls", "--format=json") or "[]")
        return [
            subnet["subnet"]
            for network in listed
            for subnet in network.get("subnets") or []
            if subnet.get("subnet")
        ]

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
    """The flags of ``run`` both engines spell alike: one argument per flag, each value
    whole (``--flag=value``), so no value can start another flag."""
    flags = [f"--name={request.name}", f"--env-file={csv_field(str(request.env_file))}"]
    flags += [mount_flag(mount) for mount in request.mounts]
    if request.workdir:
        flags.append(f"--workdir={request.workdir}")
    if request.user:
        flags.append(f"--user={request.user}")
    if request.read_only_root:
        flags.append("--read-only")
    # Everything not granted is dropped; no setuid program or file capability adds more.
    flags.append("--cap-drop=all")
    flags += [f"--cap-add={capability}" for capability in request.capabilities]
    flags.append("--security-opt=no-new-privileges")
    flags += label_flags(request.labels)
    return flags


def image_and_command(request: ContainerRequest) -> list[str]:
    """``--entrypoint`` (as JSON: an argv, not a shell line), ``--`` (what follows is never an
    option, even an image named ``--help``), the image, then the args."""
    flags = []
    if request.entrypoint is not None:
        flags.append(f"--entrypoint={json.dumps(list(request.entrypoint))}")
    return [*flags, "--", request.image, *request.args]


# -- values inside an engine's option syntax --------------------------------------------------

CSV_SPECIAL = (",", '"')
"""What makes a field of a comma-separated flag value need quoting."""


def csv_field(text: str) -> str:
    """One field of a flag value the engine splits as CSV, quoted when it must be.

    podman reads ``--mount`` with Go's ``encoding/csv`` (``findMountType`` in
    containers/podman ``pkg/specgenutil/volumes.go``) and ``--env-file`` as a pflag string
    slice (CSV too); docker reads ``--mount`` the same way (docker/cli ``opts/mount.go``). In
    Go's CSV a field in double quotes may hold commas, and ``""`` is one quote: such a field
    is one value, whatever it holds. Line breaks are refused before (:func:`path_problem`):
    the reader turns ``\r\n`` inside quotes into ``\n``."""
    problem = path_problem(text)
    if problem is not None:
        raise UserError(f"{text!r}: {problem}")
    if any(special in text for special in CSV_SPECIAL):
        return '"' + text.replace('"', '""') + '"'
    return text


def path_problem(text: str) -> str | None:
    """Why a path cannot be handed to an engine as one value, or None."""
    if any(ord(character) < 0x20 or ord(character) == 0x7F for character in text):
        return (
            "contains a control character (a line break, tab or NUL), which the engine's "
            "option syntax cannot carry; rename it"
        )
    return None


def plain_value(text: str, forbidden: str, what: str) -> str:
    """A value an engine splits at ``forbidden`` characters without any quoting (buildah's
    ``--secret`` and ``--volume`` of a build: containers/buildah ``pkg/parse/parse.go``),
    refused when it holds one, or a control character."""
    problem = path_problem(text)
    if problem is None and any(character in text for character in forbidden):
        listed = " or ".join(repr(character) for character in forbidden)
        problem = f"contains {listed}, where the engine would split it; rename it"
    if problem is not None:
        raise UserError(f"{what} {text!r}: {problem}")
    return text


def mount_flag(mount: Mount) -> str:
    """``--mount=type=bind,source=...,target=...[,ro]``, each path one quoted field."""
    for path in (str(mount.source), mount.target):
        problem = path_problem(path)
        if problem is not None:
            raise UserError(f"mount path {path!r}: {problem}")
    fields = ["type=bind", f"source={mount.source}", f"target={mount.target}"]
    if mount.read_only:
        fields.append("ro")
    return "--mount=" + ",".join(csv_field(value) for value in fields)


ENV_FILE_LINE_LIMIT = 65535
"""Bytes in one line of an env file: both engines read it with Go's ``bufio.Scanner``, whose
longest line is 64 KiB (``bufio.MaxScanTokenSize``)."""


def env_problem(name: str, value: str) -> str | None:
    """Why ``name=value`` cannot be one line of an env file as the engines parse it, or None.

    podman's ``ParseFile`` (containers/podman ``pkg/env/env.go``) reads one variable per line,
    drops lines that start with ``#`` after leading white space, splits at the first ``=`` and
    takes a line without ``=`` (or a name ending in ``*``) from the *client's* environment;
    docker's ``--env-file`` (docker/cli ``opts/file.go``) reads lines the same way and refuses
    names with white space."""
    unsafe = "=" in name or name.startswith("#") or name.endswith("*")
    if not name or unsafe or any(c.isspace() or not c.isprintable() for c in name):
        return f"the name {name!r} cannot be one line of an env file; rename it"
    if "\n" in value or "\r" in value or "\0" in value:
        return (
            "contains a line break (or NUL), which a container run cannot pass to the "
            "container privately (the engine reads env files line by line); put multi-line "
            "text in a ConfigMap volume, or use --runtime process"
        )
    if len(f"{name}={value}".encode("utf-8", "replace")) > ENV_FILE_LINE_LIMIT:
        return (
            f"is longer than an env file line may be ({ENV_FILE_LINE_LIMIT} bytes); put it in "
            "a ConfigMap volume"
        )
    return None


def env_file_text(env: dict[str, str]) -> str:
    """The env file of a container: ``NAME=VALUE`` per line, every line checked."""
    for name, value in env.items():
        problem = env_problem(name, value)
        if problem is not None:
            raise UserError(f"env {name}: {problem}")
    return "".join(f"{name}={value}\n" for name, value in env.items())


INSTALL_HINT = (
    "install podman (as root: `make engine`, which also writes this project's engine "
    "settings) or start docker"
)
