"""Running a job locally: the dispatcher to the process runtime or the container runtime.

It knows both runtimes; neither imports it, so they form no import cycle. Both are
:class:`~trainjobs.local.runtime.Run` with their own
:class:`~trainjobs.local.pod_runtime.PodRuntime`: siblings, neither built on the other.
"""

from __future__ import annotations

from trainjobs.core.errors import UserError
from trainjobs.kinds.registry import JobDefinition
from trainjobs.local.cluster import plan_cluster
from trainjobs.local.pod_security import check_baseline
from trainjobs.local.process_runtime import process_run
from trainjobs.local.results import RunResult
from trainjobs.local.runtime import NETWORK_MODES, RunOptions


def run_job(job: JobDefinition, options: RunOptions | None = None) -> RunResult:
    """Run the job to its outcome; never leaves a process, namespace or link behind (and
    removes what earlier runs that were killed left)."""
    options = options or RunOptions()
    if options.network not in NETWORK_MODES:
        raise UserError(f"--network must be one of {', '.join(NETWORK_MODES)}")
    plan = plan_cluster(job.graph, job.success_jobs, job.success_any, job.companions)
    check_baseline(plan)  # both runtimes: the same specs run (README: what each isolates)
    if options.runtime == "container":
        # Imported here: a process run needs no engine client or image builder.
        from trainjobs.local.container.runtime import container_run

        return container_run(job, plan, options).execute()
    return process_run(job, plan, options)
