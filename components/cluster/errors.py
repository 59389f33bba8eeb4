"""API server failures: which are worth retrying, how often, and which a person must fix."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, TypeVar

from trainjobs.cluster.api_error import as_api_error
from trainjobs.core.durations import format_duration
from trainjobs.core.errors import UserError

T = TypeVar("T")


class ClusterAccessError(UserError):
    """The API server refused a request in a way retrying cannot fix (401, 403, 400...)."""

    exit_code = 1


@dataclass(frozen=True)
class RetryPolicy:
    """How the watcher copes with an API server that is slow, restarting or overloaded."""

    initial_backoff: float = 0.2
    """First pause after a failed request; doubles on each further failure."""
    max_backoff: float = 10.0
    connect_timeout: float = 10.0
    request_timeout: float = 30.0
    """Read timeout of list, patch and log requests (a half-open connection must not hang)."""
    scale_attempts: int = 6
    """Tries per worker before scale-down is reported as failed."""
    first_contact_seconds: float = 30.0
    """How long a watch retries an API server that has not answered once: a wrong address
    or a cluster that is down is reported then, not after the watch's whole timeout."""
    unreachable_seconds: float = 600.0
    """How long a watch retries an API server that answered before and now fails every
    request (a control plane upgrade takes minutes), before reporting it unreachable."""


DEFAULT_RETRY = RetryPolicy()
"""The policy everything uses unless a caller (a test, a benchmark) passes its own."""


class ResponseTooLarge(ClusterAccessError):
    """The server sent more than a response may hold (see trainjobs.cluster.transport)."""


class BadResponse(ClusterAccessError):
    """The server's answer is not what the Kubernetes API defines: not JSON, wrong types,
    an event that is not one. Retrying gets the same answer; a person must look."""

    def __init__(self, what: str, problem: str) -> None:
        problem = problem.splitlines()[0] if problem.strip() else "unreadable"
        if len(problem) > 200:
            problem = problem[:197] + "..."
        super().__init__(
            f"the Kubernetes API answered the request to {what} with an invalid response "
            f"({problem}); check that the kubeconfig points at a Kubernetes API server"
        )


MALFORMED = (ValueError, TypeError, AttributeError, KeyError, IndexError)
"""What the kubernetes client's deserialization raises for JSON that does not fit the
model (it checks with plain attribute, key and value access)."""


def bad_response(error: BaseException, what: str) -> BadResponse:
    return BadResponse(what, f"{type(error).__name__}: {error}")


class ClusterUnreachable(ClusterAccessError):
    """Every request to the API server failed for longer than the retry policy allows: the
    job's state is unknown, which is not the same as a job that is still running."""

    def __init__(self, url: str, seconds: float, last_error: str, connected: bool) -> None:
        self.url = url
        self.seconds = seconds
        self.last_error = last_error
        since = "stopped answering" if connected else "could not be reached"
        super().__init__(
            f"the Kubernetes API at {url} {since} for {format_duration(seconds)} (last error: "
            f"{last_error}); "
            "the job's state is unknown: check the cluster address and the network, then watch "
            "again"
        )


def is_transient(error: BaseException) -> bool:
    """Worth retrying: connection trouble, timeouts, 429 and 5xx (an API server restarting,
    overloaded or behind a load balancer that is rolling)."""
    import http.client

    import urllib3

    refusal = as_api_error(error)
    if refusal is not None:
        status = refusal.status or 0
        return status in (HTTPStatus.REQUEST_TIMEOUT, HTTPStatus.TOO_MANY_REQUESTS) or status >= 500
    return isinstance(error, urllib3.exceptions.HTTPError | http.client.HTTPException | OSError)


def is_read_timeout(error: BaseException) -> bool:
    import urllib3

    if isinstance(error, urllib3.exceptions.MaxRetryError):
        return isinstance(error.reason, urllib3.exceptions.ReadTimeoutError)
    return isinstance(error, urllib3.exceptions.ReadTimeoutError)


def access_error(error: BaseException, action: str, namespace: str) -> ClusterAccessError:
    refusal = as_api_error(error)
    status = refusal.status if refusal is not None else None
    hint = ""
    if status == HTTPStatus.UNAUTHORIZED:
        hint = "; check the credentials in the kubeconfig"
    elif status == HTTPStatus.FORBIDDEN:
        hint = (
            f"; the kubeconfig's identity needs, in namespace {namespace}: get/list/watch and "
            "patch on jobs, list and delete on pods, get on pods/log, patch on "
            "statefulsets/scale, list, get and patch on services and configmaps"
        )
    from trainjobs.cluster.diagnosis import describe_error

    return ClusterAccessError(
        f"the Kubernetes API refused to {action} ({describe_error(error)}){hint}"
    )


def server_url(api: object) -> str:
    """The API server's address, as the client was told it: a kubernetes ApiClient's
    configuration, or the JSON client's own (typed ``object``: this module is below both)."""
    configuration: Any = getattr(api, "configuration", None)
    return str(configuration.host if configuration is not None else getattr(api, "host", ""))


def call_with_retries(
    api: object,
    action: str,
    namespace: str,
    request: Callable[[], T],
    retry: RetryPolicy,
    *,
    missing_ok: bool = False,
    sleep: Callable[[float], None] = time.sleep,
) -> T | None:
    """One API request, retried while it fails transiently for up to the first-contact
    limit, then :class:`ClusterUnreachable`; refusals (401, 403...) are access errors.
    ``missing_ok``: None for a 404."""
    started = time.monotonic()
    backoff = retry.initial_backoff
    while True:
        try:
            return request()
        except Exception as error:
            refusal = as_api_error(error)
            if refusal is not None:
                if missing_ok and refusal.status == HTTPStatus.NOT_FOUND:
                    return None
                if refusal.status == 0:  # the client could not parse the answer (a bad date...)
                    raise BadResponse(action, str(refusal.reason)) from None
                if not is_transient(error):
                    raise access_error(error, action, namespace) from error
            elif isinstance(error, MALFORMED):
                raise bad_response(error, action) from None
            elif not is_transient(error):
                raise
            last: BaseException = error
        waited = time.monotonic() - started
        if waited >= retry.first_contact_seconds:
            from trainjobs.cluster.diagnosis import describe_error

            raise ClusterUnreachable(
                server_url(api), waited, describe_error(last), connected=False
            ) from last
        sleep(min(backoff, retry.first_contact_seconds - waited))
        backoff = min(backoff * 2, retry.max_backoff)


def best_effort(
    api: object,
    action: str,
    namespace: str,
    request: Callable[[], object],
    retry: RetryPolicy,
) -> str | None:
    """A write the watcher's outcome does not depend on: ``request`` retried as
    :func:`call_with_retries` retries it; None when it went through, else what failed, in the
    server's or the connection's words."""
    from trainjobs.cluster.diagnosis import describe_error

    try:
        call_with_retries(api, action, namespace, request, retry)
    except Exception as error:
        return describe_error(error.__cause__ or error)
    return None
