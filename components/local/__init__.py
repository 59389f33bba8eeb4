"""The local runtime: `trainjobs run` executes a job's resource graph on this machine.

Modules, one concept each:

- :mod:`~components.local.cluster`: what the graph becomes locally (pods, grants), pure;
- :mod:`~components.local.network`: network namespaces on a private bridge, or loopback;
- :mod:`~components.local.containers`: containers as host processes, image paths mapped;
- :mod:`~components.local.pods`: pod sandboxes, container processes, logs, process tracking;
- :mod:`~components.local.kubectl`: the kubectl stand-in the generated assets call;
- :mod:`~components.local.job_run`: Job semantics (retries, podFailurePolicy, deadline);
- :mod:`~components.local.pod_run`: one pod's lifecycle (create, start, stop) and registry entry;
- :mod:`~components.local.runtime`: the whole run (workers, outcome, scale-to-0, clean-up);
- :mod:`~components.local.results` and :mod:`~components.local.signals`: the summary, and
  SIGINT/SIGTERM/SIGHUP;
- :mod:`components.local.container`: the container runtime beside it (``--runtime
  container``), which reuses the run, Job semantics and summary with engine pods.

Nothing is imported here: the kubectl stand-in runs by path and must start fast.
"""
