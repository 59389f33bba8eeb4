"""Pod Security "baseline" for local runs: what a pod may ask of the node, and what it gets.

A local run gives a pod what a Kubernetes node in a namespace enforcing the Pod Security
Standards' ``baseline`` level would admit, and refuses, before anything is created, every pod
template that asks for more, naming each field (all of them at once). The rules are those of
kubernetes ``staging/src/k8s.io/pod-security-admission/policy/check_*.go`` (baseline level):
host namespaces, privileged containers, capabilities beyond the default set, hostPath volumes,
host ports, unmasked ``/proc``, unconfined seccomp and AppArmor profiles, custom SELinux users,
roles and types, unsafe sysctls, Windows host processes, and probe or lifecycle hosts.

Two allowed values are refused too because a local run cannot honour them: ``Localhost``
seccomp and AppArmor profiles (files on a node, which this machine does not have). The engine's
default seccomp and AppArmor profiles apply to every container.

Capabilities (:func:`capabilities`) follow containerd's CRI plugin (``setOCICapabilities`` in
containerd ``pkg/cri/opts/spec_linux.go``): the default set, emptied by ``drop: [ALL]``, then
each ``add``, then each ``drop``. The default set here is baseline's allowed list, which is
containerd's default without ``NET_RAW``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from trainjobs.core.errors import Problem, UserError
from trainjobs.local.cluster import ClusterPlan, PodPlan

BASELINE_CAPABILITIES = (
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
)
"""check_capabilities_baseline.go: the only capabilities ``add`` may name (exact spelling)."""
SAFE_SYSCTLS = (
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.ping_group_range",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_notsent_lowat",
    "net.ipv4.tcp_rmem",
    "net.ipv4.tcp_slow_start_after_idle",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.tcp_wmem",
)
"""check_sysctls.go: the sysctls baseline allows (namespaced, isolated from other pods)."""
SELINUX_TYPES = ("", "container_t", "container_init_t", "container_kvm_t")
"""check_seLinuxOptions.go: the SELinux types baseline allows."""
PROFILE_TYPES = ("RuntimeDefault",)
"""Seccomp and AppArmor profile types a local run applies (baseline also allows Localhost)."""
DEFAULT_PROFILES = ("runtime/default", "docker/default")
SECCOMP_POD_ANNOTATION = "seccomp.security.alpha.kubernetes.io/pod"
SECCOMP_CONTAINER_ANNOTATION = "container.seccomp.security.alpha.kubernetes.io/"
APPARMOR_ANNOTATION = "container.apparmor.security.beta.kubernetes.io/"
_PROBES = ("livenessProbe", "readinessProbe", "startupProbe")
Forbid = Callable[[str, Any, str], None]
_FIX = "local runs give pods what Pod Security 'baseline' allows; remove it or run on a cluster"


class BaselineError(UserError):
    """Pod templates asking for more than baseline allows: every problem, one per line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        lines = [f"the job asks for more than Pod Security 'baseline' allows ({_FIX}):"]
        lines += [f"  {problem}" for problem in problems]
        super().__init__("\n".join(lines))


def check_baseline(plan: ClusterPlan) -> None:
    """Refuse the run, naming every field, if a pod template asks for more than baseline."""
    problems: list[Problem] = []
    for pod in plan.pods:
        for problem in baseline_problems(pod):
            if problem not in problems:  # a template's pods share its problems
                problems.append(problem)
    if problems:
        raise BaselineError(problems)


def baseline_problems(pod: PodPlan) -> list[Problem]:
    """What ``pod``'s template asks for beyond baseline, each with its field path."""
    spec = _mapping(pod.spec)
    where = f"{pod.owner} pod template"
    problems: list[Problem] = []

    def forbid(path: str, value: Any, detail: str) -> None:
        problems.append(Problem(f"{where} {path}", f"Forbidden: {_shown(value)}: {detail}"))

    for key in ("hostNetwork", "hostPID", "hostIPC"):
        if spec.get(key) is True:
            forbid(f"spec.{key}", True, "the host's namespaces are not shared with pods")
    for index, volume in _items(spec.get("volumes")):
        if volume.get("hostPath") is not None:
            forbid(f"spec.volumes[{index}].hostPath", volume.get("name"), "no host path is mounted")
    sysctls = _mapping(spec.get("securityContext")).get("sysctls")
    for index, sysctl in _items(sysctls):
        name = sysctl.get("name")
        if name not in SAFE_SYSCTLS:
            forbid(
                f"spec.securityContext.sysctls[{index}].name",
                name,
                f"only these sysctls are allowed: {', '.join(SAFE_SYSCTLS)}",
            )
    _security_context(_mapping(spec.get("securityContext")), "spec.securityContext", forbid)
    for group in ("initContainers", "containers"):
        for index, container in _items(spec.get(group)):
            _container(container, f"spec.{group}[{index}]", forbid)
    _annotations(pod.annotations, forbid)
    return problems


