"""Seeing one job through: restore workers, watch to the end, stop workers, diagnose."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

import time
from collections.abc import Callable, Collection, Sequence
from typing import TYPE_CHECKING

from components.cluster.diagnosis import LOG_TAIL_LINES, describe_error, diagnose
from components.cluster.errors import DEFAULT_RETRY, RetryPolicy
from components.cluster.outcome import Outcome
from components.cluster.progress import PROGRESS_INTERVAL_SECONDS, Reporter, quiet
from components.cluster.scaling import WorkerRef, restore_workers, scale_down_workers
from components.cluster.status import SUCCEEDED, JobStatus
from components.cluster.watch import (
    DEFAULT_TIMEOUT_SECONDS,
    PULUMI_RESUME_HINT,
    failed_worker_job,
    jobs_by_name,
    list_jobs,
    read_job,
    watch_job,
)


def _restore_if_running(
    api: ApiClient,
    namespace: str,
    job_name: str,
    job_uid: str | None,
    workers: Sequence[WorkerRef],
    selector: str | None,
    worker_jobs: Collection[str],
    retry: RetryPolicy,
    report: Reporter,
    sleep: Callable[[float], None],
) -> None:
    """Best effort: a failure here is reported, and the watch that follows handles the
    cluster's errors properly (retries, clear access errors). A run whose master Job ended,
    or one of whose worker Jobs failed, is over: its workers stay stopped."""
    timeout = retry.request_timeout
    try:
        if selector is not None and worker_jobs:
            jobs = jobs_by_name(list_jobs(api, namespace, selector, request_timeout=timeout)[0])
        else:
            job, _ = read_job(api, namespace, job_name, request_timeout=timeout)
            jobs = {job_name: job} if job is not None else {}
    except Exception as error:
        report(f"could not read Job {job_name} to restore workers: {describe_error(error)}")
        return
    job = jobs.get(job_name)
    if job is None or job_uid not in (None, job.metadata.uid):
        return
    if not JobStatus.from_job(job).terminal and failed_worker_job(jobs, worker_jobs) is None:
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
    """Watch the master Job to its end, scale the workers to 0, and diagnose a failure.

    With ``selector`` (labels that match the master Job and its worker Jobs), a failure of a
    ``Job`` worker ends the job too (reason ``WorkerFailed``): the master Job, which would
    wait for that worker until its deadline, is then stopped with the workers
    (``spec.parallelism: 0``, reported among them), and the diagnosis reads the failed worker
    Job's pods. Without worker Jobs the selector is not used.

    A run that has not ended yet first gets its workers back to their declared size (see
    :class:`WorkerRef`). Workers are scaled down before the diagnosis is gathered: that is
    what saves GPU time, and the diagnosis reads the master's pods (or the failed worker's),
    not the others'. Raises JobWatchTimeout (workers left running), ClusterAccessError, or
    UserError for a selector that does not match the master Job.
    """
    worker_jobs = (
        [w.name for w in workers if w.kind == "Job" and w.name != job_name] if selector else []
    )
    if any(worker.replicas is not None for worker in workers):
        _restore_if_running(
            api, namespace, job_name, job_uid, workers, selector, worker_jobs, retry, report, sleep
        )
    status = watch_job(
        api,
        namespace,
        job_name,
        job_uid=job_uid,
        selector=selector,
        worker_jobs=worker_jobs,
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
    if status.phase != SUCCEEDED:
        diagnosis = diagnose(
            api,
            namespace,
            status.failed_worker or job_name,
            tail_lines=tail_lines,
            request_timeout=retry.request_timeout,
        )
    return Outcome(namespace, job_name, status, results, diagnosis)
