"""What a document of a kind no registry entry reads is told, retired kinds' history included.

MXJob: kubeflow/mxnet-operator served it (kubeflow.org/v1alpha1 to v1), then
kubeflow/training-operator from 1.3; 1.8 warned on every MXJob that it would be removed
(``pkg/webhooks/mxnet/mxnet_webhook.go``, #2058) and 1.9.0 removed it ("Remove support for
MXJob", #2150), after Apache MXNet itself was retired to the Apache Attic in 2023.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from trainjobs.core.errors import Problem, one_of

RETIRED = {
    "MXJob": (
        "MXJob is retired: Kubeflow's training-operator deprecated it in v1.8 and removed it in "
        "v1.9 (Apache MXNet itself was retired to the Apache Attic in 2023), so no operator "
        "runs it any more; port the training to PyTorch and write a PyTorchJob, or a TrainJob "
        "with the torch-distributed runtime"
    ),
}
"""Kinds Kubeflow served once and serves no longer -> what became of them."""

TRAINJOB_RUNTIMES = (
    "XGBoost and JAX jobs also run as a TrainJob with the xgboost-distributed or "
    "jax-distributed runtime"
)


def unknown_kind(document: Mapping[str, Any], kinds: Iterable[str]) -> Problem:
    """The problem of a document whose ``kind`` no registry entry reads; a kind it names
    that is no retired one is also told the TrainJob runtimes."""
    kind = document.get("kind")
    if isinstance(kind, str) and kind in RETIRED:
        return Problem("kind", RETIRED[kind])
    names = list(kinds)
    message = one_of(document, "kind", names, f"kind: {names[0]}")
    if isinstance(kind, str):
        message += f"; {TRAINJOB_RUNTIMES}"
    return Problem("kind", message)
