"""A document of a kind no entry reads: MXJob is told its history and the way forward, any
other kind the kinds there are, and XGBoost or JAX users the TrainJob runtimes too."""

from __future__ import annotations

from tests.kinds.kind_documents import refused


def test_an_mxjob_is_refused_with_its_retirement_and_the_way_forward(tmp_path, capsys):
    document = {"apiVersion": "kubeflow.org/v1", "kind": "MXJob", "metadata": {"name": "m"}}
    assert refused(document, tmp_path, capsys) == [
        "kind: MXJob is retired: Kubeflow's training-operator deprecated it in v1.8 and "
        "removed it in v1.9 (Apache MXNet itself was retired to the Apache Attic in 2023), so "
        "no operator runs it any more; port the training to PyTorch and write a PyTorchJob, or "
        "a TrainJob with the torch-distributed runtime"
    ]


def test_an_unknown_kind_is_told_the_kinds_and_the_trainjob_runtimes(tmp_path, capsys):
    document = {"apiVersion": "kubeflow.org/v1", "kind": "LightGBMJob", "metadata": {"name": "m"}}
    assert refused(document, tmp_path, capsys) == [
        "kind: must be one of ChainerJob, TFJob, PyTorchJob, MPIJob, TrainJob, XGBoostJob, "
        "PaddleJob, JAXJob (got 'LightGBMJob'); XGBoost and JAX jobs also run as a TrainJob "
        "with the xgboost-distributed or jax-distributed runtime"
    ]
