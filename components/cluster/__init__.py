"""The cluster side: seeing training jobs through on a real API server.

:mod:`.client` (credentials, found as kubectl finds them), :mod:`.errors` (what to retry,
what is unreachable), :mod:`.status` (a Job's phase and terminal condition), :mod:`.rules`
(how a job's Jobs decide its end: where completion is decided), :mod:`.target` (a job as
the watcher sees it), :mod:`.watch` (the list-and-watch loop), :mod:`.scaling` (workloads
stopped and restored, pods removed), :mod:`.record` (a finished run, recorded in the
cluster), :mod:`.diagnosis` (why a job failed), :mod:`.outcome` and :mod:`.progress` (what is
reported), :mod:`.supervisor` (all of it, for one job or every job of a stack at once) and
:mod:`.discovery` (finding jobs by name for `trainjobs watch` and `trainjobs status`).
Nothing here imports Pulumi.
"""
