"""The torch.distributed environment of every PyTorchJob process (MASTER_ADDR, RANK...)."""

from __future__ import annotations

from components.core.replica_graph import index_check_script

BOOTSTRAP_SCRIPT = (
    "#!/bin/sh\n"
    "# RANK for this replica (master 0, workers 1..n), then the training command.\n"
    "set -eu\n" + index_check_script() + 'case "${TRAINJOBS_REPLICA_TYPE:?set by trainjobs}" in\n'
    "    master) RANK=$index ;;\n"
    "    worker) RANK=$((index + 1)) ;;\n"
    "    *) echo \"bootstrap.sh: unknown replica type '$TRAINJOBS_REPLICA_TYPE'\" >&2; exit 2 ;;\n"
    "esac\n"
    "export RANK\n"
    'exec "$@"\n'
)
