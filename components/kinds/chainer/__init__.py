"""ChainerJob (Kubeflow KEP-141): ChainerMN over Open MPI, a master Job and worker StatefulSets."""
