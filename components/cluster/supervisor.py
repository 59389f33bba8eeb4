"""Seeing jobs through: start a run, watch it to its end, stop what is left, diagnose, record.

Two entry points. :func:`see_through` runs the whole sequence for one training job
described by a :class:`~trainjobs.cluster.target.WatchTarget` (the Pulumi watcher and
`trainjobs watch JOB`); :func:`see_all_through` does it for every job of a stack at once,
one thread per job, so that each job is stopped the moment it ends however many there are.
:func:`run_watch` is the explicit form (`trainjobs watch MASTER --worker ...`): a master Job
and the workers to stop, nothing else known.
"""

from __future__ import annotations

import concurrent.futures
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING

from trainjobs.cluster.diagnosis import LOG_TAIL_LINES, describe_error, diagnose
from trainjobs.cluster.errors import (
    DEFAULT_RETRY,
    RetryPolicy,
    best_effort,
    call_with_retries,
)
from trainjobs.cluster.outcome import Outcome
from trainjobs.cluster.progress import PROGRESS_INTERVAL_SECONDS, Reporter, quiet
from trainjobs.cluster.record import FinishedRun, read_record, write_record
from trainjobs.cluster.rules import CompletionRules, decide
from trainjobs.cluster.scaling import (
    ScaleResult,
    WorkerRef,
    delete_pods,
    restore_workers,
    scale_down_workers,
)
from trainjobs.cluster.status import JobStatus
from trainjobs.cluster.target import WatchTarget
from trainjobs.cluster.watch import (
    DEFAULT_TIMEOUT_SECONDS,
    PULUMI_RESUME_HINT,
    job_statuses,
    jobs_by_name,
    list_jobs,
    read_job,
    watch_job,
)
from trainjobs.core.phases import JobPhase

if TYPE_CHECKING:
    from kubernetes.client import ApiClient, V1Job


def _run_over(
    rules: CompletionRules, jobs: Mapping[str, V1Job], job_uid: str | None, namespace: str
) -> bool:
    """Whether the listed Jobs show a run that has ended (or whose master is gone)."""
    master = jobs.get(rules.master)
    if master is None or job_uid not in (None, master.metadata.uid):
        return True
    final, _ = decide(rules, job_statuses(jobs, rules.watched), namespace)
    return final is not None


def _list(
    api: ApiClient, namespace: str, rules: CompletionRules, selector: str | None, timeout: float
) -> dict[str, V1Job]:
    if selector is not None and rules.others:
        return jobs_by_name(list_jobs(api, namespace, selector, request_timeout=timeout)[0])
    job, _ = read_job(api, namespace, rules.master, request_timeout=timeout)
    return {rules.master: job} if job is not None else {}


def _restore_if_running(
    api: ApiClient,
    namespace: str,
    rules: CompletionRules,
    job_uid: str | None,
    workers: Sequence[WorkerRef],
    selector: str | None,
    retry: RetryPolicy,
    report: Reporter,
    sleep: Callable[[float], None],
) -> None:
    """Best effort: a failure here is reported, and the watch that follows handles the
    cluster's errors properly (retries, clear access errors). A run that has ended stays
    stopped."""
    try:
        jobs = _list(api, namespace, rules, selector, retry.request_timeout)
    except Exception as error:
        report(f"could not read Job {rules.master} to restore workers: {describe_error(error)}")
        return
    if not _run_over(rules, jobs, job_uid, namespace):
        restore_workers(api, namespace, workers, retry=retry, report=report, sleep=sleep)