def _container(container: dict[str, Any], path: str, forbid: Forbid) -> None:
    context = _mapping(container.get("securityContext"))
    where = f"{path}.securityContext"
    if context.get("privileged") is True:
        forbid(f"{where}.privileged", True, "privileged containers are not run")
    for index, name in enumerate(_mapping(context.get("capabilities")).get("add") or []):
        if name not in BASELINE_CAPABILITIES:
            forbid(
                f"{where}.capabilities.add[{index}]",
                name,
                f"only these capabilities may be added: {', '.join(BASELINE_CAPABILITIES)}",
            )
    proc_mount = context.get("procMount")
    if proc_mount not in (None, "Default"):
        forbid(f"{where}.procMount", proc_mount, "/proc stays masked (Default)")
    _security_context(context, where, forbid)
    for index, port in _items(container.get("ports")):
        if port.get("hostPort") not in (None, 0):
            forbid(f"{path}.ports[{index}].hostPort", port["hostPort"], "no host port is opened")
    handlers = [(probe, _mapping(container.get(probe))) for probe in _PROBES]
    lifecycle = _mapping(container.get("lifecycle"))
    handlers += [(f"lifecycle.{hook}", _mapping(lifecycle.get(hook))) for hook in lifecycle]
    for name, handler in handlers:
        for kind in ("httpGet", "tcpSocket"):
            host = _mapping(handler.get(kind)).get("host")
            if host not in (None, ""):
                forbid(f"{path}.{name}.{kind}.host", host, "probes reach their own pod only")


def _security_context(context: dict[str, Any], where: str, forbid: Forbid) -> None:
    """The fields a pod's and a container's securityContext share."""
    for key, kind in (("seccompProfile", "seccomp"), ("appArmorProfile", "AppArmor")):
        profile = _mapping(context.get(key)).get("type")
        if profile is not None and profile not in PROFILE_TYPES:
            forbid(
                f"{where}.{key}.type",
                profile,
                f"local runs apply the engine's default {kind} profile (RuntimeDefault) only",
            )
    selinux = _mapping(context.get("seLinuxOptions"))
    if selinux.get("type", "") not in SELINUX_TYPES:
        allowed = ", ".join(t for t in SELINUX_TYPES if t)
        forbid(f"{where}.seLinuxOptions.type", selinux["type"], f"allowed: {allowed}")
    for key in ("user", "role"):
        if selinux.get(key) not in (None, ""):
            forbid(f"{where}.seLinuxOptions.{key}", selinux[key], "must not be set")
    if _mapping(context.get("windowsOptions")).get("hostProcess") is True:
        forbid(f"{where}.windowsOptions.hostProcess", True, "no host process is run")


def _annotations(annotations: dict[str, str], forbid: Forbid) -> None:
    """The seccomp and AppArmor annotations of Kubernetes before 1.19 and 1.30."""
    for key, value in sorted(annotations.items()):
        profile = key == SECCOMP_POD_ANNOTATION or key.startswith(
            (SECCOMP_CONTAINER_ANNOTATION, APPARMOR_ANNOTATION)
        )
        if profile and value not in (*DEFAULT_PROFILES, ""):
            forbid(
                f"metadata.annotations[{key}]",
                value,
                "local runs apply the engine's default profile (runtime/default) only",
            )


def capabilities(container: dict[str, Any]) -> tuple[str, ...]:
    """The capability set of a container that passed :func:`check_baseline`."""
    context = _mapping(container.get("securityContext"))
    asked = _mapping(context.get("capabilities"))
    drop = {str(name).upper() for name in asked.get("drop") or []}
    granted = set() if "ALL" in drop else set(BASELINE_CAPABILITIES)
    granted |= {str(name) for name in asked.get("add") or []}
    return tuple(sorted(granted - drop))


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _items(value: Any) -> list[tuple[int, dict[str, Any]]]:
    if not isinstance(value, list):
        return []
    return [(index, item) for index, item in enumerate(value) if isinstance(item, dict)]


def _shown(value: Any) -> str:
    text = json.dumps(value) if isinstance(value, str | int | float | bool) else str(value)
    return text if len(text) <= 80 else text[:77] + "..."
