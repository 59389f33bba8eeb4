"""The JobSet controller and webhook, and Kueue, as far as trainjobs depends on them, played
against the API fake (`tests.kubefake.FakeKube`) through its webhooks and observers.

Install with `install_jobset(fake, delay=...)` and `install_kueue(fake)`; each follows the
upstream file named next to the behaviour:

- jobset ``pkg/webhooks/jobset_webhook.go`` ``ValidateCreate``: a JobSet is refused when the
  longest pod name its Jobs would make, ``<jobset>-<replicatedJob>-<maxJobIndex>-
  <maxPodIndex>-xxxxx`` (``placement.GenPodName`` plus the 5-character suffix), is no
  DNS-1035 label of at most 63 characters (replicated Jobs default to Indexed completion,
  ``Default``);
- jobset ``pkg/controllers/jobset_controller.go``: the child Jobs are created by the
  controller's reconcile, after the JobSet is stored (``delay`` seconds later here), named
  ``<jobset>-<replicatedJob>-<index>`` (``placement.GenJobName``), owned by the JobSet,
  suspended while the JobSet is; resuming the JobSet resumes them, and deleting it deletes
  them (the garbage collector);
- kueue ``pkg/controller/jobframework/defaults.go`` ``ApplyDefaultForSuspend``: a JobSet
  with a ``kueue.x-k8s.io/queue-name`` label is created suspended, whatever it says;
  ``reconciler.go``: once its Workload is admitted (``admit_delay`` seconds later here),
  Kueue unsuspends it (``startJob``), again whatever its spec said;
  ``validation.go`` ``validateUpdateForQueueName``: the queue-name label cannot change
  while the JobSet is not suspended.
"""

from __future__ import annotations

import contextlib
import copy
import re
import threading
import time
from typing import Any

from tests.kubefake import ApiError, FakeKube
from trainjobs.core.jobset import QUEUE_LABEL, child_jobs

Obj = dict[str, Any]

_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


def _later(seconds: float, action: Any) -> None:
    timer = threading.Timer(seconds, action)
    timer.daemon = True
    timer.start()


class JobSetController:
    """The JobSet webhook and controller (see the module docstring)."""

    def __init__(self, fake: FakeKube, delay: float) -> None:
        self.fake = fake
        self.delay = delay

    def admit(self, operation: str, resource: str, _old: Obj | None, new: Obj) -> None:
        if resource != "jobsets" or operation != "CREATE":
            return
        name = new["metadata"]["name"]
        for index, replicated in enumerate(new["spec"].get("replicatedJobs") or []):
            template = replicated["template"]["spec"]
            template.setdefault("completionMode", "Indexed")
            completions = int(template.get("completions") or 1)
            replicas = int(replicated.get("replicas", 1))
            pod = f"{name}-{replicated['name']}-{replicas - 1}-{completions - 1}-abcde"
            if len(pod) > 63 or not _DNS1035.fullmatch(pod):
                raise ApiError(
                    422,
                    "Invalid",
                    f'JobSet.jobset.x-k8s.io "{name}" is invalid: spec.replicatedJobs[{index}]'
                    ".name: JobSet name is too long, pod names generated for this JobSet will "
                    "exceed 63 characters",
                )

    def observe(self, resource: str, event: str, obj: Obj) -> None:
        if resource != "jobsets":
            return
        meta = obj["metadata"]
        if event == "ADDED":
            _later(self.delay, lambda: self._create_jobs(meta["namespace"], meta["uid"]))
        elif event == "MODIFIED":
            _later(0, lambda: self._follow_suspension(obj))
        elif event == "DELETED":
            _later(0, lambda: self._delete_jobs(meta["namespace"], meta["uid"]))

    def _live(self, namespace: str, uid: str) -> Obj | None:
        with self.fake._cond:
            for (resource, ns, _), obj in self.fake._state.objects.items():
                if resource == "jobsets" and ns == namespace and obj["metadata"]["uid"] == uid:
                    return copy.deepcopy(obj)
        return None

    def _create_jobs(self, namespace: str, uid: str) -> None:
        """Reconcile: create each missing child Job, again while a predecessor of the same
        name is still being deleted."""
        while True:
            jobset = self._live(namespace, uid)
            if jobset is None or self.fake._stopping:
                return
            pending = False
            for job in child_jobs(jobset):
                meta = job["metadata"]
                owner = {"apiVersion": jobset["apiVersion"], "kind": "JobSet", "uid": uid}
                meta["ownerReferences"] = [
                    {**owner, "name": jobset["metadata"]["name"], "controller": True}
                ]
                job["spec"]["suspend"] = bool(jobset["spec"].get("suspend"))
                try:
                    self.fake.create("jobs", job)
                except ApiError as error:
                    if error.code != 409:
                        raise
                    try:
                        owners = self.fake.get("jobs", meta["name"], namespace)["metadata"]
                    except KeyError:  # deleted since the conflict: create it next round
                        pending = True
                        continue
                    if uid not in [o["uid"] for o in owners.get("ownerReferences") or []]:
                        pending = True
            if not pending:
                return
            time.sleep(0.05)

    def _children(self, namespace: str, uid: str) -> list[str]:
        with self.fake._cond:
            return [
                obj["metadata"]["name"]
                for (resource, ns, _), obj in self.fake._state.objects.items()
                if resource == "jobs"
                and ns == namespace
                and uid in [o["uid"] for o in obj["metadata"].get("ownerReferences") or []]
            ]

    def _follow_suspension(self, jobset: Obj) -> None:
        meta = jobset["metadata"]
        suspend = bool(jobset["spec"].get("suspend"))
        for name in self._children(meta["namespace"], meta["uid"]):
            # A child deleted meanwhile (TTL, the JobSet's own cleanup) has nothing to follow.
            with contextlib.suppress(KeyError, ApiError):
                job = self.fake.get("jobs", name, meta["namespace"])
                if bool(job["spec"].get("suspend")) != suspend:
                    self.fake.patch_object(
                        "jobs", name, meta["namespace"], {"spec": {"suspend": suspend}}
                    )

    def _delete_jobs(self, namespace: str, uid: str) -> None:
        for name in self._children(namespace, uid):
            with contextlib.suppress(ApiError):  # already gone
                self.fake.request_delete("jobs", name, namespace, "Background")


