"""Container engines: podman and docker behind one interface, used to build and run images.

:mod:`.engine` (the interface, its requests and errors, and finding an engine),
:mod:`.podman` and :mod:`.docker` (one adapter per engine) and :mod:`.settings` (the engine
configuration this project keeps for itself, never the host's).

The engines' names live here, importing nothing, so that a command line can offer them
without loading the interface (``trainjobs run --help`` stays light).
"""

ENGINES = ("podman", "docker")
