"""Container images as code: declarations, rules, Dockerfiles, pinning and building.

:mod:`.declarations` (the typed model), :mod:`.catalogue` (the images trainjobs declares),
:mod:`.compatibility` (rules each declaration keeps), :mod:`.distributions` and
:mod:`.build_context` (what images are built from), :mod:`.dockerfiles` (rendered recipes),
:mod:`.references` and :mod:`.pinning` (digests), :mod:`.gpu_support` (CUDA against a pool's
GPUs) and :mod:`.cuda_image` (the Pulumi component that builds and pushes).
"""
