"""PaddleJob as a kind of the registry: how its documents are read, and its public names."""

from __future__ import annotations

from trainjobs.kinds.replica.kind import replica_kind

KIND = replica_kind("PaddleJob", "paddlejobs", "trainjobs.kinds.paddlejob")
