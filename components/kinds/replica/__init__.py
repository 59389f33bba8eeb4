"""The replica-typed kinds' shared reading: one parser for TFJob, PyTorchJob and their likes."""
