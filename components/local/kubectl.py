#!/usr/bin/env -S python3 -I -S
"""A stand-in `kubectl` for local runs: exactly the calls the generated assets make.

The cluster waiter asks ``kubectl get pod POD -o jsonpath={.status.phase}`` and
``kubectl exec POD -c CONTAINER -- sh -c 'echo trainjobs-ready'``; the rsh agent runs
``kubectl exec -i POD -c CONTAINER -- sh -c "COMMAND"``. This program answers those two
forms against the local pods and refuses everything else loudly, so an asset that starts
relying on another kubectl feature fails in the local tests instead of on a cluster.

It behaves like kubectl talking to an API server:

- the "API server" is the local run's pod registry, a JSON file the runtime keeps current,
  found through ``TRAINJOBS_LOCAL_REGISTRY`` (every local pod has it, as every real pod has
  ``KUBERNETES_SERVICE_HOST``);
- the caller's identity is its pod's service account, and the job's Role is enforced: exec
  and get are refused with kubectl's Forbidden message unless a RoleBinding grants them for
  that pod name. A pod without a mounted token has no identity. With pod network namespaces
  the caller's pod is the one whose network namespace the caller is in, which the kernel
  says (``/proc/self/ns/net``) and no variable can change, so a worker cannot claim to be the
  master; on loopback every pod shares the host's namespaces and the pod is taken from
  ``TRAINJOBS_LOCAL_POD`` (loopback isolates nothing: see the README);
- every request, allowed or not, is counted in ``api-calls.log`` next to the registry: the
  calls the job's assets would make to a cluster's API server;
- ``exec`` runs COMMAND in the target container: in the pod's network, UTS and mount
  namespaces (entered through the pod sandbox's PID with ``nsenter``) with the container's
  environment and working directory, not the caller's, just as the kubelet does. Without
  ``-i`` stdin is not forwarded. A pod that is not Running, or a container that is not
  running, is refused with kubectl's messages.

It is run by path (``/bin/kubectl`` of the declared kubectl image, see
:mod:`trainjobs.images`), so it imports only the standard library and nothing of trainjobs;
the runtime imports the registry constants below from it.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NamedTuple, NoReturn

REGISTRY_ENV = "TRAINJOBS_LOCAL_REGISTRY"
"""Env var naming the run's pod registry (JSON). Also marks every process of a local run."""
POD_ENV = "TRAINJOBS_LOCAL_POD"
"""Env var naming the pod a process belongs to (how the runtime finds a pod's processes; the
caller's identity for RBAC on loopback only)."""
CALLS_LOG = "api-calls.log"
"""Next to the registry: one line per API request (``CALLER VERB RESOURCE POD``), the calls
this job would make to a cluster's API server."""
PHASE_JSONPATH = "jsonpath={.status.phase}"
PROGRAM = "kubectl (trainjobs local stand-in)"

# Registry layout (written by trainjobs.local.runtime):
# {"namespace": NS,
#  "nsenter": "/usr/bin/nsenter",
#  "pods": {POD: {"phase": "Pending|Running|Succeeded|Failed",
#                 "serviceAccount": SA or null (no token mounted),
#                 "netns": inode of the pod's network namespace, or null on loopback,
#                 "sandbox": {"pid": PID, "starttime": TICKS} or null (host namespaces),
#                 "containers": {NAME: {"running": bool, "env": {...}, "workingDir": DIR}}}},
#  "grants": {SA: [[VERB, RESOURCE, POD_NAME or "*"], ...]}}

USAGE = (
    "only these calls are implemented: "
    f"'get pod POD -o {PHASE_JSONPATH}' and 'exec [-i] POD -c CONTAINER -- COMMAND...'"
)


def fail(message: str, code: int = 1) -> NoReturn:
    print(message, file=sys.stderr)
    sys.exit(code)


def load_registry() -> dict[str, Any]:
    path = os.environ.get(REGISTRY_ENV)
    if not path:
        fail(f"{PROGRAM}: no local cluster: {REGISTRY_ENV} is not set (run inside a local pod)")
    try:
        with open(path, encoding="utf-8") as handle:
            registry: dict[str, Any] = json.load(handle)
    except OSError as error:
        fail(f"{PROGRAM}: the local cluster is gone ({path}: {error.strerror})")
    return registry


def caller_pod(registry: dict[str, Any]) -> str:
    """The pod this process belongs to: by its network namespace when pods have their own."""
    namespaces = {entry.get("netns"): name for name, entry in registry["pods"].items()}
    namespaces.pop(None, None)
    if not namespaces:
        return os.environ.get(POD_ENV, "")
    own = os.stat("/proc/self/ns/net").st_ino
    return namespaces.get(own, "")


def record_call(caller: str, verb: str, resource: str, pod: str) -> None:
    """Count the request: one line, appended in one write (concurrent callers never mix)."""
    path = os.path.join(os.path.dirname(os.environ[REGISTRY_ENV]), CALLS_LOG)
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(descriptor, call_line(caller or "-", verb, resource, pod).encode())
    finally:
        os.close(descriptor)


