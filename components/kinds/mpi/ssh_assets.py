"""The ssh transport's assets: sshd and ssh settings, the rsh agent, the session entry, the waiter.

With ``mpiTransport: ssh`` Open MPI reaches the workers as mpi-operator v2 and Kubeflow
Trainer's MPI runtime do: every worker runs sshd, the master connects by the workers' stable
DNS names (``<pod>.<job>.<ns>.svc``), and one key pair per job, from the Secret ``<job>-ssh``
(type ``kubernetes.io/ssh-auth``), is both the client key and every pod's host key
(kubeflow/mpi-operator ``pkg/controller/mpi_job_controller.go``: ``newSSHAuthSecret``,
``setupSSHOnPod``). Nothing goes through the API server, so the job needs no Role and no token.

Unlike mpi-operator, the client checks host keys (a ``known_hosts`` entry for the job's key
under one alias), and an ssh session gets the worker container's environment and working
directory, as ``kubectl exec`` gives them: sshd otherwise starts sessions with a bare
environment, so Open MPI's daemons and ranks would not see the image's PATH or the pod's env.
That holds where trainjobs runs the worker's sshd. A worker whose own command starts sshd
(``/usr/sbin/sshd -De``) shows the image's host keys, which no known_hosts here can hold: it is
reached as mpi-operator's images reach it, with the image's own client settings (its port),
the job's key, and any host key accepted (``build/base/Dockerfile`` sets
``StrictHostKeyChecking no`` and ``UserKnownHostsFile /dev/null``).

Every path reaches these files on their command line or through the environment, never
written inside them, so local runs (which map in-image paths on command lines and env values)
run them unchanged. Interpolated names are quoted with :func:`shlex.quote`.
"""

from __future__ import annotations

import shlex

from trainjobs.core.graph import DEFAULT_WAIT_TIMEOUT_SECONDS, Manifest
from trainjobs.core.labels import metadata
from trainjobs.kinds.mpi.assets import (
    ASSETS_DIR,
    PROBE_ROUND,
    READY_MARKER,
    hostfile_lines,
    job_title,
    waiter_decision,
)
from trainjobs.kinds.mpi.plan import MpiPlan

SSH_DIR = "/etc/trainjobs-ssh"
"""Where the job's Secret is mounted (read-only): the key pair and known_hosts."""
SSH_STATE_DIR = "/run/trainjobs-ssh"
"""A worker's private in-memory emptyDir: the environment its ssh sessions start from."""
SSH_PORT = 2222
"""Above 1024, so that sshd can run as any user (mpi-operator's base image uses this port)."""
SSHEXEC = f"{ASSETS_DIR}/sshexec.sh"
SSHD = f"{ASSETS_DIR}/sshd.sh"
CLUSTER_WAITER = f"{ASSETS_DIR}/cluster_waiter.sh"
SSHD_BINARY = "/usr/sbin/sshd"
"""sshd refuses to start by a relative path (it re-executes itself for every connection)."""

SSH_DIR_ENV = "TRAINJOBS_SSH_DIR"
SSH_STATE_DIR_ENV = "TRAINJOBS_SSH_STATE_DIR"

SECRET_TYPE = "kubernetes.io/ssh-auth"
PRIVATE_KEY = "ssh-privatekey"
"""The key Kubernetes requires in an ssh-auth Secret; an OpenSSH private key."""
PUBLIC_KEY = "ssh-publickey"
"""The public key as an authorized_keys line (mpi-operator's key name)."""
KNOWN_HOSTS = "known_hosts"
KEY_ALGORITHM = "ED25519"
KEY_ANNOTATION = "trainjobs.io/ssh-key"
"""Marks the Secret whose key pair is made when the job is deployed (or run locally)."""


def host_key_alias(job: str) -> str:
    """The one name the job's pods are known by in known_hosts: they share one host key."""
    return f"trainjobs-{job}"


def known_hosts(alias: str, public_key: str) -> str:
    """The known_hosts file for a job: its host key under its alias."""
    return f"{alias} {public_key.strip()}\n"