class Kueue:
    """Kueue's job webhook and reconciler for queued JobSets (see the module docstring)."""

    def __init__(self, fake: FakeKube, admit_delay: float) -> None:
        self.fake = fake
        self.admit_delay = admit_delay
        self.admitted: list[str] = []

    def admit(self, operation: str, resource: str, old: Obj | None, new: Obj) -> None:
        if resource != "jobsets":
            return
        labels = new["metadata"].get("labels") or {}
        if operation == "CREATE" and QUEUE_LABEL in labels:
            new["spec"]["suspend"] = True
        if operation == "UPDATE" and old is not None and not new["spec"].get("suspend"):
            before = (old["metadata"].get("labels") or {}).get(QUEUE_LABEL)
            if labels.get(QUEUE_LABEL) != before:
                raise ApiError(
                    422,
                    "Invalid",
                    f'JobSet.jobset.x-k8s.io "{new["metadata"]["name"]}" is invalid: '
                    f"metadata.labels[{QUEUE_LABEL}]: Invalid value: "
                    f'"{labels.get(QUEUE_LABEL)}": field is immutable',
                )

    def observe(self, resource: str, event: str, obj: Obj) -> None:
        labels = obj["metadata"].get("labels") or {}
        if resource == "jobsets" and event == "ADDED" and QUEUE_LABEL in labels:
            meta = obj["metadata"]
            _later(self.admit_delay, lambda: self._start(meta["namespace"], meta["name"]))

    def _start(self, namespace: str, name: str) -> None:
        try:
            self.fake.patch_object("jobsets", name, namespace, {"spec": {"suspend": False}})
        except ApiError:
            return  # deleted before its admission
        self.admitted.append(name)


def install_jobset(fake: FakeKube, *, delay: float = 0.0) -> JobSetController:
    controller = JobSetController(fake, delay)
    fake.webhooks.append(controller.admit)
    fake.observers.append(controller.observe)
    return controller


def install_kueue(fake: FakeKube, *, admit_delay: float = 0.0) -> Kueue:
    kueue = Kueue(fake, admit_delay)
    fake.webhooks.append(kueue.admit)
    fake.observers.append(kueue.observe)
    return kueue