def call_line(*fields: str) -> str:
    """One line of ``api-calls.log``: a name sent by a pod cannot add a line or a field."""
    return " ".join(log_field(field) for field in fields) + "\n"


def log_field(text: str) -> str:
    """``text`` with white space, line breaks, other unprintable characters and backslashes
    escaped (``\\xNN``, ``\\uNNNN``), so that it stays one field of one line."""
    return "".join(
        character
        if character.isprintable() and not character.isspace() and character != "\\"
        else _escaped(ord(character))
        for character in text
    )


def _escaped(code: int) -> str:
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def authorize(registry: dict[str, Any], verb: str, resource: str, pod: str) -> None:
    """Refuse, as the API server would, unless the caller's service account may do this."""
    caller = caller_pod(registry)
    record_call(caller, verb, resource, pod)
    account = (registry["pods"].get(caller) or {}).get("serviceAccount")
    if not account:
        fail(
            f"{PROGRAM}: pod {caller or '(none)'!r} has no service account token mounted "
            "(automountServiceAccountToken: false), so kubectl has no credentials"
        )
    grants = {tuple(grant) for grant in registry["grants"].get(account, [])}
    if (verb, resource, pod) in grants or (verb, resource, "*") in grants:
        return
    namespace = registry["namespace"]
    fail(
        f'Error from server (Forbidden): pods "{pod}" is forbidden: User '
        f'"system:serviceaccount:{namespace}:{account}" cannot {verb} resource "{resource}" '
        f'in API group "" in the namespace "{namespace}"'
    )


def find_pod(registry: dict[str, Any], name: str) -> dict[str, Any]:
    pod: dict[str, Any] | None = registry["pods"].get(name)
    if pod is None:
        fail(f'Error from server (NotFound): pods "{name}" not found')
    return pod


def get_phase(name: str) -> None:
    registry = load_registry()
    authorize(registry, "get", "pods", name)
    # kubectl prints a jsonpath result without a trailing newline.
    sys.stdout.write(find_pod(registry, name)["phase"])


def process_start_time(pid: int) -> str | None:
    """Field 22 of /proc/PID/stat: tells a live sandbox from a recycled PID."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            stat = handle.read()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def exec_in(name: str, container_name: str, command: tuple[str, ...], stdin: bool) -> NoReturn:
    registry = load_registry()
    authorize(registry, "create", "pods/exec", name)
    pod = find_pod(registry, name)
    if pod["phase"] in ("Succeeded", "Failed"):
        fail(
            "error: cannot exec into a container in a completed pod; "
            f"current phase is {pod['phase']}"
        )
    container = pod["containers"].get(container_name)
    if container is None:
        fail(f'error: unable to upgrade connection: container not found ("{container_name}")')
    if not container["running"]:
        fail(f'error: unable to upgrade connection: container not running ("{container_name}")')
    env: dict[str, str] = container["env"]
    workdir: str = container["workingDir"]
    sandbox = pod["sandbox"]
    if sandbox is None:
        os.chdir(workdir)
        argv = list(command)
    else:
        pid = sandbox["pid"]
        if process_start_time(pid) != sandbox["starttime"]:
            fail(f'error: unable to upgrade connection: pod "{name}" has no running sandbox')
        argv = [
            registry["nsenter"],
            f"--target={pid}",
            "--net",
            "--uts",
            "--mount",
            f"--wd={workdir}",
            "--",
            *command,
        ]
    if not stdin:
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.close(devnull)
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as error:
        fail(f"error: exec {command[0]!r} in {name}/{container_name}: {error.strerror}", 127)


class Call(NamedTuple):
    """One of the two calls the assets make: ``get`` a pod's phase, or ``exec`` in it."""

    verb: str
    pod: str
    container: str = ""
    command: tuple[str, ...] = ()
    stdin: bool = False


def parse_call(argv: list[str]) -> Call | None:
    """The call ``kubectl ARGV`` makes, or None for anything the assets never ask."""
    match argv:
        case ["get", "pod", name, "-o", jsonpath] if jsonpath == PHASE_JSONPATH:
            return Call("get", name)
        case ["exec", *rest] if "--" in rest:
            split = rest.index("--")
            options, command = rest[:split], rest[split + 1 :]
            stdin = options[:1] == ["-i"]
            match options[1:] if stdin else options:
                case [name, "-c", container] if command and not name.startswith("-"):
                    return Call("exec", name, container, tuple(command), stdin)
    return None


def main(argv: list[str]) -> None:
    call = parse_call(argv)
    if call is None:
        fail(f"{PROGRAM}: unsupported call 'kubectl {' '.join(argv)}': {USAGE}", 2)
    if call.verb == "get":
        get_phase(call.pod)
        return
    exec_in(call.pod, call.container, call.command, call.stdin)


if __name__ == "__main__":
    main(sys.argv[1:])