def secret_files(alias: str, private_key: str, public_key: str) -> dict[str, str]:
    """The Secret's files, from an OpenSSH key pair: what the Secret's ``data`` decodes to."""
    return {
        PRIVATE_KEY: private_key if private_key.endswith("\n") else private_key + "\n",
        PUBLIC_KEY: public_key.strip() + "\n",
        KNOWN_HOSTS: known_hosts(alias, public_key),
    }


def secret(plan: MpiPlan, labels: dict[str, str]) -> Manifest:
    """The job's ssh-auth Secret without its data: the key pair is made at deploy time (Pulumi's
    TLS provider, kept secret in the stack's state), so rendered files never hold key material."""
    note = (
        f"{KEY_ALGORITHM} key pair made at deploy time (data: {PRIVATE_KEY}, {PUBLIC_KEY}, "
        f"{KNOWN_HOSTS}); never rendered"
    )
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": metadata(plan.names.ssh_secret, plan.namespace, labels, {KEY_ANNOTATION: note}),
        "type": SECRET_TYPE,
    }


def worker_hosts(plan: MpiPlan) -> list[tuple[str, str]]:
    """(pod, the name its sshd is reached by): the headless Service's per-pod DNS name."""
    domain = f"{plan.names.service}.{plan.namespace}.svc"
    return [(pod, f"{pod}.{domain}") for pod in plan.worker_pods]


def hostfile(plan: MpiPlan) -> str:
    """The master first (rank 0, started locally), then each worker by its DNS name, as
    mpi-operator writes them (``newConfigMap``): a worker's bare name does not resolve in
    other pods, whose DNS search path holds no Service subdomain."""
    slots = {pod: group.slots for group in plan.workers for pod in group.pods}
    workers = [(host, slots[pod]) for pod, host in worker_hosts(plan)]
    return hostfile_lines(plan, launcher_host(plan), workers)


def launcher_host(plan: MpiPlan) -> str:
    """The launcher as the hostfile names it: a ChainerJob's master by its hostname (Open MPI
    sees it is local), an MPIJob's launcher by its DNS name, as mpi-operator writes it."""
    if plan.flavour.local_launcher:
        return plan.names.master
    return f"{plan.launcher_hostname}.{plan.names.service}.{plan.namespace}.svc"


def sshd_config(plan: MpiPlan) -> str:
    """Key-only logins on a high port; runnable as the container's user (no privileges)."""
    return f"""# sshd of the worker pods of {job_title(plan)} (ssh transport).
# sshd.sh adds the host key, the authorized key and the session entry on its command line.
Port {SSH_PORT}
PidFile none
# The key files are a Secret volume: root-owned symlinks whose modes the kubelet sets.
StrictModes no
UsePAM no
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitUserEnvironment no
AllowTcpForwarding no
AllowAgentForwarding no
AllowStreamLocalForwarding no
X11Forwarding no
PermitTunnel no
PrintMotd no
PrintLastLog no
UseDNS no
LogLevel ERROR
"""


def ssh_config(plan: MpiPlan) -> str:
    """The client side: the job's key only, host keys checked, never a prompt."""
    return f"""# ssh client of {job_title(plan)} (ssh transport): Open MPI's launcher
# and the cluster waiter. sshexec.sh adds the key and known_hosts on its command line.
Host *
    Port {SSH_PORT}
    # Every pod of the job has the job's host key: one known_hosts entry covers them all.
    HostKeyAlias {host_key_alias(plan.names.job)}
    StrictHostKeyChecking yes
    GlobalKnownHostsFile /dev/null
    CheckHostIP no
    UpdateHostKeys no
    IdentitiesOnly yes
    BatchMode yes
    # As mpi-operator sets OMPI_MCA_plm_rsh_args: sshd may still be starting.
    ConnectionAttempts 10
    # The job's own key pair authenticates both ends; Curve25519 key exchange costs a
    # fraction of OpenSSH 9's default (sntrup761 hybrid), and the master makes 64 at once.
    KexAlgorithms curve25519-sha256,curve25519-sha256@libssh.org
    ForwardAgent no
    ForwardX11 no
    RequestTTY no
    LogLevel ERROR
"""


