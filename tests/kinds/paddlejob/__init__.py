"""PaddleJob as training-operator v1.9 runs it: its env in both modes, what it ignores."""
