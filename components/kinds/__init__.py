"""Job kinds: one subpackage per kind and the registry that accepts any of them.

Each kind holds its ``KIND`` (``kind``: a :class:`~.kind.Kind`), its public component
(``component``), its spec models (``spec``) and what its pods need (``tf_config`` for TFJob,
``env`` for PyTorchJob); what kinds share lives beside them (:mod:`.mpi`, the MPI graph of
ChainerJob and MPIJob; :mod:`.replica`, the replica-job parser). :mod:`.registry` lists the
kinds and turns a spec document of any kind into a :class:`~.kind.JobDefinition`;
:mod:`.crds` generates the CRDs from the models.
"""
