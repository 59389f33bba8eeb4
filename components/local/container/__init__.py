"""The container runtime: `trainjobs run --runtime container`, each pod a real engine pod.

A sibling of the process runtime (:mod:`components.local.runtime`), with the same Job and
StatefulSet semantics, logs and summary; here each pod is a podman pod (or docker's pause
container) on a private network and each container runs the job's own image. Modules:

- :mod:`~components.local.container.runtime`: the run (what differs from a process run);
- :mod:`~components.local.container.pod`: one pod's lifecycle on the engine;
- :mod:`~components.local.container.network`: the run's engine network and its hosts file;
- :mod:`~components.local.container.images`: which local image each container runs, built
  first when trainjobs declares it;
- :mod:`~components.local.container.api` and :mod:`~components.local.container.kubectl`: the
  exec path, an API-server stand-in on the host and the kubectl that calls it from inside
  containers (separable: another MPI transport needs neither);
- :mod:`~components.local.container.cleanup`: what killed runs left on the engine.
"""
