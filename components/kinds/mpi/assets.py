"""The assets ConfigMap's files: the Open MPI rsh agent, the hostfile, the cluster waiter.

They are generated per job from validated names, and every interpolated value is quoted
with :func:`shlex.quote`, so no job, pod or container name can inject shell. The same files
run unchanged on a cluster and in the local runtime (which supplies a stand-in kubectl).
"""

from __future__ import annotations

import shlex

from trainjobs.core.graph import DEFAULT_WAIT_TIMEOUT_SECONDS
from trainjobs.kinds.mpi.plan import MpiPlan

ASSETS_DIR = "/etc/trainjobs"
KUBEXEC = f"{ASSETS_DIR}/kubexec.sh"
HOSTFILE = f"{ASSETS_DIR}/hostfile"
CLUSTER_WAITER = f"{ASSETS_DIR}/cluster_waiter.sh"
KUBECTL_DIR = "/opt/trainjobs/bin"
KUBECTL = f"{KUBECTL_DIR}/kubectl"
# The marker a worker echoes back through `kubectl exec`: proof the exec path works end to end.
READY_MARKER = "trainjobs-ready"


def job_title(plan: MpiPlan) -> str:
    """The job as the scripts' comments name it: ``ChainerJob demo``, ``MPIJob pi``."""
    return f"{plan.flavour.kind} {plan.names.job}"


def hostfile(plan: MpiPlan) -> str:
    """One `<pod> slots=<n>` line per pod, master first.

    Open MPI maps ranks in hostfile order, so the master pod gets rank 0: whatever rank 0
    writes (checkpoints, final metrics) lands in the Job's pod, which outlives the workers
    that are scaled to 0 when the job ends.
    """
    hosts = [(pod, group.slots) for group in plan.workers for pod in group.pods]
    return hostfile_lines(plan, plan.names.master, hosts)


def hostfile_lines(plan: MpiPlan, launcher: str, workers: list[tuple[str, int]]) -> str:
    """The launcher (when the kind puts it there) and the workers, one line each, in the
    format of the kind's MPI: Open MPI's ``host slots=N``, Hydra's ``host:N``."""
    hosts = [(launcher, plan.master.slots)] if plan.flavour.launcher_in_hostfile else []
    hosts += workers
    hydra = plan.flavour.hydra_hostfile
    return "".join(
        f"{host}:{slots}\n" if hydra else f"{host} slots={slots}\n" for host, slots in hosts
    )


def kubexec(plan: MpiPlan) -> str:
    """Open MPI's rsh agent: start a remote command in a worker pod through `kubectl exec`.

    Open MPI invokes it as `kubexec.sh HOST COMMAND...`, where COMMAND is a shell command line
    meant for a remote shell (as ssh would run it), hence `sh -c "$*"` on the far side. HOST
    must be one of this job's pods: anything else is refused before kubectl runs. The
    container is named explicitly because pods with sidecars have more than one.
    """
    cases = [f'    {shlex.quote(plan.names.master)}) exec sh -c "$*" ;;']
    cases += [
        f"    {shlex.quote(pod)}) container={shlex.quote(group.container)} ;;"
        for group in plan.workers
        for pod in group.pods
    ]
    return f"""#!/bin/sh
# Open MPI rsh agent for {job_title(plan)}: runs COMMAND in pod HOST.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: kubexec.sh HOST COMMAND..." >&2
    exit 2
fi
# Options before HOST (an rsh or ssh option some launchers pass: Hydra's, Open MPI's
# plm_rsh_args) mean nothing to kubectl exec: skipped, as mpi-operator's kubexec.sh did.
while [ $# -gt 2 ] && [ "${{1#-}}" != "$1" ]; do
    if [ "$1" = -o ]; then shift 2; else shift; fi
done
host=$1
shift
# Open MPI may pass a fully qualified name; the pod name is its first label.
pod=${{host%%.*}}
case "$pod" in
{chr(10).join(cases)}
    *) echo "kubexec.sh: '$host' is not a pod of job {plan.names.job}" >&2; exit 2 ;;
esac
exec "${{TRAINJOBS_KUBECTL:-kubectl}}" exec -i "$pod" -c "$container" -- sh -c "$*"
"""


