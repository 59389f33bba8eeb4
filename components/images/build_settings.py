"""Build settings: the base images, mirrors, package indexes and CA bundle an image build uses.

The rendered Dockerfiles default to the public sources (``debian:12.12-slim``, the dated
snapshot of Debian's archive, PyPI and torch's CPU index, ``registry.k8s.io/kubectl``). A
build behind a mirror or a proxy, or on a machine with no registry, changes them here:

- the base and kubectl images are ``--build-arg`` values used only by ``FROM``: a build
  records build args in an image's history only where a RUN step uses them;
- apt and pip are configured through **build secrets** (``apt-config``, ``apt-sources``,
  ``pip-config``, ``ca-bundle``), mounted under ``/run/secrets`` only while a step runs, so no
  mirror URL, index credential or certificate reaches a layer or the history;
- local directories pip reads (``find-links``, ``file://`` indexes) are mounted read-only while
  the build runs, under ``/run/build``, and the pip configuration names them there.

Proxies need nothing here: engines pass ``HTTP_PROXY``, ``HTTPS_PROXY`` and ``NO_PROXY`` to
builds as predefined build args, which they keep out of the history.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from trainjobs.core.errors import UserError
from trainjobs.images.declarations import Image
from trainjobs.images.dockerfiles import (
    APT_CONFIG_SECRET,
    APT_SOURCES_SECRET,
    BASE_IMAGE_ARG,
    CA_BUNDLE_SECRET,
    KUBECTL_IMAGE_ARG,
    PIP_CONFIG_SECRET,
    SECRETS_DIR,
)
from trainjobs.images.image_parts import DebianBase
from trainjobs.images.references import reference_problem

BUILD_MOUNTS = "/run/build"
"""Where local directories pip reads are mounted during a build."""
PIP_OPTIONS = ("index-url", "extra-index-url", "find-links", "trusted-host", "timeout", "retries")
"""The pip options a build takes (pip.conf names, as ``pip config`` lists them)."""
LIST_OPTIONS = ("extra-index-url", "find-links", "trusted-host")
"""The pip options that take several values (space-separated in pip.conf)."""


@dataclass(frozen=True)
class BuildSettings:
    """Where a build's inputs come from; every field None or empty: the public sources."""

    debian_base_image: str | None = None
    """Replaces ``debian:12.12-slim`` (BASE_IMAGE of the CPU images), e.g. a registry mirror's
    copy or a locally bootstrapped Debian (`trainjobs images bootstrap`)."""
    kubectl_image: str | None = None
    """Replaces ``registry.k8s.io/kubectl:v1.34.2`` (KUBECTL_IMAGE)."""
    debian_mirror: str | None = None
    """A Debian archive mirror (``http://deb.debian.org/debian``) instead of the snapshot."""
    debian_security_mirror: str | None = None
    """Its security archive; default: the main mirror's ``-security`` suite's usual home."""
    pip: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """pip options (:data:`PIP_OPTIONS`) -> values. Once any is set, they replace every index
    the Dockerfiles name (torch's CPU index too): they must find every pinned package."""
    ca_bundle: Path | None = None
    """CA certificates apt, pip and curl trust during the build (a proxy's or mirror's CA)."""

    def __post_init__(self) -> None:
        unknown = sorted(set(self.pip) - set(PIP_OPTIONS))
        if unknown:
            known = ", ".join(PIP_OPTIONS)
            raise UserError(f"pip option {unknown[0]!r} is not a build setting (known: {known})")
        self._check_values()
        if self.ca_bundle is not None and not self.ca_bundle.is_file():
            raise UserError(f"--ca-bundle {self.ca_bundle}: no such file")
        for mirror in (self.debian_mirror, self.debian_security_mirror):
            if mirror is not None and urlparse(mirror).scheme not in ("http", "https"):
                raise UserError(f"Debian mirror {mirror!r}: expected an http:// or https:// URL")

    def _check_values(self) -> None:
        """Each value stays one value in the files and flags a build gets: no line of apt's or
        pip's configuration, no key of an engine's ``--secret`` or ``--volume``, can be added."""
        for flag, reference in (
            ("--base-image", self.debian_base_image),
            ("--kubectl-image", self.kubectl_image),
        ):
            problem = None if reference is None else reference_problem(reference)
            if problem is not None:
                raise UserError(f"{flag} {reference!r}: {problem}")
        values = [
            ("--debian-mirror", self.debian_mirror),
            ("--debian-security-mirror", self.debian_security_mirror),
            ("--ca-bundle", None if self.ca_bundle is None else str(self.ca_bundle)),
        ]
        values += [
            (pip_flag(option), value) for option, given in self.pip.items() for value in given
        ]
        for flag, value in values:
            if value is not None and _SPLITS.search(value):
                raise UserError(
                    f"{flag} {value!r}: contains white space, a comma or a control character, "
                    "which would split it into more settings; give one URL, host or path"
                )

    # -- saved as the project's default (out/engine/build-settings.json) -------------------

    def to_json(self) -> str:
        data = asdict(self)
        data["ca_bundle"] = str(self.ca_bundle) if self.ca_bundle else None
        data["pip"] = {key: list(values) for key, values in self.pip.items()}
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str, source: str) -> BuildSettings:
        try:
            data = json.loads(text)
            data["pip"] = {key: tuple(values) for key, values in (data.get("pip") or {}).items()}
            data["ca_bundle"] = Path(data["ca_bundle"]) if data.get("ca_bundle") else None
            return cls(**data)
        except (ValueError, TypeError, KeyError) as error:
            raise UserError(
                f"{source}: not valid build settings ({error}); rewrite it with `make engine`"
            ) from error

    # -- what one build gets ----------------------------------------------------------------

    def for_build(self, image: Image, workdir: Path) -> BuildInputs:
        """The build args, secret files (written under ``workdir``) and mounts of one build."""
        assert image.build is not None
        return self.inputs(workdir, image.debian, image.build.kubectl_image is not None)

    def inputs(self, workdir: Path, debian: DebianBase | None, kubectl: bool) -> BuildInputs:
        """What a build gets: on a Debian base (``debian``) and with a kubectl stage or not."""
        inputs = BuildInputs()
        if self.debian_base_image and debian is not None:
            inputs.build_args[BASE_IMAGE_ARG] = self.debian_base_image
        if self.kubectl_image and kubectl:
            inputs.build_args[KUBECTL_IMAGE_ARG] = self.kubectl_image
        if self.ca_bundle is not None:
            inputs.secrets[CA_BUNDLE_SECRET] = self.ca_bundle
        self._apt(debian, workdir, inputs)
        self._pip(workdir, inputs)
        return inputs

    def _apt(self, debian: DebianBase | None, workdir: Path, inputs: BuildInputs) -> None:
        config = []
        if self.debian_mirror and debian is not None:
            codename = debian.codename
            security = self.debian_security_mirror or _security_of(self.debian_mirror)
            sources = workdir / APT_SOURCES_SECRET
            sources.write_text(
                f"deb {self.debian_mirror} {codename} {codename}-updates main\n"
                f"deb {security} {codename}-security main\n",
                encoding="utf-8",
            )
            inputs.secrets[APT_SOURCES_SECRET] = sources
            config.append(f'Dir::Etc::SourceList "{SECRETS_DIR}/{APT_SOURCES_SECRET}";')
        if self.ca_bundle is not None:
            config.append(f'Acquire::https::CAInfo "{SECRETS_DIR}/{CA_BUNDLE_SECRET}";')
        if config:
            path = workdir / APT_CONFIG_SECRET
            path.write_text("\n".join(config) + "\n", encoding="utf-8")
            inputs.secrets[APT_CONFIG_SECRET] = path

    def _pip(self, workdir: Path, inputs: BuildInputs) -> None:
        if not self.pip and self.ca_bundle is None:
            return
        lines = ["[global]"]
        for option in PIP_OPTIONS:
            values = [self._pip_location(value, inputs) for value in self.pip.get(option, ())]
            if values:
                lines.append(f"{option} = {' '.join(values)}")
        if self.ca_bundle is not None:
            lines.append(f"cert = {SECRETS_DIR}/{CA_BUNDLE_SECRET}")
        path = workdir / PIP_CONFIG_SECRET
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        inputs.secrets[PIP_CONFIG_SECRET] = path

    @staticmethod
    def _pip_location(value: str, inputs: BuildInputs) -> str:
        """A local directory or ``file://`` index as the build sees it (mounted); URLs as is.

        A ``file://`` simple index links to its files relative to itself (``../../files``),
        so its parent directory is mounted with it."""
        parsed = urlparse(value)
        if parsed.scheme not in ("", "file"):
            return value
        local = Path(parsed.path if parsed.scheme == "file" else value)
        if not local.exists():
            raise UserError(f"pip location {value!r}: {local} does not exist on this machine")
        mounted = local.parent if parsed.scheme == "file" else local
        if ":" in str(mounted):
            raise UserError(
                f"pip location {value!r}: {mounted} holds ':', which the engine's --volume "
                "would split at; use a directory without ':'"
            )
        inside = inputs.volumes.get(mounted)
        if inside is None:
            inside = inputs.volumes[mounted] = f"{BUILD_MOUNTS}/pip-{len(inputs.volumes)}"
        if parsed.scheme == "file":
            return f"file://{inside}/{local.name}"
        return inside


def pip_flag(option: str) -> str:
    """The flag that sets a pip option (timeout and retries come from ``--host-config``)."""
    return f"--pip-{option}" if option in _FLAGGED else f"--host-config (pip's {option})"


_FLAGGED = ("index-url", "extra-index-url", "find-links", "trusted-host")
_SPLITS = re.compile(r"[\s,\x00-\x1f\x7f]")
"""What splits a value: a line break starts an apt or pip configuration line, white space
another word of it (apt's ``deb`` line, pip's list options), a comma another key of the engine's
``--secret`` and ``--volume`` flags."""


@dataclass
class BuildInputs:
    build_args: dict[str, str] = field(default_factory=dict)
    secrets: dict[str, Path] = field(default_factory=dict)
    volumes: dict[Path, str] = field(default_factory=dict)


def _security_of(mirror: str) -> str:
    """Debian mirrors keep the security archive beside the main one (``debian-security``)."""
    return mirror.rstrip("/") + "-security"
