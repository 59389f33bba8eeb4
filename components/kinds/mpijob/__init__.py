"""MPIJob: Kubeflow's MPI jobs (v1alpha2, v1, v2beta1) on the MPI graph."""
