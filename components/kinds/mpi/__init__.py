"""The MPI graph ChainerJob and MPIJob share: launcher Job, worker StatefulSets, assets, ssh."""
