"""TrainJob: Kubeflow Trainer v2 jobs on their training runtimes, rendered to a JobSet."""
