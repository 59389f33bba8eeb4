"""The cluster side: seeing a training job through on a real API server.

:mod:`.client` (credentials, found as kubectl finds them), :mod:`.errors` (what to retry),
:mod:`.status` (a Job's phase and terminal condition: where completion is decided),
:mod:`.watch` (the list-and-watch loop), :mod:`.scaling` (workers stopped and restored),
:mod:`.diagnosis` (why a job failed), :mod:`.outcome` and :mod:`.progress` (what is reported),
and :mod:`.supervisor` (all of it for one job). Nothing here imports Pulumi.
"""
