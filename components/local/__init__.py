"""The local runtime: `trainjobs run` executes a job's resource graph on this machine.

Modules, one concept each:

- :mod:`~trainjobs.local.cluster`: what the graph becomes locally (pods, grants), pure;
- :mod:`~trainjobs.local.network`: network namespaces on a private bridge, or loopback;
- :mod:`~trainjobs.local.containers`: containers as host processes, image paths mapped;
- :mod:`~trainjobs.local.pods`: pod sandboxes, container processes, logs, process tracking;
- :mod:`~trainjobs.local.kubectl`: the kubectl stand-in the generated assets call;
- :mod:`~trainjobs.local.job_run`: Job semantics (retries, podFailurePolicy, deadline);
- :mod:`~trainjobs.local.pod_run`: one pod's lifecycle (create, start, stop) and registry entry;
- :mod:`~trainjobs.local.runtime`: the whole run (workers, outcome, scale-to-0, clean-up),
  and :mod:`~trainjobs.local.run_context`: what its pods and Jobs read of it;
- :mod:`~trainjobs.local.pod_runtime`: the interface the run drives its pods through, with
  two siblings behind it: :mod:`~trainjobs.local.process_runtime` (``--runtime process``)
  and :mod:`trainjobs.local.container` (``--runtime container``, engine pods);
- :mod:`~trainjobs.local.results` and :mod:`~trainjobs.local.signals`: the summary, and
  SIGINT/SIGTERM/SIGHUP.

Nothing is imported here: the kubectl stand-in runs by path and must start fast.
"""