# Reads the key directory from the environment and the settings from next to the script.
_SSH_COMMAND = (
    'ssh -F "$assets/ssh_config" -i "$keys/ssh-privatekey" '
    '-o "UserKnownHostsFile=\\"$keys/known_hosts\\""'
)
# A worker's own sshd: the image's client settings, the job's key, any host key.
_IMAGE_SSH_COMMAND = (
    'ssh -i "$keys/ssh-privatekey" -o StrictHostKeyChecking=no '
    "-o UserKnownHostsFile=/dev/null -o BatchMode=yes"
)
_PREAMBLE = f"""assets=$(dirname "$0")
keys=${{{SSH_DIR_ENV}:?{SSH_DIR_ENV} is not set}}"""


def sshexec(plan: MpiPlan) -> str:
    """Open MPI's rsh agent: ``sshexec.sh HOST COMMAND...`` runs COMMAND in pod HOST over ssh.

    HOST must be one of this job's pods (anything else is refused before ssh runs); the
    master runs COMMAND itself, as ``kubexec.sh`` does. Workers carry it too: Open MPI starts
    daemons beyond the first 64 from other daemons (tree spawn), with the same agent.
    """
    own = image_sshd_pods(plan)
    cases = [f'    {shlex.quote(plan.launcher_hostname)}) exec sh -c "$*" ;;']
    cases += [
        f"    {shlex.quote(pod)}) {'image=1 ' if pod in own else ''};;" for pod in plan.worker_pods
    ]
    image = (
        f"""# A worker's own sshd (its command starts it): reached as mpi-operator's images do.
if [ -n "${{image:-}}" ]; then
    exec {_IMAGE_SSH_COMMAND} -o ConnectionAttempts=10 "$host" "$@"
fi
"""
        if own
        else ""
    )
    return f"""#!/bin/sh
# Open MPI rsh agent for {job_title(plan)} (ssh transport): runs COMMAND in pod HOST.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: sshexec.sh HOST COMMAND..." >&2
    exit 2
fi
# ssh options before HOST (Open MPI's plm_rsh_args, as mpi-operator sets them) are the
# job's ssh_config's already: skipped.
while [ $# -gt 2 ] && [ "${{1#-}}" != "$1" ]; do
    if [ "$1" = -o ]; then shift 2; else shift; fi
done
host=$1
shift
case "${{host%%.*}}" in
{chr(10).join(cases)}
    *) echo "sshexec.sh: '$host' is not a pod of job {plan.names.job}" >&2; exit 2 ;;
esac
{_PREAMBLE}
{image}exec {_SSH_COMMAND} "$host" "$@"
"""


def image_sshd_pods(plan: MpiPlan) -> list[str]:
    """The workers whose own command starts their sshd: not trainjobs' host key."""
    return [pod for group in plan.workers if group.own_command for pod in group.pods]


def sshd(plan: MpiPlan) -> str:
    """A worker's command: save the container's environment for ssh sessions, then run sshd.

    sshd starts every session through ``ssh_session.sh`` (its ForceCommand), which restores
    that environment and working directory before running what the client asked for. The
    file is private (umask 077) in an in-memory emptyDir: env values may be secrets.
    """
    return f"""#!/bin/sh
# sshd of a worker pod of {job_title(plan)} (ssh transport), as the container's user.
set -eu
{_PREAMBLE}
assets=$(cd "$assets" && pwd)
state=${{{SSH_STATE_DIR_ENV}:?{SSH_STATE_DIR_ENV} is not set}}
quote() {{ printf "'%s'" "$(printf '%s' "$1" | sed "s/'/'\\\\\\\\''/g")"; }}
umask 077
{{ export -p; printf 'cd %s\\n' "$(quote "$PWD")"; }} > "$state/session.env"
exec {SSHD_BINARY} -D -e -f "$assets/sshd_config" \\
    -o "HostKey=\\"$keys/ssh-privatekey\\"" \\
    -o "AuthorizedKeysFile=\\"$keys/ssh-publickey\\"" \\
    -o "ForceCommand=sh $(quote "$assets/ssh_session.sh") $(quote "$state/session.env")"
"""