def run_watch(
    api: ApiClient,
    namespace: str,
    job_name: str,
    workers: Sequence[WorkerRef] = (),
    *,
    job_uid: str | None = None,
    selector: str | None = None,
    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
    report: Reporter = quiet,
    resume_hint: str = PULUMI_RESUME_HINT,
    progress_interval: float = PROGRESS_INTERVAL_SECONDS,
    tail_lines: int = LOG_TAIL_LINES,
    retry: RetryPolicy = DEFAULT_RETRY,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> Outcome:
    """Watch a master Job to its end, stop the workers, and diagnose a failure.

    With ``selector`` (labels that match the master Job and its worker Jobs), a failure of a
    ``Job`` worker ends the job too (reason ``WorkerFailed``): the master Job, which would
    wait for that worker until its deadline, is then stopped with the workers (suspended,
    reported among them), and the diagnosis reads the failed worker Job's pods. Without
    worker Jobs the selector is not used.

    A run that has not ended yet first gets its workers back (see :class:`WorkerRef`).
    Workers are stopped before the diagnosis is gathered: that is what saves GPU time, and
    the diagnosis reads the master's pods (or the failed worker's), not the others'. Raises
    JobWatchTimeout (workers left running), ClusterUnreachable, ClusterAccessError, or
    UserError for a selector that does not match the master Job.
    """
    worker_jobs = tuple(w.name for w in workers if w.kind == "Job" and w.name != job_name)
    rules = CompletionRules(job_name, worker_jobs=worker_jobs if selector else ())
    if any(worker.replicas is not None or worker.kind == "Job" for worker in workers):
        _restore_if_running(api, namespace, rules, job_uid, workers, selector, retry, report, sleep)
    status = watch_job(
        api,
        namespace,
        job_name,
        job_uid=job_uid,
        selector=selector,
        rules=rules,
        timeout_seconds=timeout_seconds,
        report=report,
        resume_hint=resume_hint,
        progress_interval=progress_interval,
        retry=retry,
        clock=clock,
        sleep=sleep,
    )
    stop = list(workers)
    if status.failed_worker is not None and ("Job", job_name) not in {
        (w.kind, w.name) for w in workers
    }:
        # The master waits for the failed worker (a TensorFlow or torch.distributed
        # rendezvous) and would hold its pods until activeDeadlineSeconds: stop it as well.
        stop.append(WorkerRef("Job", job_name))
    results = scale_down_workers(api, namespace, stop, retry=retry, report=report, sleep=sleep)
    diagnosis = None
    if status.phase != JobPhase.SUCCEEDED:
        diagnosis = diagnose(
            api,
            namespace,
            status.failed_worker or job_name,
            tail_lines=tail_lines,
            request_timeout=retry.request_timeout,
        )
    return Outcome(namespace, job_name, status, results, diagnosis)


STARTED = "Started"
"""The reason of an outcome that only says the run was started (``start_only``)."""

JOBSET_START_SECONDS = 120.0
"""How long a queued job's watch waits for the JobSet controller to create the Jobs of a
JobSet that exists: it creates them after the JobSet is stored (jobset
pkg/controllers/jobset_controller.go, a reconcile of the stored JobSet), usually within
seconds; longer, and the controller is most likely not running."""

JOBSET_POLL_SECONDS = 1.0


@dataclasses.dataclass(frozen=True)
class WatchOptions:
    """How :func:`see_through` watches: deadlines, pacing, retries, and where it reports.

    ``start_only``: start the run and return (``trainjobs:watch start``): the outcome is
    Running with reason :data:`STARTED`, and `trainjobs watch JOB` sees the run through."""

    timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS
    report: Reporter = quiet
    resume_hint: str = PULUMI_RESUME_HINT
    progress_interval: float = PROGRESS_INTERVAL_SECONDS
    tail_lines: int = LOG_TAIL_LINES
    retry: RetryPolicy = DEFAULT_RETRY
    clock: Callable[[], float] = time.monotonic
    sleep: Callable[[float], None] = time.sleep
    start_only: bool = False
    jobset_start_seconds: float = JOBSET_START_SECONDS


def see_through(
    api: ApiClient,
    target: WatchTarget,
    *,
    uids: Mapping[str, str] | None = None,
    options: WatchOptions | None = None,
) -> Outcome:
    """One training job from its start to its end.

    1. A job its spec suspends (``runPolicy.suspend``) is stopped and reported Suspended.
    2. A gated job whose run is recorded as ended is not started again: its recorded
       outcome is returned and its Jobs stay suspended (see :mod:`.record`).
    3. Otherwise a run that has not ended is started: suspended Jobs resumed, StatefulSets
       back to their declared size. Then the job is watched to its end (:mod:`.rules`).
    4. At the end, what is left running is stopped unless the cleanPodPolicy is None, the
       failure is diagnosed, finished pods are removed for cleanPodPolicy All, the run is
       recorded, and ``ttlSecondsAfterFinished`` is handed to the Jobs.

    ``uids`` (Job name -> uid, from Pulumi) tie the watch to the Jobs Pulumi created: a
    master Job with another uid was replaced and is reported Deleted. Raises what
    :func:`watch_job` raises.
    """
    options = options or WatchOptions()
    retry, report = options.retry, options.report
    namespace, rules = target.namespace, target.rules
    job_uid = (uids or {}).get(rules.master)
    label = f"job {target.key}"

    def scale(workers: Sequence[WorkerRef], down: bool) -> tuple[ScaleResult, ...]:
        change = scale_down_workers if down else restore_workers
        return change(
            api,
            namespace,
            workers,
            retry=retry,
            report=lambda line: report(f"{label}: {line}"),
            sleep=options.sleep,
        )

    if target.suspend:
        return _suspended(target, scale(_everything(target), down=True))
    jobs = call_with_retries(
        api,
        f"list the Jobs of {target.key}",
        namespace,
        lambda: _list(api, namespace, rules, target.selector, retry.request_timeout),
        retry,
        sleep=options.sleep,
    )
    assert jobs is not None
    if target.jobset is not None and rules.master not in jobs:
        jobs = _await_jobset_jobs(api, target, options)
        if rules.master not in jobs and _jobset_exists(api, target, retry):
            return _jobs_never_created(target, options)
    if target.gated and target.anchor is not None and target.run is not None:
        finished = read_record(api, namespace, target.anchor, retry=retry)
        if finished is not None and finished.run == target.run:
            return _already_ended(target, finished, jobs)
    over = _run_over(rules, jobs, job_uid, namespace)
    if not over and target.jobset is None:
        stopped = [
            WorkerRef("Job", name)
            for name in rules.watched
            if name in jobs and jobs[name].spec is not None and jobs[name].spec.suspend
        ]
        sized = [w for w in target.workers if w.kind == "StatefulSet"]
        if stopped or sized:
            # Workers first: the Jobs that start next look for them.
            scale([*sized, *stopped], down=False)
    if options.start_only and not over:
        return _started(target)
    status = watch_job(
        api,
        namespace,
        rules.master,
        job_uid=job_uid,
        selector=target.selector,
        rules=rules,
        timeout_seconds=options.timeout_seconds,
        report=report,
        resume_hint=options.resume_hint,
        progress_interval=options.progress_interval,
        retry=retry,
        clock=options.clock,
        sleep=options.sleep,
    )
    return _finish(api, target, status, scale, options)


def _await_jobset_jobs(
    api: ApiClient, target: WatchTarget, options: WatchOptions
) -> dict[str, V1Job]:
    """The job's Jobs once the JobSet controller has created its master, or whatever is
    listed when the JobSet is gone or ``jobset_start_seconds`` have passed. Judging the
    job before then would call a job that is about to start Deleted."""
    rules, retry = target.rules, options.retry
    deadline = options.clock() + options.jobset_start_seconds
    options.report(
        f"job {target.key}: waiting for the JobSet controller to create the Jobs of JobSet "
        f"{target.namespace}/{target.jobset}"
    )
    while True:
        jobs = call_with_retries(
            api,
            f"list the Jobs of {target.key}",
            target.namespace,
            lambda: _list(api, target.namespace, rules, target.selector, retry.request_timeout),
            retry,
            sleep=options.sleep,
        )
        assert jobs is not None
        if rules.master in jobs or options.clock() >= deadline:
            return jobs
        if not _jobset_exists(api, target, retry):
            return jobs
        options.sleep(JOBSET_POLL_SECONDS)


def _jobset_exists(api: ApiClient, target: WatchTarget, retry: RetryPolicy) -> bool:
    from kubernetes import client

    from trainjobs.core.jobset import API_VERSION

    group, version = API_VERSION.split("/")
    found = call_with_retries(
        api,
        f"read JobSet {target.namespace}/{target.jobset}",
        target.namespace,
        lambda: client.CustomObjectsApi(api).get_namespaced_custom_object(
            group,
            version,
            target.namespace,
            "jobsets",
            target.jobset,
            _request_timeout=retry.request_timeout,
        ),
        retry,
        missing_ok=True,
    )
    return found is not None


def _jobs_never_created(target: WatchTarget, options: WatchOptions) -> Outcome:
    status = JobStatus(
        phase=JobPhase.DELETED,
        reason="JobsNotCreated",
        message=(
            f"JobSet {target.namespace}/{target.jobset} has no Job {target.rules.master} after "
            f"{options.jobset_start_seconds:.0f}s: is the JobSet controller running "
            "(kubectl get pods -n jobset-system)?"
        ),
    )
    return Outcome(target.namespace, target.name, status)


def _started(target: WatchTarget) -> Outcome:
    status = JobStatus(
        phase=JobPhase.RUNNING,
        reason=STARTED,
        message=(
            f"started and not watched (trainjobs:watch start): `trainjobs watch {target.name} "
            f"--namespace {target.namespace}` sees it through (stops its workers, records "
            "its run)"
        ),
    )
    return Outcome(target.namespace, target.name, status)


def _everything(target: WatchTarget) -> list[WorkerRef]:
    """Every workload the job's run uses: its Jobs and its worker StatefulSets."""
    if target.jobset is not None:
        return []
    jobs = [WorkerRef("Job", name) for name in target.jobs]
    return jobs + [w for w in target.workers if w.kind == "StatefulSet"]


def _suspended(target: WatchTarget, results: tuple[ScaleResult, ...]) -> Outcome:
    status = JobStatus(
        phase=JobPhase.SUSPENDED,
        reason="Suspended",
        message="suspended by its spec (runPolicy.suspend: true); set it to false to run it",
    )
    return Outcome(target.namespace, target.name, status, results)


def _already_ended(
    target: WatchTarget, finished: FinishedRun, jobs: Mapping[str, V1Job]
) -> Outcome:
    """The recorded end of a run whose Jobs were created again (suspended): nothing runs."""
    from datetime import datetime

    end = None
    if finished.completion_time:
        end = datetime.fromisoformat(finished.completion_time.replace("Z", "+00:00"))
    status = JobStatus(
        phase=finished.phase,
        reason=finished.reason,
        message=finished.message,
        completion_time=end,
        uid=jobs[target.rules.master].metadata.uid if target.rules.master in jobs else None,
    )
    kind, name = target.anchor or ("", "")
    note = (
        f"this run already ended ({finished.phase}), as recorded on {kind}/{name}: its Jobs "
        "stay suspended and nothing runs again. To run the job again, change its spec, e.g. "
        "bump a trainjobs.io/run annotation on its pod templates"
    )
    return Outcome(target.namespace, target.name, status, notes=(note,))


def _finish(
    api: ApiClient,
    target: WatchTarget,
    status: JobStatus,
    scale: Callable[[Sequence[WorkerRef], bool], tuple[ScaleResult, ...]],
    options: WatchOptions,
) -> Outcome:
    namespace, rules = target.namespace, target.rules
    notes: list[str] = []
    results: tuple[ScaleResult, ...] = ()
    if target.clean_pod_policy == "None":
        notes.append(
            "cleanPodPolicy None: pods that still run are left running, as under Kubeflow "
            "(set it to Running to stop them when the job ends)"
        )
    else:
        results = scale(_still_running(api, target, options.retry), True)
    diagnosis = None
    if status.phase != JobPhase.SUCCEEDED:
        diagnosis = diagnose(
            api,
            namespace,
            status.failed_worker or rules.master,
            tail_lines=options.tail_lines,
            request_timeout=options.retry.request_timeout,
        )
    if target.clean_pod_policy == "All":
        delete_pods(api, namespace, target.selector, retry=options.retry, report=options.report)
    if status.terminal and status.phase != JobPhase.DELETED and target.anchor is not None:
        notes += _record(api, target, status, options)
    return Outcome(namespace, target.name, status, results, diagnosis, tuple(notes))


def _still_running(api: ApiClient, target: WatchTarget, retry: RetryPolicy) -> list[WorkerRef]:
    """Every workload of the job that may still run: its Jobs that have not finished and
    its StatefulSets. A Job that cannot be read is stopped anyway (the patch is harmless)."""
    everything = _everything(target)
    try:
        listed, _ = list_jobs(
            api, target.namespace, target.selector, request_timeout=retry.request_timeout
        )
    except Exception:
        return everything
    finished = {job.metadata.name for job in listed if JobStatus.from_job(job).terminal}
    return [w for w in everything if not (w.kind == "Job" and w.name in finished)]


def _record(
    api: ApiClient, target: WatchTarget, status: JobStatus, options: WatchOptions
) -> list[str]:
    """Record the ended run and hand the TTL to the Jobs; notes on what could not be done."""
    assert target.anchor is not None
    kind, name = target.anchor
    if target.run is None:
        return []
    outputs = status.to_outputs()
    finished = FinishedRun(
        target.run, status.phase, status.reason, status.message, outputs["completion_time"]
    )
    failure = write_record(api, target.namespace, target.anchor, finished, retry=options.retry)
    if failure is not None:
        return [
            f"could not record the finished run on {kind}/{name} ({failure}): if its Jobs are "
            "removed and created again, the job runs again"
        ]
    if target.ttl_seconds_after_finished is None or target.jobset is not None:
        return []
    return _hand_over_ttl(api, target, options)


def _hand_over_ttl(api: ApiClient, target: WatchTarget, options: WatchOptions) -> list[str]:
    """``ttlSecondsAfterFinished`` on every Job, now that the run's end is recorded: the TTL
    controller then removes the finished Jobs and their pods (stopped, suspended Jobs never
    finish and stay). The program leaves it out of the Jobs it creates, so no Job can
    vanish before its run is recorded."""
    from kubernetes import client

    batch = client.BatchV1Api(api)
    timeout = (options.retry.connect_timeout, options.retry.request_timeout)
    body = {"spec": {"ttlSecondsAfterFinished": target.ttl_seconds_after_finished}}
    notes = []
    for name in target.jobs:
        where = f"Job {target.namespace}/{name}"
        patch = partial(
            batch.patch_namespaced_job, name, target.namespace, body, _request_timeout=timeout
        )
        failure = best_effort(api, f"patch {where}", target.namespace, patch, options.retry)
        if failure is not None:
            notes.append(f"{where}: TTL not set ({failure})")
    return notes


def connections_for(targets: Sequence[WatchTarget]) -> int:
    """Connections a shared client needs: a watch stream and a request per job."""
    return max(4, 2 * len(targets))


def see_all_through(
    api: ApiClient,
    targets: Sequence[WatchTarget],
    *,
    uids: Mapping[str, Mapping[str, str]] | None = None,
    options: WatchOptions | None = None,
) -> dict[str, Outcome | BaseException]:
    """Every job at once, one thread each: its outcome, or what its watch raised, by key.

    The threads start together, each with ``options.timeout_seconds`` from then, and share
    the reporter. The API client is shared too (its connection pool is thread-safe): create
    it with :func:`trainjobs.cluster.client.load_api_client`'s ``connections`` at
    :func:`connections_for` the jobs, so that no watch waits for a connection.
    """
    options = options or WatchOptions()

    def one(target: WatchTarget) -> Outcome:
        return see_through(api, target, uids=(uids or {}).get(target.key), options=options)

    results: dict[str, Outcome | BaseException] = {}
    if not targets:
        return results
    with concurrent.futures.ThreadPoolExecutor(
        max_workers=len(targets), thread_name_prefix="trainjobs-watch"
    ) as pool:
        futures = {target.key: pool.submit(one, target) for target in targets}
        for key, future in futures.items():
            error = future.exception()
            results[key] = error if error is not None else future.result()
    return results
