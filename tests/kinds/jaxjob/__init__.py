"""JAXJob as training-operator v1.9 runs it: its env, its one replica type."""