def ssh_session() -> str:
    """Every ssh session's entry (sshd's ForceCommand): the container's environment first."""
    return """#!/bin/sh
# An ssh session in a worker pod: the client's command runs with the worker container's
# environment and working directory (saved by sshd.sh), as kubectl exec would run it.
. "$1"
exec sh -c "$SSH_ORIGINAL_COMMAND"
"""


def cluster_waiter(plan: MpiPlan) -> str:
    """Wait until every worker's sshd answers a command from the master over ssh.

    The round trip proves what mpiexec needs: the name resolves, sshd listens, the host key
    and the client key are the job's. Workers are probed 16 at a time (a round costs about
    one ssh round trip per 16 workers, in bounded memory). On timeout it names every worker
    that did not answer, with why (NotResolved: no pod or no address yet; ConnectionRefused:
    sshd not up; Timeout; HostKeyMismatch; PermissionDenied; Unreachable), and exits 1.
    """
    pairs = "\n".join(f"{pod} {host}" for pod, host in worker_hosts(plan))
    total = len(plan.worker_pods)
    options = "-n -o ConnectionAttempts=1 -o ConnectTimeout=5"
    answer = f"answer=$({_SSH_COMMAND} {options} \\\n        \"$2\" 'echo {READY_MARKER}' 2>&1)"
    own = " ".join(image_sshd_pods(plan))
    if own:
        ask = f"\"$2\" 'echo {READY_MARKER}' 2>&1"
        answer = f"""case " {own} " in
        # The worker's own sshd: its image's host key.
        *" $1 "*) answer=$({_IMAGE_SSH_COMMAND} {options} {ask}) ;;
        *) answer=$({_SSH_COMMAND} {options} {ask}) ;;
    esac"""
    return f"""#!/bin/sh
# Cluster waiter for {job_title(plan)} (ssh transport): every worker's sshd must answer.
set -u
{_PREAMBLE}
timeout_seconds="${{TRAINJOBS_WAIT_TIMEOUT_SECONDS:-{DEFAULT_WAIT_TIMEOUT_SECONDS}}}"
interval="${{TRAINJOBS_WAIT_INTERVAL_SECONDS:-2}}"
batch="${{TRAINJOBS_WAIT_PARALLEL:-16}}"
# Each worker pod and the DNS name its sshd answers on (generated names: no spaces).
workers={shlex.quote(pairs)}
start=$(date +%s)
ready=" "
pending=""

# Prints POD:ready, or POD:REASON.
probe() {{
    {answer}
    case "$answer" in
        # The marker is the last line (ssh may warn first, e.g. of a home it cannot write).
        *{READY_MARKER}) why=ready ;;
        *"Could not resolve hostname"*) why=NotResolved ;;
        *"Connection refused"*) why=ConnectionRefused ;;
        *"timed out"*) why=Timeout ;;
        *"Host key verification failed"*|*"IDENTIFICATION HAS CHANGED"*) why=HostKeyMismatch ;;
        *"Permission denied"*) why=PermissionDenied ;;
        *) why=Unreachable ;;
    esac
    echo "$1:$why"
}}

{PROBE_ROUND}
last_report=$start
while :; do
    round
{waiter_decision(total)}"""


def asset_files(plan: MpiPlan) -> dict[str, str]:
    """The assets ConfigMap's data for the ssh transport: file name -> content."""
    files = {
        "hostfile": hostfile(plan),
        "sshexec.sh": sshexec(plan),
        "ssh_config": ssh_config(plan),
        "sshd.sh": sshd(plan),
        "sshd_config": sshd_config(plan),
        "ssh_session.sh": ssh_session(),
        "cluster_waiter.sh": cluster_waiter(plan),
    }
    if plan.flavour.discover_hosts is not None:
        files["discover_hosts.sh"] = plan.flavour.discover_hosts
    return files
