"""XGBoostJob: XGBoost's collective over a Master and Workers, each told its rank in its env."""
