"""XGBoostJob as training-operator v1.9 runs it: its env, its webhook's refusals."""
