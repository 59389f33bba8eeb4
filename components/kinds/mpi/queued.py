"""A Kueue-queued MPIJob (v2beta1, ssh) as one JobSet, so that Kueue admits it whole.

Kueue's ``jobset`` integration (kubernetes-sigs/kueue ``pkg/controller/jobs/jobset``,
``PodSets``) makes one pod set per replicated Job, of ``replicas * parallelism`` pods, and
admits them together: the launcher never holds quota while its workers wait. The graph's
launcher Job and worker StatefulSet become two replicated Jobs, ``launcher`` (1) and
``worker`` (one per worker), each an Indexed Job of one pod (:mod:`trainjobs.core.jobset`):

- every pod is named by its Job, ``<job>-<replicatedJob>-<i>-0``, under the job's own
  headless Service as the JobSet's subdomain, so the hostfile's and ``discover_hosts.sh``'s
  ``<pod>.<job>.<ns>.svc`` names are known before anything runs (a Job with parallelism N
  would give its pods random names, which ssh cannot know in advance);
- the launcher's success is the JobSet's (successPolicy Any on ``launcher``); a Job that
  fails past its backoffLimit fails the JobSet, as for queued TFJobs and PyTorchJobs;
- a worker is a Job whose sshd restarts when it fails (OnFailure): a JobSet runs Jobs only;
- suspension and the TTL are the JobSet's (Kueue owns suspension), Kueue's labels too.
"""

from __future__ import annotations

import copy

from trainjobs.core import jobset
from trainjobs.core.graph import Manifest

LAUNCHER = "launcher"
WORKER = "worker"


def as_jobset(
    name: str,
    namespace: str,
    labels: dict[str, str],
    launcher: Manifest,
    workers: list[tuple[Manifest, int]],
    subdomain: str,
) -> Manifest:
    """The JobSet running ``launcher`` (the graph's launcher Job) and ``workers`` (its worker
    StatefulSets with their declared sizes), the launcher deciding. ``labels``: the JobSet's,
    Kueue's among them."""
    spec = copy.deepcopy(launcher["spec"])
    # The JobSet carries these for the whole job.
    suspend = bool(spec.pop("suspend", False))
    ttl = spec.pop("ttlSecondsAfterFinished", None)
    # The Indexed Job names the pod <job>-<replicatedJob>-0-0; the hostfile uses that name.
    spec["template"]["spec"].pop("hostname", None)
    replicated = [_replicated(LAUNCHER, 1, launcher["metadata"]["labels"], spec)]
    for statefulset, replicas in workers:
        template = copy.deepcopy(statefulset["spec"]["template"])
        template["spec"]["restartPolicy"] = "OnFailure"
        worker: Manifest = {"template": template}
        if "backoffLimit" in spec:
            worker["backoffLimit"] = spec["backoffLimit"]
        replicated.append(
            _replicated(
                WORKER,
                replicas,
                statefulset["metadata"]["labels"],
                worker,
            )
        )
    return jobset.jobset(
        name,
        namespace,
        labels,
        replicated,
        ("Any", LAUNCHER),
        suspend=suspend,
        ttl_seconds_after_finished=ttl,
        subdomain=subdomain,
    )


def _replicated(name: str, replicas: int, labels: dict[str, str], spec: Manifest) -> Manifest:
    """One replicated Job: ``replicas`` Indexed Jobs of one pod each."""
    job = {"completionMode": "Indexed", "completions": 1, "parallelism": 1, **spec}
    job["template"] = spec["template"]
    return {
        "name": name,
        "replicas": replicas,
        "template": {"metadata": {"labels": dict(labels)}, "spec": job},
    }
