"""Deterministic object names of a job, and the Kubernetes limits they must fit.

Names never carry random suffixes: the hostfile, the Role's resourceNames and preview diffs
all depend on them. The scheme follows kubeflow/chainer-operator so existing tooling that
looks for ``<job>-master`` or ``<job>-workerset-<set>-<i>`` keeps working.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from trainjobs.core import apimachinery
from trainjobs.core.errors import Problem

# A Service named after the job must be a DNS-1035 label: it may not start with a digit.
_DNS1035_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
LABEL_MAX = 63
# A StatefulSet stamps its pods with `controller-revision-hash: <name>-<hash>`, and a label
# value may hold 63 characters, so the StatefulSet name itself may hold at most 52.
STATEFULSET_MAX = 52


@dataclass(frozen=True)
class JobNames:
    job: str

    @property
    def service(self) -> str:
        """Headless Service giving pods stable DNS (<pod>.<job>.<ns>.svc)."""
        return self.job

    @property
    def assets(self) -> str:
        return f"{self.job}-assets"

    @property
    def launcher(self) -> str:
        """ServiceAccount of the master pod, the only identity allowed to exec."""
        return f"{self.job}-launcher"

    @property
    def role(self) -> str:
        return f"{self.job}-launcher-role"

    @property
    def role_binding(self) -> str:
        return f"{self.job}-launcher-rolebinding"

    @property
    def ssh_secret(self) -> str:
        """The ssh transport's Secret: the job's key pair (named as mpi-operator names it)."""
        return f"{self.job}-ssh"

    @property
    def master(self) -> str:
        """The master Job's name, also its pod's hostname (so the hostfile can name it)."""
        return f"{self.job}-master"

    def worker_statefulset(self, worker_set: str | None) -> str:
        """`<job>-worker` for the seed shape, `<job>-workerset-<set>` for workerSets."""
        return f"{self.job}-worker" if worker_set is None else f"{self.job}-workerset-{worker_set}"


def namespace_problems(namespace: str, path: str) -> list[Problem]:
    """A namespace is a DNS-1123 label (``ValidateNamespaceName``)."""
    return [
        Problem(path, f"Invalid value: {json.dumps(namespace)}: {message}")
        for message in apimachinery.dns1123_label(namespace)
    ]


def job_name_problem(job: str) -> Problem | None:
    """Every kind names a headless Service after the job, so the name is a DNS-1035 label."""
    if _DNS1035_LABEL.fullmatch(job):
        return None
    return Problem(
        "metadata.name",
        f"{job!r} is not a valid job name: use lowercase letters, digits and '-', "
        "start with a letter and end with a letter or digit",
    )


def check_name_limits(names: JobNames, groups: list[tuple[str, str]]) -> list[Problem]:
    """Problems with the job name and every name derived from it.

    ``groups`` lists (StatefulSet name, spec path of its worker group). Pod names need no
    check of their own: `<statefulset>-<index>` stays within 63 for any sane replica count.
    """
    job = names.job
    invalid = job_name_problem(job)
    if invalid:
        return [invalid]
    problems = []
    if len(names.master) > LABEL_MAX:
        problems.append(
            Problem(
                "metadata.name",
                f"{job!r} is {len(job)} characters; the derived master name {names.master!r} "
                f"would exceed Kubernetes' {LABEL_MAX}-character limit for a hostname; "
                f"shorten it to at most {LABEL_MAX - len('-master')} characters",
            )
        )
    for statefulset, path in groups:
        if len(statefulset) > STATEFULSET_MAX:
            problems.append(
                Problem(
                    path,
                    f"the derived StatefulSet name {statefulset!r} is {len(statefulset)} "
                    f"characters; Kubernetes allows {STATEFULSET_MAX} (its pods carry a "
                    "controller-revision-hash label); shorten metadata.name or the worker-set name",
                )
            )
    return problems
