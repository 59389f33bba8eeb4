"""An API server's refusal, whichever client met it.

Told apart without loading the kubernetes client, whose package imports ~900 model modules
(seconds per command)."""

from __future__ import annotations

import sys


class ApiError(Exception):
    """What :class:`~trainjobs.cluster.rest.JsonClient` raises where the kubernetes client
    raises ``ApiException``: an answer outside 2xx (its status and reason), or status 0 for
    an exchange that could not be made (a TLS failure), with the same two fields."""

    def __init__(self, status: int | None, reason: str | None) -> None:
        super().__init__(f"({status})\nReason: {reason}")
        self.status = status
        self.reason = reason


def as_api_error(error: BaseException) -> ApiError | None:
    """``error`` as an :class:`ApiError` when it is one or the kubernetes client's
    ``ApiException``; None for anything else. The kubernetes client is looked up, never
    imported: while it is not loaded, nothing can have raised its exception."""
    if isinstance(error, ApiError):
        return error
    exceptions = sys.modules.get("kubernetes.client.exceptions")
    if exceptions is not None and isinstance(error, exceptions.ApiException):
        return ApiError(error.status, error.reason)
    return None
