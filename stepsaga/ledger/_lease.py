"""A claim's lease ends with the invocation that holds it, as Powertools' idempotency does.

A Lambda invocation cannot outlive its deadline (``context.get_remaining_time_in_millis()``
at the start): once it has passed, the worker is gone and its claim proves nothing. Tying
the lease to that deadline lets the next attempt take over right after a timeout (instead
of waiting out a fixed lease), and keeps a slow invocation with a long timeout from losing
its lease while it still runs. Without a Lambda context (a script, ``Ledger.perform`` in a
test), the lease is ``LedgerPolicy.lease_seconds``.

The handlers' wrapper (``stepsaga._handlers.guard``) registers every invocation's context
with ``invocation_deadline``; the ledger asks ``lease_end``. The deadline is a context
variable, so threads and in-process engines running several invocations at once each see
their own.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timedelta
from typing import Any

from stepsaga._util.clock import Clock

__all__ = ["current_deadline", "invocation_deadline", "lease_end", "remaining_seconds"]

_deadline: ContextVar[datetime | None] = ContextVar("stepsaga_invocation_deadline", default=None)


def remaining_seconds(context: Any) -> float | None:
    """What the Lambda context says is left of the invocation, or None without one."""
    remaining = getattr(context, "get_remaining_time_in_millis", None)
    if not callable(remaining):
        return None
    millis = remaining()
    if isinstance(millis, bool) or not isinstance(millis, int | float) or millis <= 0:
        return None
    return float(millis) / 1000.0


@contextmanager
def invocation_deadline(context: Any, clock: Clock) -> Iterator[datetime | None]:
    """Within the block, claims' leases end at this invocation's deadline."""
    seconds = remaining_seconds(context)
    deadline = clock.now() + timedelta(seconds=seconds) if seconds is not None else None
    token = _deadline.set(deadline)
    try:
        yield deadline
    finally:
        _deadline.reset(token)


def current_deadline() -> datetime | None:
    """The running invocation's deadline, if one was registered."""
    return _deadline.get()


def lease_end(now: datetime, lease: timedelta) -> datetime:
    """When a claim taken ``now`` stops proving ownership: the invocation's deadline when
    there is one (never before ``now``), else ``now + lease``."""
    deadline = _deadline.get()
    if deadline is None:
        return now + lease
    return max(deadline, now)
