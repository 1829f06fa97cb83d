"""The one place that decides which error a caller of a downstream service sees.

The question behind every mapping is: *could the effect have been applied?*

- Known not applied → ``TransientError`` (retry is safe) or ``BusinessRejectedError``
  (permanent refusal: compensate).
- Cannot know → ``OutcomeUnknownError``: a write whose request may have reached the service
  and whose reply we did not get (or could not read). Only reconciliation may decide.
- Reads never apply effects, so every read failure is ``TransientError``.

HTTP adapters and simulated faults both map through here, so a simulated fault produces
exactly the error a real client would see for the same situation.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from enum import StrEnum
from functools import cache
from typing import TYPE_CHECKING

from services.faults import FaultKind
from services.values import Operation
from stepsaga.errors import (
    ActionConflictError,
    ActionInProgressError,
    BusinessRejectedError,
    OutcomeUnknownError,
    StepSagaError,
    TransientError,
)

if TYPE_CHECKING:
    import httpx


class Dispatch(StrEnum):
    """Whether a failed request may have reached the service."""

    NOT_SENT = "not_sent"
    MAYBE_SENT = "maybe_sent"


#: Transport failures that prove no byte of the request reached a server: no connection
#: was ever established (refused, unreachable, connect timeout, no pooled connection free,
#: a URL scheme we cannot speak). Everything else — read timeouts, resets, a server that
#: closed the connection, write failures midway — may have happened after the service got
#: the request.
@cache
def _not_sent() -> tuple[type[httpx.TransportError], ...]:
    import httpx  # ~80 ms: paid by the HTTP clients and a simulated timeout, not at start-up

    return (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)


#: 409 codes meaning "the same key is being processed right now" (Stripe:
#: ``idempotency_key_in_use``); any other 409 is a conflicting reuse.
_IN_PROGRESS_CODES = frozenset({"in_progress", "idempotency_key_in_use"})
DEFAULT_RETRY_AFTER_SECONDS = 1.0


def dispatch_of(exc: httpx.TransportError) -> Dispatch:
    return Dispatch.NOT_SENT if isinstance(exc, _not_sent()) else Dispatch.MAYBE_SENT


def _where(operation: Operation) -> str:
    return f"{operation.service}.{operation}"


def _data(operation: Operation, **extra: object) -> dict[str, object]:
    return {"service": str(operation.service), "operation": str(operation), **extra}


def for_transport_error(operation: Operation, exc: httpx.TransportError) -> StepSagaError:
    """A request that got no HTTP reply at all."""
    return _no_reply(operation, type(exc).__name__, dispatch_of(exc))


def _no_reply(operation: Operation, kind: str, dispatch: Dispatch) -> StepSagaError:
    """What ``for_transport_error`` maps an httpx ``kind`` to (the simulated services name
    one without importing httpx)."""
    data = _data(operation, transport_error=kind, dispatch=str(dispatch))
    if dispatch is Dispatch.NOT_SENT:
        return TransientError(f"{_where(operation)}: not sent ({kind})", **data)
    if not operation.is_write:
        return TransientError(f"{_where(operation)}: no reply ({kind})", **data)
    return OutcomeUnknownError(
        f"{_where(operation)}: request may have been applied, reply lost ({kind})", **data
    )


def _error_body(body: bytes) -> tuple[str | None, float | None]:
    """``(code, retry_after_seconds)`` from ``{"error": {"code": …, "retry_after_seconds": …}}``;
    anything unreadable yields ``(None, None)``. The free-text message is ignored on purpose:
    it may echo personal data (an address) into logs."""
    try:
        decoded = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None, None
    error = decoded.get("error") if isinstance(decoded, dict) else None
    if not isinstance(error, dict):
        return None, None
    code = error.get("code")
    retry = error.get("retry_after_seconds")
    return (
        code if isinstance(code, str) else None,
        float(retry) if isinstance(retry, int | float) and not isinstance(retry, bool) else None,
    )


def _retry_after(headers: Mapping[str, str], from_body: float | None) -> float | None:
    if from_body is not None and math.isfinite(from_body) and from_body >= 0:
        return from_body
    raw = headers.get("retry-after")  # callers pass httpx.Headers: case-insensitive
    try:
        seconds = float(raw) if raw is not None else None
    except ValueError:
        return None  # an HTTP date: ignore, the state machine's backoff applies
    return max(0.0, seconds) if seconds is not None and math.isfinite(seconds) else None


def for_status(
    operation: Operation, status: int, body: bytes, headers: Mapping[str, str]
) -> StepSagaError:
    """A non-2xx reply (404 on a lookup is "absent", handled by the caller before this)."""
    code, retry_from_body = _error_body(body)
    retry_after = _retry_after(headers, retry_from_body)
    data = _data(operation, status=status, code=code)
    retry = {} if retry_after is None else {"retry_after_seconds": retry_after}
    where = f"{_where(operation)}: HTTP {status}" + (f" ({code})" if code else "")
    if not operation.is_write:
        return TransientError(where, **retry, **data)
    if status == 409:
        if code in _IN_PROGRESS_CODES:
            return ActionInProgressError(
                where, retry_after_seconds=retry_after or DEFAULT_RETRY_AFTER_SECONDS, **data
            )
        return ActionConflictError(where, **data)
    if status in (401, 403, 407):
        # Our credentials, not the business, are wrong; nothing was applied. Failing the step
        # (bounded retries, then a redrivable failure) beats compensating the whole saga.
        return TransientError(where, **retry, **data)
    if status in (408, 425, 429, 503):
        # The service says it did not process the request: timed out receiving it, too
        # early, throttled or shedding load.
        return TransientError(where, **retry, **data)
    if 400 <= status < 500:
        return BusinessRejectedError(where, **data)
    # 500/502/504 (and anything unexpected): the service may have failed after applying it.
    return OutcomeUnknownError(where, **data)


def for_unreadable_reply(operation: Operation, status: int, reason: str) -> StepSagaError:
    """A 2xx whose body we cannot decode: a write did happen, but we cannot tell its result."""
    data = _data(operation, status=status, reason=reason)
    if operation.is_write:
        return OutcomeUnknownError(
            f"{_where(operation)}: HTTP {status} with an unreadable reply ({reason})", **data
        )
    return TransientError(f"{_where(operation)}: unreadable reply ({reason})", **data)


#: What a real HTTP service would have answered for each injected fault.
_FAULT_STATUS = {FaultKind.THROTTLE: (429, "throttled"), FaultKind.REJECT: (422, "rejected")}


def for_fault(operation: Operation, kind: FaultKind) -> StepSagaError | None:
    """The error a real client would see for an injected fault, built by the same mapping as
    real replies; ``None`` for the kinds that raise nothing themselves (``slow`` delays,
    ``crash_after_effect`` ends the process).

    ``timeout_before_effect`` maps like a read timeout after sending — uncertain on a write —
    even though nothing was applied: a client cannot tell it apart from ``lose_response``,
    and treating it as "not applied" would be a guess the real world punishes.
    """
    if kind in _FAULT_STATUS:
        status, code = _FAULT_STATUS[kind]
        body = json.dumps({"error": {"code": code}}).encode()
        error = for_status(operation, status, body, {})
    elif kind in (FaultKind.TIMEOUT_BEFORE_EFFECT, FaultKind.LOSE_RESPONSE):
        error = _no_reply(operation, "ReadTimeout", Dispatch.MAYBE_SENT)
    else:
        return None
    return type(error)(f"{error.message} [simulated {kind}]", **error.data, fault=str(kind))
