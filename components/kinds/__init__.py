"""Job kinds: one subpackage per kind and the registry that accepts any of them.

Each kind holds its spec models (``spec``), its graph builder and what its pods need
(``graph``/``assets`` for ChainerJob, ``tf_config`` for TFJob, ``env`` for PyTorchJob).
:mod:`.registry` turns a spec document of any kind into a :class:`~.registry.JobDefinition`;
:mod:`.crds` generates the CRDs from the models.
"""