def cluster_waiter(plan: MpiPlan) -> str:
    """Wait until every worker pod is Running and answers an exec round trip.

    Running is not enough: a pod can be Running before the API server can exec into it (or
    with RBAC missing), and the old operators started mpiexec then and failed obscurely.
    Workers are probed 16 at a time (`TRAINJOBS_WAIT_PARALLEL`), so a round costs about one
    exec per 16 workers rather than an exec and a get per worker (the phase is read only
    for a worker that did not answer, to say why). On timeout it names every worker
    that is not ready, with its phase, and exits 1, so the master pod's init container fails
    visibly instead of training on a partial cluster.
    """
    pairs = "\n".join(f"{pod} {group.container}" for group in plan.workers for pod in group.pods)
    total = len(plan.worker_pods)
    return f"""#!/bin/sh
# Cluster waiter for {job_title(plan)}: every worker must be Running and exec-able.
set -u
kubectl="${{TRAINJOBS_KUBECTL:-kubectl}}"
timeout_seconds="${{TRAINJOBS_WAIT_TIMEOUT_SECONDS:-{DEFAULT_WAIT_TIMEOUT_SECONDS}}}"
interval="${{TRAINJOBS_WAIT_INTERVAL_SECONDS:-2}}"
batch="${{TRAINJOBS_WAIT_PARALLEL:-16}}"
# Each worker pod and the container its ranks run in (validated names: no spaces).
workers={shlex.quote(pairs)}
start=$(date +%s)
ready=" "
pending=""

# Prints POD:ready, or POD:PHASE (NotFound when the pod cannot be read). The exec comes
# first: an answer proves the pod Running, and the phase is asked only to say why not.
probe() {{
    answer=$("$kubectl" exec "$1" -c "$2" -- sh -c 'echo {READY_MARKER}' 2>/dev/null)
    if [ "$answer" = {READY_MARKER} ]; then
        echo "$1:ready"
        return
    fi
    phase=$("$kubectl" get pod "$1" -o 'jsonpath={{.status.phase}}' 2>/dev/null) || phase=""
    case "$phase" in
        Pending|Running|Succeeded|Failed|Unknown) ;;
        "") phase=NotFound ;;
        *) phase=Unknown ;;
    esac
    echo "$1:$phase"
}}

{PROBE_ROUND}
last_report=$start
while :; do
    round
{waiter_decision(total)}"""


PROBE_ROUND = """# Probes every worker not ready yet, $batch at a time (`probe POD ARG` prints
# POD:ready or POD:REASON), then reads the answers back in the workers' order: probes
# finish in any order.
round() {
    results=$(
        running=0
        set -- $workers
        while [ $# -gt 0 ]; do
            case "$ready" in
                *" $1 "*) ;;
                *)
                    probe "$1" "$2" &
                    running=$((running + 1))
                    if [ "$running" -ge "$batch" ]; then wait; running=0; fi
                    ;;
            esac
            shift 2
        done
        wait
    )
    results=" $(echo $results) "
    pending=""
    set -- $workers
    while [ $# -gt 0 ]; do
        case "$results" in
            *" $1:"*)
                why=${results#*" $1:"}
                why=${why%% *}
                if [ "$why" = ready ]; then
                    ready="$ready$1 "
                    echo "cluster_waiter: $1 is ready"
                else
                    pending="$pending $1($why)"
                fi
                ;;
        esac
        shift 2
    done
}
"""
"""The round both cluster waiters (exec and ssh) run: `$workers` holds POD ARG pairs, and
each defines `probe`."""


def waiter_decision(total: int) -> str:
    """The end of a cluster waiter's round (either transport's): done, timed out, or
    report progress now and then and wait."""
    return f"""    now=$(date +%s)
    if [ -z "$pending" ]; then
        echo "cluster_waiter: all {total} workers ready after $((now - start))s"
        exit 0
    fi
    if [ $((now - start)) -ge "$timeout_seconds" ]; then
        echo "cluster_waiter: timed out after ${{timeout_seconds}}s; workers not ready:$pending" >&2
        exit 1
    fi
    if [ $((now - last_report)) -ge 15 ]; then
        echo "cluster_waiter: still waiting after $((now - start))s for:$pending"
        last_report=$now
    fi
    sleep "$interval"
done
"""


def asset_files(plan: MpiPlan) -> dict[str, str]:
    """The ConfigMap's data: file name -> content."""
    files = {
        "kubexec.sh": kubexec(plan),
        "hostfile": hostfile(plan),
        "cluster_waiter.sh": cluster_waiter(plan),
    }
    if plan.flavour.discover_hosts is not None:
        files["discover_hosts.sh"] = plan.flavour.discover_hosts
    return files
