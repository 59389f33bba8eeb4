"""The container runtime: `trainjobs run --runtime container`, each pod a real engine pod.

A sibling of the process runtime (:mod:`trainjobs.local.runtime`), with the same Job and
StatefulSet semantics, logs and summary; here each pod is a podman pod (or docker's pause
container) on a private network and each container runs the job's own image. Modules:

- :mod:`~trainjobs.local.container.runtime`: the runtime the run drives its pods through;
- :mod:`~trainjobs.local.container.pod`: one pod's lifecycle on the engine;
- :mod:`~trainjobs.local.container.network`: the run's engine network and its hosts file;
- :mod:`~trainjobs.local.container.images`: which local image each container runs, built
  first when trainjobs declares it;
- :mod:`~trainjobs.local.container.api` and :mod:`~trainjobs.local.container.kubectl`: the
  exec path, an API-server stand-in on the host and the kubectl that calls it from inside
  containers (separable: another MPI transport needs neither);
- :mod:`~trainjobs.local.container.cleanup`: what killed runs left on the engine.
"""
